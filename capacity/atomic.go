package capacity

import (
	"fmt"
	"io"

	"github.com/spoc-project/spoc/internal/atomicfile"
)

// CreateAtomic creates a file that appears under path only when Close
// succeeds (mode 0644); its Abort discards it.
func CreateAtomic(path string) (*atomicfile.File, error) { return atomicfile.Create(path) }

// writeFileAtomic writes data to path through a temporary file and rename.
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		if _, err := w.Write(data); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	})
}
