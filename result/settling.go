package result

import (
	"fmt"
	"math"
	"time"
)

// A closed-loop run that is still settling when its measured window opens
// (the prefix cache empty, every user's first prompt a full prefill, the
// users still in step after the ramp) completes fewer requests in the
// window's first half than in its second: each user waits longer for its
// first answers, so it sends its next turn later. A run past its capacity
// differs only in latency (its queue grows, TTFT rises through the window)
// while the server, saturated, completes as many requests in each half. So
// the two halves' request counts tell a start-up transient that the warm-up
// did not cover from both a steady run and an overloaded one.
const (
	// SettlingRatio is the first half's share of the second half's
	// requests below which a window is flagged as still settling, when
	// the difference is also beyond noise (SettlingSigmas). The halves of
	// a steady window differ by far less (5-15 % measured live).
	SettlingRatio = 0.7
	// SettlingSigmas: the second half's excess must exceed this many
	// standard deviations of a difference of two Poisson counts,
	// sqrt(first + second), so a short window's few requests do not flag it.
	SettlingSigmas = 3
	// SettlingMinRequests is the fewest requests the second half needs for
	// the comparison to mean anything.
	SettlingMinRequests = 20
	// slotWidth is the resolution of the split (records are counted by
	// the slot they were scheduled in).
	slotWidth = 100 * time.Millisecond
)

// Half is one half of the measured window: the requests scheduled in it,
// and the mean TTFT of those that succeeded.
type Half struct {
	Requests   int64   `json:"requests"`
	OK         int64   `json:"ok"`
	TTFTMeanMs float64 `json:"ttft_mean_ms"`
}

// SettlingReport compares the measured window's halves (by the time each
// request was scheduled). Flagged says the window was still settling: its
// first half held fewer than SettlingRatio of the second half's requests,
// by more than SettlingSigmas standard deviations,
// so the warm-up did not cover the run's start-up transient and the window's
// percentiles overstate the steady state's. Judged is false when the window
// was inferred from the records or its second half held fewer than
// SettlingMinRequests.
type SettlingReport struct {
	Judged     bool     `json:"judged"`
	FirstHalf  Half     `json:"first_half"`
	SecondHalf Half     `json:"second_half"`
	Ratio      float64  `json:"ratio"`
	Flagged    bool     `json:"flagged"`
	Reasons    []string `json:"reasons,omitempty"`
}

type slot struct {
	requests, ok, ttftN int64
	ttft                time.Duration
}

// slot counts counted record r by the slot it was scheduled in.
func (s *Summary) slot(r *Record) {
	if s.slots == nil {
		s.slots = map[int64]*slot{}
	}
	k := r.Scheduled.UnixNano() / int64(slotWidth)
	sl := s.slots[k]
	if sl == nil {
		sl = &slot{}
		s.slots[k] = sl
	}
	sl.requests++
	if r.Status == StatusOK {
		sl.ok++
		if t, ok := r.TTFT(); ok {
			sl.ttftN++
			sl.ttft += t
		}
	}
}

// settlingLocked splits the slots at the middle of the window [start, end).
func (s *Summary) settlingLocked(start, end time.Time, inferred bool) SettlingReport {
	var r SettlingReport
	if inferred || !end.After(start) {
		return r
	}
	// the slot nearest the middle starts the second half
	mid := (start.Add(end.Sub(start)/2).UnixNano() + int64(slotWidth)/2) / int64(slotWidth)
	var ttft [2]time.Duration
	var n [2]int64
	hs := [2]*Half{&r.FirstHalf, &r.SecondHalf}
	for k, sl := range s.slots {
		i := 0
		if k >= mid {
			i = 1
		}
		hs[i].Requests += sl.requests
		hs[i].OK += sl.ok
		ttft[i] += sl.ttft
		n[i] += sl.ttftN
	}
	for i, h := range hs {
		if n[i] > 0 {
			h.TTFTMeanMs = ms(ttft[i] / time.Duration(n[i]))
		}
	}
	if r.SecondHalf.Requests < SettlingMinRequests {
		return r
	}
	r.Judged = true
	r.Ratio = float64(r.FirstHalf.Requests) / float64(r.SecondHalf.Requests)
	excess := float64(r.SecondHalf.Requests - r.FirstHalf.Requests)
	if r.Ratio < SettlingRatio && excess > SettlingSigmas*math.Sqrt(float64(r.FirstHalf.Requests+r.SecondHalf.Requests)) {
		r.Flagged = true
		r.Reasons = append(r.Reasons, fmt.Sprintf("the measured window's first half held %d requests and its second %d (%.0f %%; mean TTFT %.0f ms, then %.0f ms): the run was still settling when the window opened, so its percentiles overstate the steady state's; lengthen the warm-up (run.warmup, --warmup; sweep.warmup in a sweep) or start users fresh (run.mid_session_start: false) when their joined histories are long",
			r.FirstHalf.Requests, r.SecondHalf.Requests, 100*r.Ratio, r.FirstHalf.TTFTMeanMs, r.SecondHalf.TTFTMeanMs))
	}
	return r
}
