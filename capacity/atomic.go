package capacity

import (
	"github.com/spoc-project/spoc/internal/atomicfile"
)

// CreateAtomic creates a file that appears under path only when Close
// succeeds (mode 0644); its Abort discards it.
func CreateAtomic(path string) (*atomicfile.File, error) { return atomicfile.Create(path) }
