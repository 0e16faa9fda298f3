package workload

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Schedule is the closed-loop virtual-user schedule: which turn each user
// sends next and when. Both executors drive it — the HTTP load runner with a
// goroutine per user on the wall clock, the simulator with an event heap on
// a virtual clock — so a live run and a simulated one issue the same
// requests at the same scheduled times for the same completions. The rules:
//
//   - Start: user u's first turn is due at Ramp·u/Users (0 for one user), so
//     users start evenly over the ramp instead of in one burst at t=0. With
//     a Phase, the starts spread over S = max(Ramp, Phase) and each user
//     starts at a random point of its own slot: S·(u + x)/Users, x drawn
//     for the user from PhaseSeed in [0, 1). Starts stay as even as the
//     ramp's (no burst), and users who would start in step relative to a
//     think time longer than the ramp start at random phases of it.
//     With constant think times and a short ramp, users that start in step
//     stay in step (each sends, waits the same think time, sends again), and
//     where a window opens in that rhythm decides its verdict; a phase of
//     one think time spreads them as users who were already mid-
//     conversation would be, without changing a declared think time.
//   - Sessions: user u runs Source.Session(u, 0), (u, 1), … back to back,
//     each turn in order. Mid-session starts (MidSession) are the source's
//     business: its session 0 then begins at a later turn.
//   - Think time: the next turn is due ThinkTime·ThinkTimeScale after the
//     previous reply completed (scale 0: back to back). The last turn's think
//     time separates it from the next session's first turn.
//   - Failure: a reply that is not ok abandons the rest of its session (the
//     conversation history is broken); the next session follows after the
//     failed turn's think time.
//   - Latency counts from the scheduled time, not from when the executor
//     managed to send: a late client shows up as latency and dispatch lag,
//     never as fewer requests (no coordinated omission). The next turn is
//     scheduled from the actual completion, as a closed-loop user would.
//   - Open loop: with Arrivals, sessions arrive by the process instead of
//     users running back to back. Session k is user k of the schedule: it
//     starts at the k-th arrival time, runs its turns closed-loop, and
//     ends after its last reply (or a failed turn); no session follows it.
//     Users, Ramp and Phase do not apply; Users() is the number of
//     arrivals, and how many sessions are in progress is an outcome
//     (Sessions), not an input.
//   - Windows: turns due before Warmup are warm-up (flagged, excluded from
//     the summary); the measured window is [Warmup, Warmup+Duration). A turn
//     due at or after its end is never sent: the user stops. What is in
//     flight at the end is the executor's to cancel.
//
// Times are float64 seconds since the run's start: the simulator's virtual
// clock (its engine steps are float seconds), so simulated runs are
// bit-for-bit what they were before the rules moved here. The real-time
// runner converts at its edge with Offset; the sub-nanosecond difference is
// far below any timer's resolution.
//
// A Schedule is immutable and safe for concurrent use; each user's Cursor
// belongs to one goroutine.
type Schedule struct {
	src            Source
	users          int
	ramp           float64 // seconds
	phase          float64 // seconds
	phaseSeed      uint64
	warmup, end    float64 // seconds since the run's start
	thinkTimeScale float64
	// arrivals are the open-loop sessions' start times (nil: closed loop)
	arrivals []float64
	// shardOf is each user's shard (nil: one client runs every user)
	shardOf []int
	shard   int
	meter   *sessionMeter
}

// ScheduleOptions are a Schedule's parameters; they mean the same to every
// executor.
type ScheduleOptions struct {
	// Users is the number of concurrent closed-loop users.
	Users int
	// Ramp staggers user starts evenly over this period.
	Ramp time.Duration
	// Warmup precedes the measured window; its requests are flagged Warmup.
	Warmup time.Duration
	// Duration is the measured window; no turn is sent once it has ended.
	Duration time.Duration
	// ThinkTimeScale multiplies every think time; 0 sends turns back to back.
	ThinkTimeScale float64
	// Phase, when set, spreads the starts over at least this long and
	// draws each user's point in its slot from PhaseSeed and the user's
	// index (0: even slots, no draw): capacity runs use the workload's
	// typical think time (Spec.TypicalThinkTime) × the think-time scale
	// and the run's workload seed.
	Phase     time.Duration
	PhaseSeed uint64
	// Arrivals, when set, makes the schedule open-loop: sessions start by
	// this process and Users, Ramp and Phase do not apply.
	Arrivals *Arrivals
	// Shards, when Count > 1, makes this schedule one client's part of a
	// run split over several (run.clients): Owns says which users it runs,
	// by the rule of Shards. Times, windows and user indices stay the whole
	// run's.
	Shards Shards
}

// Validate reports every invalid option in one error.
func (o ScheduleOptions) Validate() error {
	var errs []string
	if o.Users < 1 && o.Arrivals == nil {
		errs = append(errs, fmt.Sprintf("users must be at least 1, got %d", o.Users))
	}
	if o.Duration <= 0 {
		errs = append(errs, "duration must be positive")
	}
	if o.Warmup < 0 || o.Ramp < 0 || o.ThinkTimeScale < 0 || o.Phase < 0 {
		errs = append(errs, "warmup, ramp, phase and think-time scale must not be negative")
	}
	if err := o.Shards.Validate(); err != nil {
		errs = append(errs, err.Error())
	}
	if o.Arrivals != nil {
		if err := o.Arrivals.Validate(); err != nil {
			errs = append(errs, "arrivals: "+err.Error())
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// NewSchedule returns the schedule of o's users over src's sessions.
func NewSchedule(src Source, o ScheduleOptions) (*Schedule, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	if src == nil {
		return nil, errors.New("schedule: no session source")
	}
	s := &Schedule{
		src:            src,
		users:          o.Users,
		ramp:           o.Ramp.Seconds(),
		phase:          o.Phase.Seconds(),
		phaseSeed:      o.PhaseSeed,
		warmup:         o.Warmup.Seconds(),
		end:            (o.Warmup + o.Duration).Seconds(),
		thinkTimeScale: o.ThinkTimeScale,
	}
	if o.Arrivals != nil {
		times, err := o.Arrivals.Times(src, s.end)
		if err != nil {
			return nil, fmt.Errorf("schedule: arrivals: %w", err)
		}
		if len(times) == 0 {
			return nil, errors.New("schedule: arrivals: no session arrives before the measured window ends")
		}
		s.arrivals, s.users = times, len(times)
		s.meter = newSessionMeter(s.warmup, s.end)
	}
	if o.Shards.Count > 1 {
		shardOf, err := Partition(src, s.users, o.Shards.Count)
		if err != nil {
			return nil, fmt.Errorf("schedule: %w", err)
		}
		s.shardOf, s.shard = shardOf, o.Shards.Index
	}
	return s, nil
}

// Owns reports whether this schedule's client runs user: every user unless
// the run is split over shards (ScheduleOptions.Shards).
func (s *Schedule) Owns(user int) bool { return s.shardOf == nil || s.shardOf[user] == s.shard }

// Users is the number of users the executors run: the closed-loop users,
// or with Arrivals one per arriving session.
func (s *Schedule) Users() int { return s.users }

// OpenLoop reports whether sessions arrive by a process (Arrivals).
func (s *Schedule) OpenLoop() bool { return s.arrivals != nil }

// Start is when user's first turn is due, in seconds since the run's start:
// its slot in the ramp plus its phase. A start at or after the end of the
// measured window means the user never sends anything.
func (s *Schedule) Start(user int) float64 {
	if s.arrivals != nil {
		return s.arrivals[user]
	}
	if s.phase > 0 {
		span := math.Max(s.ramp, s.phase)
		return span * (float64(user) + unitHash(s.phaseSeed, uint64(user))) / float64(s.users)
	}
	if s.users <= 1 {
		return 0
	}
	return s.ramp * float64(user) / float64(s.users)
}

// unitHash is a uniform number in [0, 1) from seed and i (splitmix64's
// finaliser): the same user of the same seed always gets the same phase.
func unitHash(seed, i uint64) float64 {
	z := seed + 0x9e3779b97f4a7c15*(i+1)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// Window is the measured window, in seconds since the run's start: turns due
// before measured are warm-up, none is due at or after end.
func (s *Schedule) Window() (measured, end float64) { return s.warmup, s.end }

// User returns user's cursor, positioned before its first turn.
func (s *Schedule) User(user int) Cursor {
	if user < 0 || user >= s.users {
		panic(fmt.Sprintf("workload: schedule has users 0..%d, not %d", s.users-1, user))
	}
	return Cursor{s: s, user: user, due: s.Start(user)}
}

// ScheduledTurn is a request a user is due to send.
type ScheduledTurn struct {
	// Script is the session the turn belongs to; Session is its index n in
	// Source.Session(user, n).
	Script  *Script
	Session int
	// Turn is the turn to send, one of Script.Turns.
	Turn *Turn
	// NewSession is set on a session's first turn: the executor starts a
	// fresh conversation (history, prefix-cache state).
	NewSession bool
	// At is the scheduled send time in seconds since the run's start;
	// latency counts from it. Offset(At) is its Duration.
	At float64
	// Warmup is set when At is before the measured window.
	Warmup bool
}

// Cursor is one user's place in a Schedule. Next and Done alternate: Next
// says which turn is due when, Done reports when its reply completed. Due
// tells when the next turn is due without fetching its session, for an
// executor that queues the user first and fetches at the due time.
// A Cursor is not safe for concurrent use.
type Cursor struct {
	s       *Schedule
	user    int
	session int     // index of script in the source
	script  *Script // nil before the first session
	turn    int     // index into script.Turns of the next (or pending) turn
	due     float64 // when that turn is due
	pending bool    // Next returned a turn and Done has not reported it
	began   float64 // when the session in progress began (meter)
}

// Due is when the user's next turn is due, in seconds since the run's start;
// ok is false when that is at or after the end of the measured window: the
// user has stopped. It fetches nothing and changes nothing.
func (c *Cursor) Due() (at float64, ok bool) {
	return c.due, c.due < c.s.end
}

// Next returns the user's next turn and when it is due. ok is false when it
// would be due at or after the end of the measured window: the user stops,
// and every later call says the same. It fetches the next session from the
// source when the previous one is finished or abandoned; an error from the
// source, or a session without turns, is returned as is. Calling Next again
// before Done panics.
func (c *Cursor) Next() (st ScheduledTurn, ok bool, err error) {
	if c.pending {
		panic("workload: Cursor.Next called twice without Done")
	}
	if _, ok := c.Due(); !ok {
		return ScheduledTurn{}, false, nil
	}
	newSession := false
	if c.script == nil || c.turn >= len(c.script.Turns) {
		if c.script != nil {
			c.session++
			c.s.meter.ended(c.began, c.due)
		}
		sc, err := c.s.src.Session(c.user, c.session)
		if err != nil {
			return ScheduledTurn{}, false, fmt.Errorf("user %d session %d: %w", c.user, c.session, err)
		}
		if len(sc.Turns) == 0 {
			return ScheduledTurn{}, false, fmt.Errorf("user %d session %d: script has no turns", c.user, c.session)
		}
		c.script, c.turn, newSession = sc, 0, true
		c.began = c.due
		c.s.meter.started(c.due)
	}
	c.pending = true
	return ScheduledTurn{
		Script:     c.script,
		Session:    c.session,
		Turn:       &c.script.Turns[c.turn],
		NewSession: newSession,
		At:         c.due,
		Warmup:     c.due < c.s.warmup,
	}, true, nil
}

// Done reports that the turn Next returned completed at `at` seconds since
// the run's start: the next turn is due after its scaled think time. ok false
// (an error reply) abandons the rest of the session. Calling Done without a
// turn from Next panics.
func (c *Cursor) Done(at float64, ok bool) {
	if !c.pending {
		panic("workload: Cursor.Done called without a turn from Next")
	}
	c.pending = false
	think := c.script.Turns[c.turn].ThinkTime.Seconds() * c.s.thinkTimeScale
	c.due = at + think
	if ok {
		c.turn++
	} else {
		c.turn = len(c.script.Turns)
	}
	if c.s.arrivals != nil && c.turn >= len(c.script.Turns) {
		// an open-loop session ends with its last reply; none follows
		c.s.meter.ended(c.began, at)
		c.script, c.due = nil, math.Inf(1)
	}
}

// Offset converts a schedule time in seconds since the run's start to a
// Duration, rounded to the nanosecond, the resolution records carry.
func Offset(seconds float64) time.Duration {
	return time.Duration(math.Round(seconds * 1e9))
}
