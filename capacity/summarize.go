package capacity

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spoc-project/spoc/result"
)

// Summarized is a records file judged again: the summary over the run's
// own window when its sidecar kept it, else over the window the records
// span (the summary says it was inferred).
type Summarized struct {
	Summary *result.Result
	// Provenance is where the records were measured, as their sidecar
	// says; nil without one.
	Provenance *Provenance
	// Truncated is set when the file ends in a cut line (a killed run),
	// which was skipped.
	Truncated bool
}

// Summarize reads the records file at path (plain or gzip-compressed) and
// its RunInfo sidecar, written by Run beside it, and summarizes the
// records against sla. A file without records is an error: a run that
// never started, or the wrong file, not a run that measured nothing.
func Summarize(path string, sla result.SLA, opts ...result.Option) (*Summarized, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open records: %w", err)
	}
	defer f.Close()
	out := &Summarized{}
	var window result.Window
	if inf, err := os.Open(result.RunInfoPath(path)); err == nil {
		info, err := result.ReadRunInfo(inf, result.RunInfoPath(path))
		inf.Close()
		if err != nil {
			return nil, err
		}
		window = info.Window
		var p Provenance
		if json.Unmarshal(info.Provenance, &p) == nil && p.Source != "" {
			out.Provenance = &p
		}
	}
	sum := result.NewSummary(sla, window, opts...)
	records := 0
	out.Truncated, err = result.ReadAll(f, path, func(r *result.Record) error {
		records++
		return sum.Write(r)
	})
	if err != nil {
		return nil, err
	}
	if records == 0 {
		return nil, fmt.Errorf("%s holds no records", path)
	}
	out.Summary = sum.Result()
	return out, nil
}
