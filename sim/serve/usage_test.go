package serve

import (
	"testing"
	"time"
)

// The server counts its own time: up since it started, busy only while a
// request was in flight, and every request it admitted and finished.
func TestServerCountsItsOwnTime(t *testing.T) {
	s, ts := newTestServer(t, func(c *Config) { c.TimeScale = 1000 })
	time.Sleep(150 * time.Millisecond) // idle: up, not busy
	for range 3 {
		streamChat(t, ts.URL, `{"messages":[{"role":"user","content":"hello"}],"max_tokens":20,"ignore_eos":true,"stream":true}`)
	}
	u := s.Usage()
	if u.Requests != 3 || u.Finished != 3 {
		t.Errorf("requests %d finished %d, want 3 and 3", u.Requests, u.Finished)
	}
	if u.UpSeconds < 0.15 {
		t.Errorf("up %.3fs, want at least the 0.15 s slept", u.UpSeconds)
	}
	if !(u.BusySeconds > 0) || u.BusySeconds > u.UpSeconds-0.1 {
		t.Errorf("busy %.3fs of %.3fs up: want some busy time and not the idle 0.15 s", u.BusySeconds, u.UpSeconds)
	}
	if u.Wakeups == 0 || u.LagMaxSeconds < u.LagMeanSeconds {
		t.Errorf("loop wake-ups %d, lag mean %g max %g", u.Wakeups, u.LagMeanSeconds, u.LagMaxSeconds)
	}
}

func TestUsageCounterBusyIntervals(t *testing.T) {
	t0 := time.Unix(1000, 0)
	u := usageCounter{startedAt: t0}
	u.admitted(t0.Add(1 * time.Second))
	u.admitted(t0.Add(2 * time.Second))
	u.left(t0.Add(3*time.Second), true)
	u.left(t0.Add(4*time.Second), false) // idle from 4 s
	u.admitted(t0.Add(6 * time.Second))  // busy again, still in flight at 8 s
	got := u.snapshot(t0.Add(8 * time.Second))
	want := Usage{UpSeconds: 8, BusySeconds: 3 + 2, Requests: 3, Finished: 1}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
