package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/spoc-project/spoc/plan"
)

// planEstimate is spoc plan --estimate: the engine time of each fidelity,
// counted on the simulator before anything runs on the engine (the
// engine is started once to time its start-up unless
// plan.engine_startup says how long it takes). What it is doing goes to
// progress (stderr), a line per phase of each fidelity's count: it takes
// seconds to minutes of CPU.
func planEstimate(ctx context.Context, w, progress io.Writer, s plan.Setup, logger *slog.Logger, asJSON bool) error {
	est, err := plan.EstimateEngineTime(ctx, s, plan.Options{Logger: logger, Version: Version, Progress: progress})
	if err != nil {
		return fmt.Errorf("plan --estimate: %w", err)
	}
	if asJSON {
		return writeJSON(w, est)
	}
	return plan.WriteEstimate(w, est)
}

// estimateProgress is where --estimate says what it is doing: stderr,
// unless --quiet.
func estimateProgress(quiet bool, stderr io.Writer) io.Writer {
	if quiet {
		return nil
	}
	return stderr
}
