package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseThrottle reads a throttle as the command line writes it:
// "GPU:FACTOR" (for the whole run) or "GPU:FACTOR@START-END" with Go
// durations, END optional ("1:0.6@30s-90s", "0:0.5@2m-").
func ParseThrottle(s string) (Throttle, error) {
	spec, window, hasWindow := strings.Cut(strings.TrimSpace(s), "@")
	g, f, ok := strings.Cut(spec, ":")
	if !ok {
		return Throttle{}, fmt.Errorf("throttle %q: want GPU:FACTOR[@START-END]", s)
	}
	gpu, err := strconv.Atoi(g)
	if err != nil || gpu < 0 {
		return Throttle{}, fmt.Errorf("throttle %q: GPU must be a non-negative index", s)
	}
	factor, err := strconv.ParseFloat(f, 64)
	if err != nil || !(factor > 0 && factor <= 1) {
		return Throttle{}, fmt.Errorf("throttle %q: clock factor must be in (0, 1]", s)
	}
	t := Throttle{GPU: gpu, ClockFactor: factor}
	if hasWindow {
		a, b, ok := strings.Cut(window, "-")
		if !ok {
			return Throttle{}, fmt.Errorf("throttle %q: window must be START-END (END may be empty)", s)
		}
		start, err := time.ParseDuration(a)
		if err != nil || start < 0 {
			return Throttle{}, fmt.Errorf("throttle %q: start must be a non-negative duration such as 30s", s)
		}
		t.Start = start.Seconds()
		if b != "" {
			end, err := time.ParseDuration(b)
			if err != nil || end <= start {
				return Throttle{}, fmt.Errorf("throttle %q: end must be a duration after start", s)
			}
			t.End = end.Seconds()
		}
	}
	return t, nil
}
