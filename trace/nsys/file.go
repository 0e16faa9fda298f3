package nsys

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spoc-project/spoc/trace"
)

// ErrNoTimeline reports a time window or NVTX range asked of an nsys stats
// summary, which has no timeline to cut.
var ErrNoTimeline = errors.New("an nsys stats summary has no timeline: a time window or NVTX range does not apply")

// ReadFile reads the capture at path whatever its kind: an nsys SQLite export
// (recognised by its header, or by a .sqlite, .nsys-rep or .qdrep name so
// that ReadSQLite can say to export a report first), otherwise an nsys stats
// kernel summary CSV. It is the one place that picks the reader, for the
// CLI's trace analyze and for plan's trace.file alike.
func ReadFile(ctx context.Context, path string, opt Options) (*trace.Profile, error) {
	isDB, err := IsSQLite(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".sqlite", ".nsys-rep", ".qdrep":
		isDB = true
	}
	if isDB {
		return ReadSQLite(ctx, path, opt)
	}
	if opt.Window != (trace.Window{}) || opt.NVTX != "" {
		return nil, fmt.Errorf("read trace %s: %w", path, ErrNoTimeline)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	defer f.Close()
	return ReadStatsCSV(f, path)
}
