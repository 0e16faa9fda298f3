package serve

import (
	"fmt"
	"strings"
	"time"
)

// Stall freezes the engine for Duration from Start (simulated time since
// the server started), as a hung GPU or an NCCL timeout would: no step
// runs, requests wait.
type Stall struct {
	Start    time.Duration `json:"start"`
	Duration time.Duration `json:"duration"`
}

// ParseStall reads a stall as the command line writes it: "START+DURATION"
// with Go durations ("60s+5s").
func ParseStall(s string) (Stall, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "+")
	if !ok {
		return Stall{}, fmt.Errorf("stall %q: want START+DURATION such as 60s+5s", s)
	}
	start, err := time.ParseDuration(a)
	if err != nil || start < 0 {
		return Stall{}, fmt.Errorf("stall %q: start must be a non-negative duration", s)
	}
	d, err := time.ParseDuration(b)
	if err != nil || d <= 0 {
		return Stall{}, fmt.Errorf("stall %q: duration must be positive", s)
	}
	return Stall{Start: start, Duration: d}, nil
}
