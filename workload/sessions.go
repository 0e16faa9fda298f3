package workload

import (
	"math"
	"slices"
	"sync"
)

// SessionStats describes an open-loop run's sessions: how many arrived and
// how many were in progress at once, which an open-loop run measures
// rather than sets. A session is in progress from its first turn's
// scheduled time to its last reply (or failed turn); one still going when
// the window ends counts until the end.
type SessionStats struct {
	// Arrived counts the sessions whose first turn was due before the
	// window's end; Completed those that ended before it.
	Arrived   int `json:"arrived"`
	Completed int `json:"completed"`
	// MeanActive is the time-weighted mean number of sessions in progress
	// over the measured window; PeakActive the most at once over the run.
	MeanActive float64 `json:"mean_active"`
	PeakActive int     `json:"peak_active"`
}

// sessionMeter accumulates SessionStats from the cursors of one schedule,
// which may run on many goroutines.
type sessionMeter struct {
	mu        sync.Mutex
	warm, end float64
	arrived   int
	completed int
	active    int
	// every start and end time, for the peak, which must not depend on
	// the order goroutines report in (16 bytes a session)
	starts, ends []float64
	overlap      float64 // Σ seconds of ended sessions inside the window
	openClipSt   float64 // Σ clipped start of the sessions in progress
}

func newSessionMeter(warm, end float64) *sessionMeter {
	return &sessionMeter{warm: warm, end: end}
}

func (m *sessionMeter) clip(t float64) float64 { return math.Min(math.Max(t, m.warm), m.end) }

func (m *sessionMeter) started(at float64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.arrived++
	m.active++
	m.starts = append(m.starts, at)
	m.openClipSt += m.clip(at)
	m.mu.Unlock()
}

func (m *sessionMeter) ended(began, at float64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.active--
	m.ends = append(m.ends, at)
	if at < m.end {
		m.completed++
	}
	m.openClipSt -= m.clip(began)
	m.overlap += m.clip(at) - m.clip(began)
	m.mu.Unlock()
}

// Sessions returns the open-loop run's session statistics so far, with the
// sessions still in progress counted to the window's end; nil for a
// closed-loop schedule, whose users are its input.
func (s *Schedule) Sessions() *SessionStats {
	m := s.meter
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st := &SessionStats{Arrived: m.arrived, Completed: m.completed, PeakActive: peak(m.starts, m.ends)}
	if w := m.end - m.warm; w > 0 {
		st.MeanActive = (m.overlap + float64(m.active)*m.end - m.openClipSt) / w
	}
	return st
}

// peak is the most intervals in progress at once, an end at the same time
// as a start counted first (a session that ends as another begins does
// not overlap it).
func peak(starts, ends []float64) int {
	s, e := slices.Clone(starts), slices.Clone(ends)
	slices.Sort(s)
	slices.Sort(e)
	n, most, j := 0, 0, 0
	for _, t := range s {
		for j < len(e) && e[j] <= t {
			j++
			n--
		}
		n++
		most = max(most, n)
	}
	return most
}
