package nsys

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/trace"
)

func TestReadFilePicksTheReader(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	csv := filepath.Join(dir, "kern_sum.csv")
	if err := os.WriteFile(csv, []byte(statsCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	db := gptOSSFixture(t)
	// An export under a name without .sqlite is recognised by its header.
	renamed := filepath.Join(dir, "export.bin")
	data, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(renamed, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := filepath.Join(dir, "capture.nsys-rep")
	if err := os.WriteFile(rep, []byte("not a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		opt        Options
		wantErr    string
		wantIs     error
	}{
		{name: "stats csv", path: csv},
		{name: "sqlite export", path: db},
		{name: "export by header", path: renamed},
		{name: "window on csv", path: csv, opt: Options{Window: trace.Window{StartNS: 1}}, wantIs: ErrNoTimeline},
		{name: "nvtx on csv", path: csv, opt: Options{NVTX: "steady"}, wantIs: ErrNoTimeline},
		{name: "unexported report", path: rep, wantIs: ErrNotExport, wantErr: "nsys export --type sqlite"},
		{name: "missing", path: filepath.Join(dir, "none.sqlite"), wantErr: "none.sqlite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ReadFile(ctx, tc.path, tc.opt)
			if tc.wantErr == "" && tc.wantIs == nil {
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Devices) == 0 {
					t.Fatalf("no kernels read from %s", tc.path)
				}
				return
			}
			if err == nil {
				t.Fatalf("read without error, want %v %q", tc.wantIs, tc.wantErr)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %v, want %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not mention %q", err, tc.wantErr)
			}
		})
	}
}
