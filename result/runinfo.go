package result

import (
	"encoding/json"
	"fmt"
	"io"
)

// RunInfo is what a records file cannot say by itself: the measured window
// the run used (a run with long think times has few records, and a window
// inferred from them is shorter than the real one, inflating throughput)
// and where the run measured. spoc run writes it beside the records
// (RunInfoPath); spoc summarize reads it.
type RunInfo struct {
	// Window is the run's measured window.
	Window Window `json:"window"`
	// Users is the run's concurrency.
	Users int `json:"users"`
	// Provenance says where the numbers were measured (capacity.Provenance
	// as JSON: source, engine, endpoint, server version).
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// RunInfoPath is where the RunInfo of a records file is kept.
func RunInfoPath(records string) string { return records + ".run.json" }

// WriteRunInfo encodes info as indented JSON.
func WriteRunInfo(w io.Writer, info RunInfo) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(info)
}

// ReadRunInfo decodes a RunInfo; name is used in errors.
func ReadRunInfo(r io.Reader, name string) (RunInfo, error) {
	var info RunInfo
	if err := json.NewDecoder(r).Decode(&info); err != nil {
		return RunInfo{}, fmt.Errorf("read %s: %w", name, err)
	}
	if info.Window.Start.IsZero() || !info.Window.End.After(info.Window.Start) {
		return RunInfo{}, fmt.Errorf("read %s: no measured window", name)
	}
	return info, nil
}
