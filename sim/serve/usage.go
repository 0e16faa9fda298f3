package serve

import (
	"fmt"
	"time"
)

// Usage is what the server counts of its own time, independently of any
// client: how long it has been up, how long it had at least one request in
// flight, how many requests it finished, and how late its engine loop woke
// up (a loaded machine makes a time-scaled server late, which a client sees
// as slower GPUs). A planner's count of engine-seconds is checked against
// UpSeconds; a run whose loop lag is a sizeable part of a step is not a
// faithful measurement of the simulated GPUs.
type Usage struct {
	// UpSeconds is wall-clock time since the server started.
	UpSeconds float64 `json:"up_seconds"`
	// BusySeconds is wall-clock time with at least one request in flight.
	BusySeconds float64 `json:"busy_seconds"`
	// Requests counts requests admitted; Finished those that completed.
	Requests int64 `json:"requests"`
	Finished int64 `json:"finished"`
	// Wakeups counts the engine loop's timed wake-ups; LagMeanSeconds and
	// LagMaxSeconds are how late they were on the wall clock.
	Wakeups        int64   `json:"wakeups"`
	LagMeanSeconds float64 `json:"lag_mean_seconds"`
	LagMaxSeconds  float64 `json:"lag_max_seconds"`
}

// String is the one-line form the CLI logs at shutdown.
func (u Usage) String() string {
	return fmt.Sprintf("up %.1fs, busy %.1fs, %d requests (%d finished), loop lag mean %.1fms max %.1fms over %d wake-ups",
		u.UpSeconds, u.BusySeconds, u.Requests, u.Finished, 1000*u.LagMeanSeconds, 1000*u.LagMaxSeconds, u.Wakeups)
}

// usageCounter accumulates Usage; the server updates it under s.mu.
type usageCounter struct {
	busy      time.Duration
	busyFrom  time.Time // zero: idle
	requests  int64
	finished  int64
	wakeups   int64
	lagSum    time.Duration
	lagMax    time.Duration
	inFlight  int
	startedAt time.Time
}

// admitted counts a request entering the server.
func (u *usageCounter) admitted(now time.Time) {
	u.requests++
	if u.inFlight == 0 {
		u.busyFrom = now
	}
	u.inFlight++
}

// left counts a request leaving (finished or abandoned).
func (u *usageCounter) left(now time.Time, finished bool) {
	if finished {
		u.finished++
	}
	if u.inFlight == 0 {
		return
	}
	u.inFlight--
	if u.inFlight == 0 {
		u.busy += now.Sub(u.busyFrom)
		u.busyFrom = time.Time{}
	}
}

// woke records a timed wake-up that was due at due.
func (u *usageCounter) woke(now, due time.Time) {
	lag := max(now.Sub(due), 0)
	u.wakeups++
	u.lagSum += lag
	u.lagMax = max(u.lagMax, lag)
}

func (u *usageCounter) snapshot(now time.Time) Usage {
	busy := u.busy
	if u.inFlight > 0 {
		busy += now.Sub(u.busyFrom)
	}
	out := Usage{UpSeconds: now.Sub(u.startedAt).Seconds(), BusySeconds: busy.Seconds(),
		Requests: u.requests, Finished: u.finished, Wakeups: u.wakeups, LagMaxSeconds: u.lagMax.Seconds()}
	if u.wakeups > 0 {
		out.LagMeanSeconds = u.lagSum.Seconds() / float64(u.wakeups)
	}
	return out
}

// Usage returns the server's own count of its time so far.
func (s *Server) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage.snapshot(time.Now())
}
