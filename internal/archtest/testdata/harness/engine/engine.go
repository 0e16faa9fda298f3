// Package engine imports the test harness in its own code: rejected.
package engine

import (
	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

var _ = testtool.Find
