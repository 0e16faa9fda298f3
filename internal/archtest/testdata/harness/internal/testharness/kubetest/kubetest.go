// Package kubetest is part of the harness: it may import the rest of it.
package kubetest

import "github.com/spoc-project/spoc/internal/testharness/testtool"

var _ = testtool.Missing
