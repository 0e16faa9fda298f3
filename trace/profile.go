package trace

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AllDevices is the Device of a DeviceProfile that aggregates every GPU, as an
// nsys stats summary does; such a profile has no per-GPU breakdown.
const AllDevices = -1

// KernelStat is one distinct kernel name on one device inside the window.
type KernelStat struct {
	Name string `json:"name"`
	// Count is the number of launches (instances).
	Count int64 `json:"count"`
	// TimeNS is the summed duration of those launches, clipped to the window.
	TimeNS int64 `json:"time_ns"`
	// GraphCount is how many of the launches were CUDA graph nodes.
	GraphCount int64 `json:"graph_count,omitempty"`
}

// DeviceProfile is what one GPU did inside the window.
type DeviceProfile struct {
	// Device is the CUDA device id, or AllDevices.
	Device int `json:"device"`
	// Name is the GPU model when the trace records it.
	Name    string       `json:"name,omitempty"`
	Kernels []KernelStat `json:"kernels"`
	// BusyNS is the union of the device's kernel, memcpy and memset intervals
	// inside the window: time with at least one activity running. Zero when
	// the source cannot tell (a stats summary).
	BusyNS int64 `json:"busy_ns"`
}

// Profile is an aggregated kernel trace: the input of Analyze.
type Profile struct {
	// Source names where the profile came from (a file name).
	Source string `json:"source"`
	// Window is the analysed time range; zero-length when unknown.
	Window  Window          `json:"window"`
	Devices []DeviceProfile `json:"devices"`
	// Warnings are conditions a reader noticed that may bias the breakdown,
	// for example CUDA graphs traced without per-node kernels.
	Warnings []string `json:"warnings,omitempty"`
}

// Window is a half-open time range [StartNS, EndNS) in the trace's own
// nanosecond time base. A zero EndNS means "to the end of the trace" when
// requesting and "unknown" in a Profile.
type Window struct {
	StartNS int64 `json:"start_ns"`
	EndNS   int64 `json:"end_ns"`
	// NVTX is the NVTX range name the window was taken from, if any.
	NVTX string `json:"nvtx,omitempty"`
}

// DurationNS is the window length, or 0 when unknown.
func (w Window) DurationNS() int64 {
	if w.EndNS <= w.StartNS {
		return 0
	}
	return w.EndNS - w.StartNS
}

// ParseWindow parses "start:end", each side a Go duration ("12.5s") or a plain
// integer of nanoseconds, offsets in the trace's time base (as the Nsight
// Systems timeline shows them). Either side may be empty: "30s:" is from 30 s
// to the end, ":10s" from the start to 10 s.
func ParseWindow(s string) (Window, error) {
	lo, hi, ok := strings.Cut(s, ":")
	if !ok {
		return Window{}, fmt.Errorf("window %q: want start:end (for example 10s:40s)", s)
	}
	var w Window
	var err error
	if w.StartNS, err = parseOffset(lo); err != nil {
		return Window{}, fmt.Errorf("window %q: start: %w", s, err)
	}
	if w.EndNS, err = parseOffset(hi); err != nil {
		return Window{}, fmt.Errorf("window %q: end: %w", s, err)
	}
	if w.EndNS != 0 && w.EndNS <= w.StartNS {
		return Window{}, fmt.Errorf("window %q: end must be after start", s)
	}
	return w, nil
}

func parseOffset(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("negative offset %d", n)
		}
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither nanoseconds nor a duration like 1.5s", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("negative offset %s", d)
	}
	return int64(d), nil
}

// Interval is one activity on a device's timeline.
type Interval struct {
	Device  int
	StartNS int64
	EndNS   int64
	Name    string
}

// Aggregate builds a Profile from individual intervals, clipping them to w
// (w.EndNS == 0: no upper bound). It is the in-memory counterpart of the
// readers' SQL aggregation, used for small timelines and to cross-check them.
func Aggregate(source string, intervals []Interval, w Window) Profile {
	type key struct {
		dev  int
		name string
	}
	stats := map[key]*KernelStat{}
	perDev := map[int][]Interval{}
	lo, hi := w.StartNS, w.EndNS
	var minStart, maxEnd int64 = -1, 0
	for _, iv := range intervals {
		s, e := iv.StartNS, iv.EndNS
		if s < lo {
			s = lo
		}
		if hi != 0 && e > hi {
			e = hi
		}
		if e <= s {
			continue
		}
		k := key{iv.Device, iv.Name}
		st := stats[k]
		if st == nil {
			st = &KernelStat{Name: iv.Name}
			stats[k] = st
		}
		st.Count++
		st.TimeNS += e - s
		perDev[iv.Device] = append(perDev[iv.Device], Interval{Device: iv.Device, StartNS: s, EndNS: e})
		if minStart < 0 || s < minStart {
			minStart = s
		}
		maxEnd = max(maxEnd, e)
	}
	p := Profile{Source: source, Window: w}
	if p.Window.EndNS == 0 {
		p.Window.EndNS = maxEnd
		if w.StartNS == 0 && minStart > 0 {
			p.Window.StartNS = minStart
		}
	}
	for dev, ivs := range perDev {
		dp := DeviceProfile{Device: dev, BusyNS: BusyNS(ivs)}
		for k, st := range stats {
			if k.dev == dev {
				dp.Kernels = append(dp.Kernels, *st)
			}
		}
		slices.SortFunc(dp.Kernels, func(a, b KernelStat) int { return strings.Compare(a.Name, b.Name) })
		p.Devices = append(p.Devices, dp)
	}
	slices.SortFunc(p.Devices, func(a, b DeviceProfile) int { return cmp.Compare(a.Device, b.Device) })
	return p
}

// BusyNS returns the length of the union of the intervals: overlapping
// activities (kernels on concurrent streams) count once. It sorts ivs.
func BusyNS(ivs []Interval) int64 {
	slices.SortFunc(ivs, func(a, b Interval) int { return cmp.Compare(a.StartNS, b.StartNS) })
	var busy, curEnd int64
	started := false
	for _, iv := range ivs {
		if iv.EndNS <= iv.StartNS {
			continue
		}
		switch {
		case !started || iv.StartNS >= curEnd:
			busy += iv.EndNS - iv.StartNS
			curEnd = iv.EndNS
			started = true
		case iv.EndNS > curEnd:
			busy += iv.EndNS - curEnd
			curEnd = iv.EndNS
		}
	}
	return busy
}
