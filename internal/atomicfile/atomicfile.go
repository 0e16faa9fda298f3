// Package atomicfile writes output files so that no reader, and no
// interrupted run, ever leaves half a file under the final name: data goes to
// a temporary file beside the destination, which Commit syncs and renames
// into place and Abort removes.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File is an output file being written.
type File struct {
	*os.File
	dest string
	done bool
}

// Create starts writing dest. The file gets mode 0644, like os.Create's.
func Create(dest string) (*File, error) {
	// Renaming over a device, a pipe or a folder would replace it (as root,
	// --out /dev/stdout would replace the machine's /dev/stdout link): an
	// output is a regular file or a new name.
	if fi, err := os.Stat(dest); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("create %s: not a regular file (%s); name a file to write", dest, fi.Mode().Type())
	}
	f, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", dest, err)
	}
	// CreateTemp makes 0600 files; outputs are ordinary files others read.
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("create %s: %w", dest, err)
	}
	return &File{File: f, dest: dest}, nil
}

// Commit syncs, closes and renames the file into place.
func (a *File) Commit() error {
	if a.done {
		return errors.New("commit " + a.dest + ": already done")
	}
	a.done = true
	err := a.Sync()
	if cerr := a.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(a.Name(), a.dest)
	}
	if err != nil {
		os.Remove(a.Name())
		return fmt.Errorf("write %s: %w", a.dest, err)
	}
	return nil
}

// Close commits, so a File is an io.WriteCloser whose Close publishes it.
func (a *File) Close() error { return a.Commit() }

// Abort removes the temporary file unless Commit ran; dest is untouched.
func (a *File) Abort() {
	if !a.done {
		a.done = true
		a.File.Close()
		os.Remove(a.Name())
	}
}

// Write writes dest with fn; on any error nothing appears under dest.
func Write(dest string, fn func(io.Writer) error) error {
	f, err := Create(dest)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Abort()
		return fmt.Errorf("write %s: %w", dest, err)
	}
	return f.Commit()
}
