package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spoc-project/spoc/internal/atomicfile"
	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/result"
)

// RunOptions are what one run needs besides its Setup.
type RunOptions struct {
	// Records names the records file (one JSON line per request); empty
	// writes none. A regular file (or a new name) is written under a
	// temporary name beside it and renamed into place when the run ends
	// with records, so that a failed preflight leaves an existing file as
	// it was and no reader ever sees half of one; its RunInfo sidecar
	// (result.RunInfoPath) is replaced or removed with it. A path that
	// exists and is not a regular file (a pipe, /dev/null) is written in
	// place and gets no sidecar.
	Records string
	// Progress receives the live client's counters about once a second
	// while a run over HTTP goes on.
	Progress func(loadgen.Progress)
	Logger   *slog.Logger
}

// RunResult is one run: its evaluation and what became of its records.
type RunResult struct {
	*Evaluation
	// Kept is set when the records path holds this run's records (false
	// for a run interrupted before its first record: the path is as it
	// was).
	Kept bool
	// NoRunInfo says why no sidecar was written beside the records of a
	// completed run ("" when one was, or when there are no records).
	NoRunInfo string
}

// ErrBadSetup marks a run that could not start because its Setup does not
// build into an evaluator (no launcher, a workload that does not build):
// bad configuration, not a failed run.
var ErrBadSetup = errors.New("bad setup")

// Run is the run use case of spoc run and spoc sim run: the Setup's
// configured flags on its launcher, at the run window, with the records
// file's lifecycle. On Ctrl-C it returns what was measured (Interrupted set)
// with ctx's error, and keeps the records written so far. A run that fails
// after writing records keeps them too, and says so in its error; one that
// wrote none (a failed preflight) leaves the records path as it was.
func Run(ctx context.Context, s Setup, o RunOptions) (*RunResult, error) {
	ev, err := NewEvaluator(s, o.Logger)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSetup, err)
	}
	defer ev.Close(context.WithoutCancel(ctx))
	rf, err := createRecords(o.Records)
	if err != nil {
		return nil, err
	}
	res, runErr := ev.Evaluate(ctx, nil, s.Windows.Run, Outputs{Records: rf.writer(), Progress: o.Progress})
	interrupted := runErr != nil && res != nil && res.Interrupted
	if runErr != nil && !interrupted {
		if kept, err := rf.finish(false); err != nil {
			return nil, errors.Join(runErr, err)
		} else if kept {
			return nil, fmt.Errorf("%w (the records written before it are in %s)", runErr, o.Records)
		}
		return nil, runErr
	}
	kept, err := rf.finish(!interrupted)
	if err != nil {
		return nil, err
	}
	out := &RunResult{Evaluation: res, Kept: kept}
	if interrupted || o.Records == "" {
		return out, runErr
	}
	if !rf.regular {
		out.NoRunInfo = "not a regular file"
		return out, nil
	}
	// the window and provenance travel with the records, for summarize
	prov, err := json.Marshal(res.Provenance)
	if err != nil {
		return nil, err
	}
	info := result.RunInfo{Window: result.Window{Start: res.Summary.Window.Start, End: res.Summary.Window.End}, Users: s.Windows.Run.Users, Provenance: prov}
	if err := atomicfile.Write(result.RunInfoPath(o.Records), func(w io.Writer) error { return result.WriteRunInfo(w, info) }); err != nil {
		return nil, fmt.Errorf("records %s: %w", o.Records, err)
	}
	return out, nil
}

// recordsFile is a run's records file while the run goes on.
type recordsFile struct {
	path    string
	regular bool
	tmp     *atomicfile.File // a regular file's, renamed into place by finish
	direct  *os.File         // a pipe's or device's, written in place
	wrote   countingWriter
}

// createRecords opens path for a run's records (nil for no path): now, so
// that a folder that cannot be written fails the run before it starts.
func createRecords(path string) (*recordsFile, error) {
	if path == "" {
		return nil, nil
	}
	rf := &recordsFile{path: path, regular: true}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("open records file: %w", err)
		}
		rf.regular, rf.direct, rf.wrote.w = false, f, f
		return rf, nil
	}
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("records file %s: the folder %s does not exist (create it, or write the records elsewhere)", path, dir)
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create records file: %w", err)
	}
	rf.tmp, rf.wrote.w = f, f
	return rf, nil
}

// writer is where the evaluation writes records (nil for no file).
func (rf *recordsFile) writer() io.Writer {
	if rf == nil {
		return nil
	}
	return &rf.wrote
}

// finish ends the records file: a regular file's records replace the path
// when the run completed or wrote any, the previous sidecar removed first
// (it describes another run); otherwise the temporary file is dropped and
// the path left as it was. It reports whether the records were kept.
func (rf *recordsFile) finish(completed bool) (kept bool, err error) {
	if rf == nil {
		return false, nil
	}
	if !rf.regular {
		if err := rf.direct.Close(); err != nil {
			return false, fmt.Errorf("records %s: %w", rf.path, err)
		}
		return rf.wrote.n > 0, nil
	}
	if !completed && rf.wrote.n == 0 {
		rf.tmp.Abort()
		return false, nil
	}
	if err := os.Remove(result.RunInfoPath(rf.path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		rf.tmp.Abort()
		return false, fmt.Errorf("records %s: remove the previous run's sidecar: %w", rf.path, err)
	}
	if err := rf.tmp.Commit(); err != nil {
		return false, fmt.Errorf("records %s: %w", rf.path, err)
	}
	return true, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
