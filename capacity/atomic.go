package capacity

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// atomicFile is written under a temporary name and renamed into place on a
// successful Close, so an interrupted plan never leaves a half-written file
// under the final name.
type atomicFile struct {
	*os.File
	path string
}

func newAtomicFile(path string) (*atomicFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &atomicFile{File: f, path: path}, nil
}

// Close syncs and renames the file into place; on any error the temporary
// file is removed.
func (a *atomicFile) Close() error {
	err := a.File.Sync()
	if cerr := a.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(a.Name(), a.path)
	}
	if err != nil {
		os.Remove(a.Name())
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return nil
}

// writeFileAtomic writes data to path through a temporary file and rename.
func writeFileAtomic(path string, data []byte) error {
	f, err := newAtomicFile(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.File.Close()
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// CreateAtomic creates a file that appears under path only when Close
// succeeds.
func CreateAtomic(path string) (io.WriteCloser, error) { return newAtomicFile(path) }
