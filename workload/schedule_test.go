package workload_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoc-project/spoc/workload"
)

// turnsSource gives every session Turns turns; turn i thinks (i+1)·Think.
// First is the index of a session's first turn (a mid-session start has
// First > 0). It counts the sessions it was asked for.
type turnsSource struct {
	Turns int
	Think time.Duration
	First int
	asked *atomic.Int64
}

func (s turnsSource) Session(user, n int) (*workload.Script, error) {
	if s.asked != nil {
		s.asked.Add(1)
	}
	sc := &workload.Script{User: user, Session: n, Profile: "P0"}
	for i := s.First; i < s.Turns; i++ {
		sc.Turns = append(sc.Turns, workload.Turn{Index: i, ThinkTime: time.Duration(i+1) * s.Think})
	}
	return sc, nil
}

func newSchedule(t *testing.T, src workload.Source, o workload.ScheduleOptions) *workload.Schedule {
	t.Helper()
	s, err := workload.NewSchedule(src, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// next calls Next and fails unless it returns a turn.
func next(t *testing.T, c *workload.Cursor) workload.ScheduledTurn {
	t.Helper()
	st, ok, err := c.Next()
	if err != nil || !ok {
		t.Fatalf("Next: ok %v, err %v", ok, err)
	}
	return st
}

func TestScheduleStartStagger(t *testing.T) {
	for _, tc := range []struct {
		users int
		ramp  time.Duration
		want  []float64
	}{
		{1, 10 * time.Second, []float64{0}}, // one user starts at once, whatever the ramp
		{4, 2 * time.Second, []float64{0, 0.5, 1, 1.5}},
		{3, 0, []float64{0, 0, 0}},
		{3, time.Second, []float64{0, 1.0 / 3, 2.0 / 3}},
	} {
		t.Run(fmt.Sprintf("%d users over %v", tc.users, tc.ramp), func(t *testing.T) {
			s := newSchedule(t, turnsSource{Turns: 1}, workload.ScheduleOptions{Users: tc.users, Ramp: tc.ramp, Duration: time.Hour})
			for u, want := range tc.want {
				if got := s.Start(u); math.Abs(got-want) > 1e-12 {
					t.Errorf("user %d starts at %v s, want %v", u, got, want)
				}
				c := s.User(u)
				if at := next(t, &c).At; at != s.Start(u) {
					t.Errorf("user %d: first turn due at %v, Start says %v", u, at, s.Start(u))
				}
				// The wall-clock runner's slot: within a nanosecond of Ramp·u/Users.
				slot := time.Duration(int64(tc.ramp) * int64(u) / int64(tc.users))
				if d := workload.Offset(s.Start(u)) - slot; d < -1 || d > 1 {
					t.Errorf("user %d: offset %v, integer slot %v", u, workload.Offset(s.Start(u)), slot)
				}
			}
		})
	}
}

func TestScheduleThinkTimeScale(t *testing.T) {
	for _, tc := range []struct {
		scale float64
		want  float64 // due time of turn 1 after turn 0 (think 4 s) completed at 10 s
	}{
		{1, 14},
		{0.5, 12},
		{2, 18},
		{0, 10}, // back to back
	} {
		t.Run(fmt.Sprint(tc.scale), func(t *testing.T) {
			s := newSchedule(t, turnsSource{Turns: 3, Think: 4 * time.Second}, workload.ScheduleOptions{Users: 1, Duration: time.Hour, ThinkTimeScale: tc.scale})
			c := s.User(0)
			next(t, &c)
			c.Done(10, true)
			st := next(t, &c)
			if st.At != tc.want || st.Turn.Index != 1 || st.NewSession {
				t.Errorf("turn %d (new session %v) due at %v, want turn 1 at %v", st.Turn.Index, st.NewSession, st.At, tc.want)
			}
		})
	}
}

func TestScheduleSessionRollOver(t *testing.T) {
	// Two turns a session, thinking 10 s then 20 s; every reply takes 1 s.
	// The last turn's think time separates the sessions.
	s := newSchedule(t, turnsSource{Turns: 2, Think: 10 * time.Second}, workload.ScheduleOptions{Users: 2, Ramp: 4 * time.Second, Duration: time.Hour, ThinkTimeScale: 1})
	type step struct {
		session, turn int
		newSession    bool
		at            float64
	}
	want := []step{
		{0, 0, true, 2}, {0, 1, false, 13}, // user 1's ramp slot is 2 s
		{1, 0, true, 34}, {1, 1, false, 45},
		{2, 0, true, 66},
	}
	c := s.User(1)
	for i, w := range want {
		st := next(t, &c)
		got := step{st.Session, st.Turn.Index, st.NewSession, st.At}
		if got != w {
			t.Fatalf("step %d: %+v, want %+v", i, got, w)
		}
		if st.Script.Session != st.Session || st.Turn != &st.Script.Turns[st.Turn.Index] {
			t.Fatalf("step %d: turn is not the script's", i)
		}
		c.Done(st.At+1, true)
	}
}

func TestScheduleFailureAbandonsSession(t *testing.T) {
	s := newSchedule(t, turnsSource{Turns: 3, Think: time.Second}, workload.ScheduleOptions{Users: 1, Duration: time.Hour, ThinkTimeScale: 1})
	c := s.User(0)
	next(t, &c)
	c.Done(1, true)
	if st := next(t, &c); st.Turn.Index != 1 || st.At != 2 {
		t.Fatalf("turn %d at %v, want turn 1 at 2 s", st.Turn.Index, st.At)
	}
	c.Done(3.5, false) // turn 1 (think 2 s) failed: turn 2 is never sent
	st := next(t, &c)
	if st.Session != 1 || st.Turn.Index != 0 || !st.NewSession || st.At != 5.5 {
		t.Fatalf("after a failure: session %d turn %d new %v at %v, want session 1 turn 0 at 5.5 s (the failed turn's think time)",
			st.Session, st.Turn.Index, st.NewSession, st.At)
	}
}

func TestScheduleMidSessionStart(t *testing.T) {
	// A source joining sessions in progress starts at a later turn; the
	// schedule follows the script as given.
	s := newSchedule(t, turnsSource{Turns: 4, First: 2, Think: time.Second}, workload.ScheduleOptions{Users: 1, Duration: time.Hour, ThinkTimeScale: 1})
	c := s.User(0)
	if st := next(t, &c); st.Turn.Index != 2 || !st.NewSession {
		t.Fatalf("first turn %d (new session %v), want the script's first, turn 2", st.Turn.Index, st.NewSession)
	}
	c.Done(0, true)
	if st := next(t, &c); st.Turn.Index != 3 || st.At != 3 {
		t.Fatalf("turn %d at %v, want turn 3 after its predecessor's 3 s think", st.Turn.Index, st.At)
	}
}

func TestScheduleWindows(t *testing.T) {
	// Warm-up 10 s, measured window [10 s, 40 s); one turn a session,
	// thinking 5 s.
	o := workload.ScheduleOptions{Users: 1, Warmup: 10 * time.Second, Duration: 30 * time.Second, ThinkTimeScale: 1}
	for _, tc := range []struct {
		doneAt float64 // completion of the first turn (due at 0 s, warm-up)
		sent   bool    // whether the next turn, due doneAt+5, is sent
		warmup bool
	}{
		{4, true, true},
		{5, true, false}, // due exactly at the window's start: measured
		{34.5, true, false},
		{35, false, false}, // due exactly at the end: the user stops
		{50, false, false},
	} {
		t.Run(fmt.Sprint(tc.doneAt), func(t *testing.T) {
			var asked atomic.Int64
			s := newSchedule(t, turnsSource{Turns: 1, Think: 5 * time.Second, asked: &asked}, o)
			if m, e := s.Window(); m != 10 || e != 40 {
				t.Fatalf("window [%v, %v), want [10, 40)", m, e)
			}
			c := s.User(0)
			if st := next(t, &c); !st.Warmup {
				t.Fatal("a turn at 0 s is not flagged warm-up")
			}
			c.Done(tc.doneAt, true)
			at, due := c.Due()
			st, ok, err := c.Next()
			if err != nil || ok != tc.sent || due != tc.sent || at != tc.doneAt+5 {
				t.Fatalf("Due %v %v, Next ok %v err %v; want %v at %v", at, due, ok, err, tc.sent, tc.doneAt+5)
			}
			if !ok {
				if asked.Load() != 1 {
					t.Errorf("the source was asked for %d sessions; a stopped user needs no next one", asked.Load())
				}
				if _, again, _ := c.Next(); again {
					t.Error("a stopped user started again")
				}
				return
			}
			if st.Warmup != tc.warmup {
				t.Errorf("turn at %v s: warm-up %v, want %v", st.At, st.Warmup, tc.warmup)
			}
		})
	}
}

func TestScheduleUserStartingAfterEnd(t *testing.T) {
	var asked atomic.Int64
	// 10 users over 100 s, 20 s run: users 2.. start at or after the end.
	s := newSchedule(t, turnsSource{Turns: 1, asked: &asked}, workload.ScheduleOptions{Users: 10, Ramp: 100 * time.Second, Duration: 20 * time.Second})
	for u := range 10 {
		c := s.User(u)
		_, ok, err := c.Next()
		if err != nil || ok != (u < 2) {
			t.Errorf("user %d (slot %v s): ok %v err %v", u, s.Start(u), ok, err)
		}
	}
	if asked.Load() != 2 {
		t.Errorf("source asked %d times, want 2 (only users that start)", asked.Load())
	}
}

type errSource struct{ err error }

func (s errSource) Session(user, n int) (*workload.Script, error) {
	if s.err != nil {
		return nil, s.err
	}
	return &workload.Script{User: user, Session: n}, nil
}

func TestScheduleSourceErrors(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		src  workload.Source
		want string
	}{
		{errSource{err: boom}, "user 1 session 0: boom"},
		{errSource{}, "user 1 session 0: script has no turns"},
	} {
		s := newSchedule(t, tc.src, workload.ScheduleOptions{Users: 2, Duration: time.Second})
		c := s.User(1)
		if _, ok, err := c.Next(); ok || err == nil || err.Error() != tc.want {
			t.Errorf("ok %v err %v, want %q", ok, err, tc.want)
		}
	}
}

func TestScheduleOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    workload.ScheduleOptions
		want string // "" when valid
	}{
		{workload.ScheduleOptions{Users: 1, Duration: 1}, ""},
		{workload.ScheduleOptions{Users: 0, Duration: 1}, "users must be at least 1, got 0"},
		{workload.ScheduleOptions{Users: 1}, "duration must be positive"},
		{workload.ScheduleOptions{Users: 1, Duration: 1, Ramp: -1}, "must not be negative"},
		{workload.ScheduleOptions{Users: 1, Duration: 1, Warmup: -1}, "must not be negative"},
		{workload.ScheduleOptions{Users: 1, Duration: 1, ThinkTimeScale: -0.5}, "must not be negative"},
	} {
		err := tc.o.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
		if _, nerr := workload.NewSchedule(turnsSource{Turns: 1}, tc.o); (nerr == nil) != (err == nil) {
			t.Errorf("%+v: NewSchedule error %v, Validate %v", tc.o, nerr, err)
		}
	}
}

func TestCursorMisusePanics(t *testing.T) {
	s := newSchedule(t, turnsSource{Turns: 2}, workload.ScheduleOptions{Users: 1, Duration: time.Second})
	panics := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	c := s.User(0)
	panics("Done before Next", func() { c.Done(0, true) })
	next(t, &c)
	panics("Next twice", func() { _, _, _ = c.Next() })
	panics("User out of range", func() { s.User(1) })
}

func TestOffset(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 400 * time.Millisecond, 3 * time.Minute, 13*time.Hour + 7} {
		if got := workload.Offset(d.Seconds()); got != d {
			t.Errorf("Offset(%v s) = %v, want %v", d.Seconds(), got, d)
		}
	}
}

// TestScheduleStartsUsersAtARandomPhase: with Phase set the starts spread
// over max(Ramp, Phase), each user at a point of its own slot drawn from
// PhaseSeed — the same for the same seed, another for another seed, as
// even as the ramp's slots — and without it the slots are the ramp's.
func TestScheduleStartsUsersAtARandomPhase(t *testing.T) {
	src := turnsSource{Turns: 1, Think: time.Second}
	const users = 200
	mk := func(ramp, phase time.Duration, seed uint64) *workload.Schedule {
		s, err := workload.NewSchedule(src, workload.ScheduleOptions{Users: users, Ramp: ramp, Duration: time.Minute, Phase: phase, PhaseSeed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		ramp, phase time.Duration
		span        float64
	}{{time.Second, 30 * time.Second, 30}, {time.Minute, 20 * time.Second, 60}} {
		plain, a, again, other := mk(c.ramp, 0, 1), mk(c.ramp, c.phase, 1), mk(c.ramp, c.phase, 1), mk(c.ramp, c.phase, 2)
		same, offSlot := 0, 0.0
		for u := range users {
			if got, want := plain.Start(u), c.ramp.Seconds()*float64(u)/users; got != want {
				t.Fatalf("user %d without a phase starts at %v, want its ramp slot %v", u, got, want)
			}
			width := c.span / users
			at := a.Start(u)
			if at < width*float64(u) || at >= width*float64(u+1) {
				t.Fatalf("ramp %v, phase %v: user %d starts at %.3f s, outside its slot [%.3f, %.3f)", c.ramp, c.phase, u, at, width*float64(u), width*float64(u+1))
			}
			if at != again.Start(u) {
				t.Fatalf("user %d: the same seed gave two starts", u)
			}
			if at == other.Start(u) {
				same++
			}
			offSlot += (at - width*float64(u)) / width / users
		}
		if same > 0 {
			t.Errorf("%d users got the same start under another seed", same)
		}
		if offSlot < 0.4 || offSlot > 0.6 {
			t.Errorf("mean position in the slot %.2f: want the draws uniform (about 0.5)", offSlot)
		}
	}
	if _, err := workload.NewSchedule(src, workload.ScheduleOptions{Users: 1, Duration: time.Minute, Phase: -time.Second}); err == nil {
		t.Error("a negative phase was accepted")
	}
}
