package engine

import "github.com/spoc-project/spoc/internal/testharness/kubetest"

// Tests may.
var _ = kubetest.Need
