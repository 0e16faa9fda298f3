package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// outDirs remembers which folders existed under a verb's output folder
// before it ran, so that a failed run removes the empty folders it created
// and nothing that was there before (spoc run does the same for its
// records file). Files a failed run wrote (a server's log its error
// quotes, a study a rerun resumes) are kept.
type outDirs struct {
	root    string
	existed map[string]bool // folders under root before the run; nil: root did not exist
}

// snapshotOutDirs records the folders under root.
func snapshotOutDirs(root string) outDirs {
	o := outDirs{root: root}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return o
	}
	o.existed = map[string]bool{}
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			o.existed[path] = true
		}
		return nil
	})
	return o
}

// removeCreatedEmpty removes, deepest first, every folder under root that
// did not exist at the snapshot and is empty now (root itself included
// when the run created it). It reports whether the run created root and
// whether it is gone.
func (o outDirs) removeCreatedEmpty() (rootCreated, rootRemoved bool) {
	var created []string
	_ = filepath.WalkDir(o.root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && !o.existed[path] {
			created = append(created, path)
		}
		return nil
	})
	// deepest first: a folder is empty once its empty children are gone
	sort.Slice(created, func(i, j int) bool { return len(created[i]) > len(created[j]) })
	for _, dir := range created {
		_ = os.Remove(dir) // fails, as it should, on a folder that is not empty
	}
	_, err := os.Stat(o.root)
	return o.existed == nil, o.existed == nil && errors.Is(err, fs.ErrNotExist)
}
