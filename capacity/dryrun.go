package capacity

import (
	"strings"
	"sync"

	"github.com/spoc-project/spoc/vllm"
)

// WouldUse is what the virtual evaluations of an Evaluator would have cost
// on a live engine: the runs, the servers a live Evaluator would have
// started (one per contiguous flag set, as server reuse does), and the
// wall-clock seconds of the runs' windows (warm-up and measured window: a
// live run ends when its measured window does, and the ramp lies within
// the warm-up). A plan run on the simulator counts the control flow of the same
// plan on a real deployment this way: spoc plan --estimate.
type WouldUse struct {
	Runs          int     `json:"runs"`
	Starts        int     `json:"starts"`
	WindowSeconds float64 `json:"window_seconds"`
}

// dryCount accumulates WouldUse; its own lock, since virtual evaluations
// may run concurrently (a parallel study).
type dryCount struct {
	mu  sync.Mutex
	key string
	u   WouldUse
}

func (d *dryCount) add(params map[string]any, load Load) {
	flags, err := vllm.Flags(params)
	key := strings.Join(flags, " ")
	if err != nil {
		key = "invalid"
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.u.Runs == 0 || key != d.key {
		d.u.Starts++
		d.key = key
	}
	d.u.Runs++
	d.u.WindowSeconds += (max(load.Ramp, load.Warmup) + load.Duration).Seconds()
}

// WouldUse returns the live cost of the virtual evaluations so far (zero
// for an Evaluator on a live engine: Usage counts those).
func (e *Evaluator) WouldUse() WouldUse {
	e.dry.mu.Lock()
	defer e.dry.mu.Unlock()
	return e.dry.u
}
