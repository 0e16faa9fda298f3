package loadgen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/vllm"
	"github.com/spoc-project/spoc/workload"
)

// renderLead is how long before its send time a request is rendered.
const renderLead = 50 * time.Millisecond

// ErrWindowEnd is the cancellation cause of requests still in flight when the
// measured window ends.
var ErrWindowEnd = errors.New("measured window ended")

// Options configures a Runner. Zero timeouts take the package defaults.
type Options struct {
	// Target is the server's base URL (http://host:8000); the endpoint path
	// (/v1/chat/completions or /v1/completions) is appended unless Target
	// already ends with it.
	Target string
	// Endpoint is EndpointChat (default) or EndpointCompletions.
	Endpoint string
	// Model is sent as the request's model field.
	Model string
	// APIKey is sent as a bearer token; it is never logged or recorded.
	// New refuses one that would go over plain http to another machine
	// (CheckKeyTransport) unless APIKeyPlainHTTP is set.
	APIKey          string
	APIKeyPlainHTTP bool

	// Users is the number of concurrent closed-loop users.
	Users int
	// Ramp staggers user starts evenly over this period.
	Ramp time.Duration
	// Warmup precedes the measured window; its requests are flagged Warmup.
	Warmup time.Duration
	// Duration is the measured window; in-flight requests are cancelled at its end.
	Duration time.Duration
	// ThinkTimeScale multiplies every think time; 0 sends turns back to back.
	ThinkTimeScale float64
	// Phase and PhaseSeed start each user at a random phase
	// (workload.ScheduleOptions).
	Phase     time.Duration
	PhaseSeed uint64
	// Arrivals, when set, makes the run open-loop: sessions arrive by this
	// process, each its own user running one session, and Users, Ramp and
	// Phase do not apply (workload.ScheduleOptions).
	Arrivals *workload.Arrivals
	// Shards, when Count > 1, makes this runner one client of a run split
	// over several processes (run.clients): it runs only its shard's users
	// (workload.Shards) and tags their records with its index.
	Shards workload.Shards
	// StartAt, when set, is the instant the schedule starts (every shard
	// of a split run gets the same one); zero starts it now. Report.
	// StartSkew says how late this process actually began.
	StartAt time.Time

	RequestTimeout   time.Duration
	FirstByteTimeout time.Duration
	// ExactOutputLength asks for exactly max_tokens output tokens
	// (ignore_eos and min_tokens, a vLLM extension).
	ExactOutputLength bool
	// HistoryPolicy is HistoryFinal (default) or HistoryKeep: whether a
	// reasoning model's streamed reasoning goes back into the history of
	// the session's next turn along with its final content. The plan's
	// prompt targets must assume the same, or the summary flags prompt
	// drift (docs/loadgen.md).
	HistoryPolicy string

	// SessionHeader, when set, is sent on every request with the
	// session's key (workload.SessionKey by SessionKey: user or session):
	// the value a consistent-hash router in front of replicas hashes, and
	// the one the simulator's session-affinity router hashes.
	SessionHeader string
	SessionKey    string

	// RunID tags every record and request id.
	RunID string
	// Renderer turns script segments into prompt text.
	Renderer workload.Renderer `json:"-"`
	// HTTPClient overrides the tuned default (NewTransport).
	HTTPClient *http.Client `json:"-"`
	// Logger receives run-level events; nil discards them.
	Logger *slog.Logger `json:"-"`
	// GCPercent is the Go garbage collector's target (see runtime/debug.
	// SetGCPercent) while Run runs. Zero means DefaultGCPercent unless the
	// GOGC environment variable is set, which then wins; negative leaves
	// the process's setting alone.
	GCPercent int
}

// DefaultGCPercent is the client's GC target during a run. Every collection
// takes CPU from the goroutines reading streams while it marks, which shows
// up as inter-token timing error: at 1,500 streams on one core, Go's default
// of 100 (a cycle every ~10 s) gave ITL error p99 of 2.3-6.1 ms against
// 0.5 ms with GC off. At 400, with a collection forced in the warm-up and
// reused per-user buffers, a cycle comes every ~90 s and 60 s and 120 s
// windows stayed accurate (docs/loadgen.md). The cost is memory: the heap
// grows to about five times its live size (~1.2 GB at 1,500 streams).
const DefaultGCPercent = 400

// gcLead is how long before the measured window the runner forces a
// garbage collection (at most half the warm-up).
const gcLead = 5 * time.Second

// applyGC sets the run's GC target and returns what restores the old one.
// With the default target it also sets a soft memory limit of half the
// machine's or container's memory (unless GOMEMLIMIT is set), so that the
// larger heap cannot outgrow it. Runs in one process share the setting: the
// first sets it, the last restores it.
func applyGC(pct int) (restore func()) {
	limit := int64(0)
	if pct == 0 {
		if _, set := os.LookupEnv("GOGC"); set {
			return func() {}
		}
		pct = DefaultGCPercent
		if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
			limit = int64(float64(memoryBudget()) * memoryShare)
		}
	}
	if pct < 0 {
		return func() {}
	}
	gcMu.Lock()
	defer gcMu.Unlock()
	if gcRuns == 0 {
		gcPrev = debug.SetGCPercent(pct)
		gcPrevLimit = -1
		if limit > 0 {
			gcPrevLimit = debug.SetMemoryLimit(limit)
		}
	}
	gcRuns++
	return func() {
		gcMu.Lock()
		defer gcMu.Unlock()
		if gcRuns--; gcRuns == 0 {
			debug.SetGCPercent(gcPrev)
			if gcPrevLimit >= 0 {
				debug.SetMemoryLimit(gcPrevLimit)
			}
		}
	}
}

var (
	gcMu        sync.Mutex
	gcRuns      int   // runs holding the GC target
	gcPrev      int   // the target before the first of them
	gcPrevLimit int64 // the memory limit before it, or -1 when not changed
)

// Report describes a finished run.
type Report struct {
	// Start is when the first user's ramp slot began.
	Start time.Time `json:"start"`
	// Window is the measured window; its End is the interruption time when
	// the run was interrupted.
	Window result.Window `json:"window"`
	// Health is the client's self-measurement over the measured window.
	Health result.ClientHealth `json:"health"`
	// Scheduled counts every request the run scheduled, warm-up included;
	// each produced exactly one record.
	Scheduled int64 `json:"scheduled"`
	// Interrupted is set when the caller's context ended the run early.
	Interrupted bool `json:"interrupted"`
	// Sessions describes an open-loop run's sessions (nil: closed loop).
	Sessions *workload.SessionStats `json:"sessions,omitempty"`
	// StartSkew is how long after Options.StartAt the runner's clock
	// actually started (zero without a StartAt): a shard of a split run
	// that woke late ran its schedule late by this much.
	StartSkew time.Duration `json:"start_skew"`
}

// openLoopPool is the idle-connection pool of an open-loop run, whose
// concurrency is not known before it runs.
const openLoopPool = 1024

// Runner runs closed-loop users against one server. A Runner runs once.
type Runner struct {
	opts     Options
	client   *client
	progress *progress
}

// New validates opts and builds a Runner.
func New(opts Options) (*Runner, error) {
	var errs []string
	if opts.Target == "" {
		errs = append(errs, "target URL is empty")
	}
	if err := opts.schedule().Validate(); err != nil {
		errs = append(errs, err.Error())
	}
	if opts.Renderer == nil {
		errs = append(errs, "no renderer")
	}
	switch opts.Endpoint {
	case "":
		opts.Endpoint = EndpointChat
	case EndpointChat, EndpointCompletions:
	default:
		errs = append(errs, fmt.Sprintf("endpoint must be %q or %q, got %q", EndpointChat, EndpointCompletions, opts.Endpoint))
	}
	switch opts.HistoryPolicy {
	case "":
		opts.HistoryPolicy = DefaultHistoryPolicy
	case HistoryFinal, HistoryKeep:
	default:
		errs = append(errs, fmt.Sprintf("history policy must be %q or %q, got %q", HistoryFinal, HistoryKeep, opts.HistoryPolicy))
	}
	if opts.APIKey != "" {
		if err := CheckKeyTransport(opts.Target, opts.APIKeyPlainHTTP); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("loadgen options: %s", strings.Join(errs, "; "))
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.FirstByteTimeout <= 0 {
		opts.FirstByteTimeout = min(DefaultFirstByteTimeout, opts.RequestTimeout)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	hc := opts.HTTPClient
	if hc == nil {
		pool := opts.Users
		if opts.Arrivals != nil {
			// how many sessions overlap is the run's outcome: keep
			// enough idle connections for a busy open-loop run
			pool = openLoopPool
		}
		hc = &http.Client{Transport: NewTransport(pool)}
	}
	return &Runner{
		opts: opts,
		client: &client{
			http:             hc,
			url:              endpointURL(opts.Target, opts.Endpoint),
			apiKey:           opts.APIKey,
			sessionHeader:    opts.SessionHeader,
			sessionKey:       opts.SessionKey,
			firstByteTimeout: opts.FirstByteTimeout,
			requestTimeout:   opts.RequestTimeout,
		},
		progress: newProgress(),
	}, nil
}

// schedule is the closed-loop schedule's part of the options.
func (o *Options) schedule() workload.ScheduleOptions {
	return workload.ScheduleOptions{Users: o.Users, Ramp: o.Ramp, Warmup: o.Warmup, Duration: o.Duration, ThinkTimeScale: o.ThinkTimeScale,
		Phase: o.Phase, PhaseSeed: o.PhaseSeed, Arrivals: o.Arrivals, Shards: o.Shards}
}

func endpointURL(target, endpoint string) string {
	path := vllm.PathChatCompletions
	if endpoint == EndpointCompletions {
		path = vllm.PathCompletions
	}
	target = strings.TrimRight(target, "/")
	if strings.HasSuffix(target, path) {
		return target
	}
	return strings.TrimSuffix(target, vllm.PathPrefix) + path
}

// Progress returns live counters; safe to call while Run runs.
func (r *Runner) Progress() Progress { return r.progress.snapshot() }

// Run drives the users until the measured window ends or ctx is done, and
// writes every scheduled request's record to out from a single goroutine
// (out need not be safe for concurrent use). When ctx ends first, Run
// returns the report with Interrupted set and ctx's error.
func (r *Runner) Run(ctx context.Context, src workload.Source, out result.Sink) (*Report, error) {
	o := &r.opts
	sched, err := workload.NewSchedule(src, o.schedule())
	if err != nil {
		return nil, err
	}
	defer applyGC(o.GCPercent)()
	// Prime lazy initialisation (tokenizer, corpus) before the clock starts,
	// so that it does not show up as the first requests' dispatch lag. Errors
	// surface again, with context, in the users.
	if sc, err := src.Session(0, 0); err == nil && len(sc.Turns) > 0 {
		_ = newConversation(o.Endpoint, o.Renderer).addUser(sc, &sc.Turns[0])
	}
	start := time.Now().Add(20 * time.Millisecond) // lets goroutines park before the first slot
	var skew time.Duration
	if !o.StartAt.IsZero() {
		// the agreed instant of a split run: the users' slots are laid
		// out from it, and how late this process woke is reported
		start = o.StartAt
		t := time.NewTimer(time.Hour)
		ok := sleepUntil(ctx, t, start)
		t.Stop()
		if !ok {
			return nil, ctx.Err()
		}
		skew = max(time.Since(start), 0)
	}
	measuredAt, endAt := sched.Window()
	measured, end := start.Add(workload.Offset(measuredAt)), start.Add(workload.Offset(endAt))
	rep := &Report{Start: start, Window: result.Window{Start: measured, End: end}, StartSkew: skew}

	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	endTimer := time.AfterFunc(time.Until(end), func() { cancelRun(ErrWindowEnd) })
	defer endTimer.Stop()

	interruptedAt := make(chan time.Time, 1)
	stopWatch := context.AfterFunc(ctx, func() { interruptedAt <- time.Now() })
	defer stopWatch()

	probe := newHealthProbe()
	probeTimer := time.AfterFunc(time.Until(measured), probe.begin)
	// Collect the ramp's garbage (connection buffers, first sessions)
	// during the warm-up, so that the measured window does not start with
	// a collection already due: with the relaxed GC target the next one is
	// then ~90 s away at 1,500 streams on one core.
	if lead := min(o.Warmup/2, gcLead); lead > 0 {
		gcTimer := time.AfterFunc(time.Until(measured.Add(-lead)), runtime.GC)
		defer gcTimer.Stop()
	}

	users := sched.Users()
	records := make(chan *result.Record, min(4*users, 1<<16)+64)
	var sinkErr error
	sinkDone := make(chan struct{})
	go func() {
		defer close(sinkDone)
		for rec := range records {
			r.progress.observe(rec)
			if sinkErr != nil {
				continue // drain so users never block
			}
			if err := out.Write(rec); err != nil {
				sinkErr = fmt.Errorf("write record: %w", err)
				cancelRun(sinkErr)
			}
		}
	}()

	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	for u := range users {
		if !sched.Owns(u) {
			continue // another shard's
		}
		slot := start.Add(workload.Offset(sched.Start(u)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTimer(time.Hour)
			ok := sleepUntil(runCtx, t, slot.Add(-renderLead))
			t.Stop()
			vu := &user{r: r, id: u, start: start, records: records}
			if !ok {
				// Stopped before this user began. Its first request is
				// recorded (cancelled, never sent) when it was already due:
				// a client too starved to wake its users in time fell
				// behind its schedule, and that must show (the summary's
				// unsent-requests check); otherwise nothing was due.
				if !time.Now().Before(slot) {
					_ = vu.run(runCtx, sched.User(u))
				}
				return
			}
			r.progress.active.Add(1)
			defer r.progress.active.Add(-1)
			if err := vu.run(runCtx, sched.User(u)); err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
				cancelRun(err)
			}
		}()
	}
	wg.Wait()
	close(records)
	<-sinkDone
	probeTimer.Stop()

	if ctx.Err() != nil {
		rep.Interrupted = true
		stopped := time.Now()
		select {
		case stopped = <-interruptedAt:
		default:
		}
		if stopped.Before(end) {
			rep.Window.End = stopped
		}
	}
	rep.Health = probe.end()
	rep.Scheduled = r.progress.snapshot().Scheduled
	rep.Sessions = sched.Sessions()
	switch {
	case firstErr != nil:
		return rep, firstErr
	case sinkErr != nil:
		return rep, sinkErr
	case ctx.Err() != nil:
		return rep, ctx.Err()
	}
	return rep, nil
}

// user is one closed-loop virtual user.
type user struct {
	r       *Runner
	id      int
	start   time.Time // the schedule's origin
	records chan<- *result.Record
	body    []byte
	st      stream
}

// run sends the turns cur schedules, each at its scheduled time, until the
// schedule stops the user or ctx ends.
func (u *user) run(ctx context.Context, cur workload.Cursor) error {
	o := &u.r.opts
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	conv := newConversation(o.Endpoint, o.Renderer)
	for {
		next, ok, err := cur.Next()
		if err != nil || !ok {
			return err
		}
		script, turn := next.Script, next.Turn
		if next.NewSession {
			conv.reset()
		}
		due := u.start.Add(workload.Offset(next.At))
		rec := &result.Record{
			RunID: o.RunID, User: u.id, Session: next.Session, Profile: script.Profile, Turn: turn.Index, Shard: o.Shards.Index,
			RequestID:          result.RequestID(o.RunID, u.id, next.Session, turn.Index),
			Scheduled:          due,
			Warmup:             next.Warmup,
			PromptTokensTarget: turn.PromptTokens,
			MaxTokens:          turn.MaxTokens,
		}
		// Render close to the send time, not all users at once at the
		// start, but early enough that rendering is not dispatch lag.
		if !sleepUntil(ctx, timer, due.Add(-renderLead)) {
			u.stopped(ctx, rec)
			return nil
		}
		if err := conv.addUser(script, turn); err != nil {
			return fmt.Errorf("user %d session %d turn %d: %w", u.id, next.Session, turn.Index, err)
		}
		u.body = conv.body(u.body[:0], requestParams{model: o.Model, maxTokens: turn.MaxTokens, exact: o.ExactOutputLength})
		if !sleepUntil(ctx, timer, due) {
			u.stopped(ctx, rec)
			return nil
		}
		u.r.progress.scheduled()
		u.r.progress.started()
		u.r.client.do(ctx, u.body, rec, &u.st)
		u.r.progress.finished()
		u.emit(rec)
		if rec.Status == result.StatusCancelled || ctx.Err() != nil {
			return nil
		}
		// A failed turn abandons the session (its history is broken);
		// the schedule then starts the next one.
		cur.Done(rec.Done.Sub(u.start).Seconds(), rec.Status == result.StatusOK)
		if rec.Status == result.StatusOK {
			var reasoning []byte
			if o.HistoryPolicy == HistoryKeep {
				reasoning = u.st.reasoning
			}
			conv.addReply(u.st.reply, reasoning)
		}
	}
}

func (u *user) emit(rec *result.Record) { u.records <- rec }

// stopped handles a run that stopped before rec was sent: a request already
// due is recorded as cancelled, never dropped; one whose time had not come
// was never scheduled.
func (u *user) stopped(ctx context.Context, rec *result.Record) {
	if now := time.Now(); !now.Before(rec.Scheduled) {
		u.r.progress.scheduled()
		rec.Status, rec.Error, rec.Done = result.StatusCancelled, "cancelled before sending: "+context.Cause(ctx).Error(), now
		u.emit(rec)
	}
}

// sleepUntil waits for t; false when ctx ended first.
func sleepUntil(ctx context.Context, timer *time.Timer, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer.Reset(d)
	select {
	case <-ctx.Done():
		timer.Stop() // Go 1.23+ timers: no stale tick can be received after Stop
		return false
	case <-timer.C:
		return ctx.Err() == nil
	}
}
