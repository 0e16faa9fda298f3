package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/workload"
)

// Options configures a virtual-time run. Users, windows and think-time
// scaling mean what they mean to the HTTP load runner, so both executors
// produce comparable records from the same scripts.
type Options struct {
	Deployment Deployment
	// Users is the number of closed-loop users.
	Users int
	// Ramp staggers user starts evenly; Warmup precedes the measured window
	// of length Duration. Requests still running at its end are cancelled.
	Ramp, Warmup, Duration time.Duration
	// ThinkTimeScale multiplies every think time; 0 sends turns back to back.
	ThinkTimeScale float64
	// Phase and PhaseSeed start each user at a random phase
	// (workload.ScheduleOptions).
	Phase     time.Duration
	PhaseSeed uint64
	// Autoscale, when set, runs the replicas under a scaling policy
	// instead of all of them all the time.
	Autoscale *Autoscale
	// Arrivals, when set, makes the run open-loop: sessions arrive by this
	// process and Users, Ramp and Phase do not apply
	// (workload.ScheduleOptions).
	Arrivals *workload.Arrivals
	// Start is the virtual clock's origin in records; zero means the Unix
	// epoch, so runs are byte-reproducible.
	Start time.Time
	// RunID tags every record.
	RunID string
	// ErrorRate answers that fraction of requests with HTTP 500 (fault
	// injection), drawn from Seed.
	ErrorRate float64
	Seed      uint64
	// SeriesInterval is the sampling interval of the time series; 0 means one
	// second, negative disables the series.
	SeriesInterval time.Duration

	// afterRun, when set, sees the cluster at the run's end (the tests'
	// look at its engines)
	afterRun func(*Cluster)
	// blockByBlock releases every finished turn's blocks one by one, as
	// the pool did before parked runs (the test that holds their records
	// to it)
	blockByBlock bool
}

// RunStats describes a finished virtual run.
type RunStats struct {
	Start  time.Time     `json:"start"`
	Window result.Window `json:"window"`
	// Scheduled counts every request, warm-up included; each produced one
	// record: OK + Errors + Cancelled = Scheduled.
	Scheduled int64 `json:"scheduled"`
	OK        int64 `json:"ok"`
	Errors    int64 `json:"errors"`
	Cancelled int64 `json:"cancelled"`
	// Replicas, KVBlocks (per replica) and KVTokens describe the deployment.
	Replicas    int `json:"replicas"`
	KVBlocks    int `json:"kv_blocks_per_replica"`
	KVTokens    int `json:"kv_tokens_per_replica"`
	MaxModelLen int `json:"max_model_len"`
	// Engine sums the replicas' counters over the whole run.
	Engine EngineStats `json:"engine"`
	// MeanKVUsage and PeakKVUsage are over the measured window's samples.
	MeanKVUsage float64 `json:"mean_kv_cache_usage"`
	PeakKVUsage float64 `json:"peak_kv_cache_usage"`
	// MeanSMActive is the measured window's mean DCGM SM-active estimate.
	MeanSMActive float64 `json:"mean_sm_active"`
	Series       Series  `json:"series"`
	// Fleet is how the router spread the measured window over the replicas.
	Fleet FleetStats `json:"fleet"`
	// Sessions describes an open-loop run's sessions (nil: closed loop).
	Sessions *workload.SessionStats `json:"sessions,omitempty"`
	// Scale is an autoscaled run's fleet over time (nil: every replica
	// served throughout).
	Scale *ScaleStats `json:"scale,omitempty"`
}

// Share returns each term's fraction of the summed step time.
func (s *RunStats) Share() perfmodel.Terms {
	t := s.Engine.Terms
	sum := t.Sum()
	if sum == 0 {
		return perfmodel.Terms{}
	}
	return t.Scaled(1 / sum)
}

const (
	phaseDue uint8 = iota
	phaseSubmit
	phaseInFlight
	phaseDone
)

type vuser struct {
	id      int
	cur     workload.Cursor // the user's place in the schedule
	hasher  *BlockHasher
	req     *Request
	rec     *result.Record
	replica int
	next    float64
	phase   uint8
	// the session header's value and the session it was made for
	key        string
	keySession int
	begun      bool // sent its first turn (counted in runner.active)
}

// runner is one virtual run's state.
type runner struct {
	o     Options
	c     *Cluster
	sink  result.Sink
	users []vuser
	heap  userHeap
	mon   *Monitor
	rng   *rand.Rand
	overh perfmodel.Factors
	end   float64
	warm  float64
	stats RunStats
	seq   uint64
	fleet *fleetMeter
	// active counts users that have begun and not stopped: the sessions
	// in progress of an open-loop run
	active int
	scale  *scaler
	// logs are each replica's step ends (completeStep), from which a
	// record's token gaps are read (tokenGaps)
	logs []stepLog
	// borrowed: the sink only borrows records (result.Borrower), so the
	// last record written and its gaps' array are the next record's
	// (spare, spareGaps) instead of fresh memory — a day's gaps are 4 GB
	borrowed  bool
	spare     *result.Record
	spareGaps []int64
	// the hashers and block lists of users that stopped, for the next
	// users to begin (newSession): reserved for a whole session each,
	// they were most of a day's allocations (2.3 of 3.6 GB)
	spareSessions []sessionArrays
}

// sessionArrays are a stopped user's hasher and its request's block list.
type sessionArrays struct {
	hasher *BlockHasher
	blocks []int32
}

// newSession returns a hasher and a request for a user's first turn,
// with the arrays of a user that stopped where there is one.
func (r *runner) newSession() (*BlockHasher, *Request) {
	req := NewRequest()
	n := len(r.spareSessions)
	if n == 0 {
		return NewBlockHasher(r.c.dep.Params.BlockSize), req
	}
	sp := r.spareSessions[n-1]
	r.spareSessions = r.spareSessions[:n-1]
	sp.hasher.Reset()
	req.blocks = sp.blocks
	return sp.hasher, req
}

// stepLog is one replica's steps: ends[i] is the end of its step base+i
// and gaps[i] the microseconds since the step before ended, the gap of
// every request that had a token in both. It keeps the steps from the
// first token of every request the replica holds that has one (trim).
type stepLog struct {
	ends []float64
	gaps []int64
	base int64
}

// RunVirtual runs the users' session scripts against the simulated
// deployment in virtual time and writes one record per request to sink,
// from this goroutine. It stops when the measured window ends or ctx is
// done (returning ctx's error with the stats so far).
func RunVirtual(ctx context.Context, o Options, src workload.Source, sink result.Sink) (*RunStats, error) {
	return runVirtualWith(ctx, o, src, sink, nil)
}

// runVirtualWith is RunVirtual with the cluster's router replaced by route
// when it is not nil (tests pin users to replicas with it).
func runVirtualWith(ctx context.Context, o Options, src workload.Source, sink result.Sink, route router) (*RunStats, error) {
	sched, err := workload.NewSchedule(src, workload.ScheduleOptions{
		Users: o.Users, Ramp: o.Ramp, Warmup: o.Warmup, Duration: o.Duration, ThinkTimeScale: o.ThinkTimeScale,
		Phase: o.Phase, PhaseSeed: o.PhaseSeed, Arrivals: o.Arrivals,
	})
	if err != nil {
		return nil, fmt.Errorf("run virtual: %w", err)
	}
	users := sched.Users()
	if o.ErrorRate < 0 || o.ErrorRate > 1 {
		return nil, fmt.Errorf("run virtual: error rate %v is not in [0, 1]", o.ErrorRate)
	}
	c, err := o.Deployment.Build()
	if err != nil {
		return nil, fmt.Errorf("run virtual: %w", err)
	}
	if route != nil {
		c.router = route
	}
	for _, e := range c.engines {
		if !o.blockByBlock {
			e.trackSessions() // each user's Request comes back for its next turn
		}
	}
	if o.Start.IsZero() {
		o.Start = time.Unix(0, 0).UTC()
	}
	interval := 1.0
	if o.SeriesInterval > 0 {
		interval = o.SeriesInterval.Seconds()
	}
	r := &runner{
		o: o, c: c, sink: sink, borrowed: result.Borrows(sink),
		rng:   rand.New(rand.NewPCG(o.Seed, 0x5eed)),
		overh: c.system.Factors(),
	}
	r.warm, r.end = sched.Window()
	r.fleet = newFleetMeter(len(c.engines), r.warm, r.end)
	r.logs = make([]stepLog, len(c.engines))
	r.mon = newMonitor(c, interval, o.SeriesInterval >= 0, r.warm)
	r.stats.Start = o.Start
	r.stats.Window = result.Window{Start: r.at(r.warm), End: r.at(r.end)}
	r.stats.Replicas, r.stats.KVBlocks, r.stats.KVTokens = len(c.engines), c.engines[0].KVBlocks(), c.kvTokens
	r.stats.MaxModelLen = c.MaxModelLen()
	r.users = make([]vuser, users)
	r.heap = userHeap{users: r.users, idx: make([]int32, 0, users)}
	for u := range r.users {
		vu := &r.users[u]
		vu.id = u
		vu.cur = sched.User(u) // hasher and request come with its first turn (due)
		r.queue(vu)
	}
	if o.Autoscale != nil {
		if err := r.startScaler(o.Autoscale); err != nil {
			return nil, fmt.Errorf("run virtual: %w", err)
		}
	}
	err = r.loop(ctx)
	r.finish()
	if o.afterRun != nil {
		o.afterRun(c)
	}
	r.stats.Sessions = sched.Sessions()
	r.stats.Scale = r.finishScale()
	return &r.stats, err
}

func (r *runner) at(sec float64) time.Time {
	return r.o.Start.Add(workload.Offset(sec))
}

// queue puts vu on the heap at its next turn's scheduled time; its session
// is fetched when that time comes (due). A user the schedule has stopped
// leaves the heap for good.
func (r *runner) queue(vu *vuser) {
	at, ok := vu.cur.Due()
	if !ok {
		vu.phase = phaseDone
		if vu.begun {
			vu.begun = false
			r.active--
		}
		return
	}
	vu.next, vu.phase = at, phaseDue
	r.heap.push(int32(vu.id))
}

func (r *runner) loop(ctx context.Context) error {
	engines := r.c.engines
	ends := make([]float64, len(engines))
	for i := 0; ; i++ {
		if i&4095 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		tu := math.Inf(1)
		if r.heap.len() > 0 {
			tu = r.users[r.heap.peek()].next
		}
		ts, ei := math.Inf(1), -1
		for k, e := range engines {
			if e.Busy() && ends[k] < ts {
				ts, ei = ends[k], k
			}
		}
		t := min(tu, ts)
		if tc := r.scaleNext(); tc < t && tc < r.end {
			if err := r.scaleAt(tc); err != nil {
				return err
			}
			continue
		}
		if t >= r.end {
			return nil
		}
		if !r.fleet.snapped && t >= r.warm {
			r.fleet.snapshot(engines)
		}
		r.mon.Advance(t)
		if ei >= 0 && ts <= tu {
			if err := r.completeStep(ei, ts); err != nil {
				return err
			}
			e := engines[ei]
			if e.HasWork() {
				if d, ok := e.Schedule(ts); ok {
					ends[ei] = ts + d
					r.mon.AddStep(ei, e.Step())
				}
			}
			r.drained(ei, ts)
			continue
		}
		u := r.heap.pop()
		vu := &r.users[u]
		switch vu.phase {
		case phaseDue:
			if err := r.due(vu, tu); err != nil {
				return err
			}
		case phaseSubmit:
			k := r.c.Assign(vu.req, tu)
			r.fleet.routed(k, tu)
			r.scaleRouted(k, tu)
			vu.replica, vu.phase = k, phaseInFlight
			vu.req.Arrival = tu
			e := engines[k]
			if err := e.Add(vu.req); err != nil {
				return fmt.Errorf("user %d: %w", vu.id, err) // length was checked in due
			}
			if !e.Busy() {
				if d, ok := e.Schedule(tu); ok {
					ends[k] = tu + d
					r.mon.AddStep(k, e.Step())
				}
			}
		}
	}
}

// due prepares user vu's next request at its scheduled time t.
func (r *runner) due(vu *vuser, t float64) error {
	next, ok, err := vu.cur.Next()
	if err != nil || !ok { // !ok cannot happen: queue checked Due
		return err
	}
	if vu.hasher == nil {
		vu.hasher, vu.req = r.newSession()
	}
	if !vu.begun {
		vu.begun = true
		r.active++
	}
	if next.NewSession {
		// room for the session's whole sequence up front, its hashes and
		// its request's blocks: grown block by block, each list was copied
		// over as it doubled (the blocks' growth was 1.75 s of a day's profile)
		if turns := next.Script.Turns; len(turns) > 0 {
			last := turns[len(turns)-1]
			reply := last.ReplyTokens
			if reply <= 0 {
				reply = last.MaxTokens
			}
			n := min(last.PromptTokens+reply, r.c.MaxModelLen())/r.c.dep.Params.BlockSize + 1
			vu.hasher.reserve(n)
			vu.req.reserveBlocks(n)
		}
		vu.hasher.Reset()
		for _, seg := range next.Script.Prefix {
			vu.hasher.AppendRun(seg.Key, 0, seg.Tokens)
		}
	}
	turn := next.Turn
	for _, seg := range turn.NewContent {
		vu.hasher.AppendRun(seg.Key, 0, seg.Tokens)
	}
	prompt := vu.hasher.Tokens()
	reply := turn.ReplyTokens
	if reply <= 0 {
		reply = turn.MaxTokens
	}
	reply = max(reply, 1)
	// what the next turn's prompt carries of this reply: all of it, or
	// without a reasoning model's reasoning (workload.Spec.ReasoningShare)
	hist := reply
	if t := turn.Reply.Tokens; t > 0 && t < reply {
		hist = t
	}
	key := turn.Reply.Key
	if key == 0 || turn.Reply.Tokens != hist {
		key = replyKey(vu.id, next.Session, turn.Index)
	}
	vu.hasher.AppendRun(key, 0, hist)

	r.stats.Scheduled++
	rec := r.spare
	if rec == nil {
		rec = new(result.Record)
	}
	r.spare = nil
	*rec = result.Record{
		RunID: r.o.RunID, User: vu.id, Session: next.Session, Profile: next.Script.Profile, Turn: turn.Index,
		RequestID:          result.RequestID(r.o.RunID, vu.id, next.Session, turn.Index),
		Scheduled:          r.at(t),
		Sent:               r.at(t),
		Warmup:             next.Warmup,
		PromptTokensTarget: turn.PromptTokens,
		MaxTokens:          turn.MaxTokens,
	}
	vu.rec = rec
	fail := func(code int, msg string) error {
		rec.Status, rec.HTTPStatus, rec.Error, rec.Done = result.StatusHTTPError, code, msg, rec.Scheduled
		vu.cur.Done(t, false) // rejected at once; the session is abandoned
		r.queue(vu)
		return r.emit(vu)
	}
	if r.o.ErrorRate > 0 && r.rng.Float64() < r.o.ErrorRate {
		return fail(500, "injected fault")
	}
	if limit := r.c.MaxModelLen(); prompt+reply > limit {
		return fail(400, fmt.Sprintf("%d prompt + %d output tokens exceed max-model-len %d", prompt, reply, limit))
	}
	req := vu.req
	req.Reset()
	r.seq++
	req.ID, req.Tag, req.PromptTokens, req.OutputTokens = r.seq, vu.id, prompt, reply
	req.BlockHashes = vu.hasher.Hashes()
	if r.c.NeedsSessionKey() {
		if vu.key == "" || vu.keySession != next.Session {
			vu.key, vu.keySession = r.c.SessionKeyOf(vu.id, next.Session), next.Session
		}
		req.SessionKey = vu.key
	}
	vu.next, vu.phase = t+r.overh.RequestOverhead(prompt), phaseSubmit
	r.heap.push(int32(vu.id))
	return nil
}

// completeStep applies replica k's step ending at t and advances its users.
//
// A token's gap is not computed and written here, per token and request:
// the step's end and its gap go once into the replica's log, a request
// notes only a token that skipped a step, and its record's gaps are
// copied off the log when it is written (tokenGaps).
func (r *runner) completeStep(k int, t float64) error {
	step := r.logStep(k, t)
	for _, req := range r.c.engines[k].Complete(t) {
		if req.generated == 1 {
			r.users[req.Tag].rec.FirstToken = r.at(t)
		}
		req.noteToken(step)
		if !req.finished {
			continue
		}
		vu := &r.users[req.Tag]
		r.c.Release(req, t)
		r.fleet.answered(k, t)
		r.scaleAnswered(req)
		rec := vu.rec
		rec.Done = r.at(t)
		rec.Status = result.StatusOK
		vu.cur.Done(t, true)
		r.queue(vu)
		if err := r.emit(vu); err != nil {
			return err
		}
	}
	return nil
}

// emit fills the request-derived fields and writes vu's record.
func (r *runner) emit(vu *vuser) error {
	rec := vu.rec
	if req := vu.req; rec.Status != result.StatusHTTPError {
		rec.PromptTokens, rec.CachedTokens, rec.OutputTokens = req.PromptTokens, req.CachedTokens, req.Generated()
		if req.generated > 1 {
			rec.TokenGapsUS = r.tokenGaps(r.spareGaps, vu.replica, req)
			r.spareGaps = nil
		}
	}
	vu.rec = nil
	if vu.phase == phaseDone {
		// a stopped user (an open-loop session that ended) sends nothing
		// more: its history's hashes and block list go to the next
		// session to arrive, or a day's sessions pile up
		r.spareSessions = append(r.spareSessions, sessionArrays{vu.hasher, vu.req.blocks[:0]})
		vu.hasher, vu.req = nil, nil
	}
	switch rec.Status {
	case result.StatusOK:
		r.stats.OK++
	case result.StatusCancelled:
		r.stats.Cancelled++
	default:
		r.stats.Errors++
	}
	if err := r.sink.Write(rec); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	if r.borrowed {
		r.spare = rec
		if rec.TokenGapsUS != nil {
			r.spareGaps = rec.TokenGapsUS[:0]
		}
	}
	return nil
}

// logStep adds replica k's step ending at t to its log, trimmed first
// when full, and returns the step's number.
func (r *runner) logStep(k int, t float64) int64 {
	lg := &r.logs[k]
	if len(lg.ends) == cap(lg.ends) {
		r.trim(k)
	}
	step := lg.base + int64(len(lg.ends))
	var gap int64
	if n := len(lg.ends); n > 0 {
		gap = gapUS(t, lg.ends[n-1])
	}
	lg.ends, lg.gaps = append(lg.ends, t), append(lg.gaps, gap)
	return step
}

// noteToken records that req, whose generated count includes it, had a
// token in its replica's step: its first, or one after a skipped step.
func (req *Request) noteToken(step int64) {
	switch {
	case req.generated == 1:
		req.firstStep = step
	case step != req.tokStep+1:
		req.skips = append(req.skips, tokenSkip{prev: req.tokStep, at: step})
	}
	req.tokStep = step
}

// tokenGaps returns the gaps in microseconds between req's tokens on
// replica k, in dst's array when it has room (nil: a new one of their
// length), from its replica's log of steps: between skips its tokens came
// in consecutive steps, whose gaps the log holds as they are.
func (r *runner) tokenGaps(dst []int64, k int, req *Request) []int64 {
	lg := &r.logs[k]
	if len(req.skips) == 0 {
		// a token every step: one run of the log (not zeroed first as
		// make's slice is)
		from := req.firstStep + 1 - lg.base
		return append(dst[:0], lg.gaps[from:from+int64(req.generated-1)]...)
	}
	n := req.generated - 1
	gaps := slices.Grow(dst[:0], n)[:n]
	prev, skips := req.firstStep, req.skips
	for i := 0; i < len(gaps); {
		to := prev + int64(len(gaps)-i) // the last token's step, without another skip
		if len(skips) > 0 {
			to = skips[0].prev
		}
		i += copy(gaps[i:], lg.gaps[prev+1-lg.base:to+1-lg.base])
		prev = to
		if len(skips) > 0 {
			gaps[i] = gapUS(lg.ends[skips[0].at-lg.base], lg.ends[prev-lg.base])
			i++
			prev = skips[0].at
			skips = skips[1:]
		}
	}
	return gaps
}

// gapUS is the gap from a token at from to one at to, in microseconds.
func gapUS(to, from float64) int64 { return int64(math.Round((to - from) * 1e6)) }

// trim drops the steps of replica k's log before the first token of every
// request it holds (running, or preempted and waiting) that has one.
func (r *runner) trim(k int) {
	lg := &r.logs[k]
	keep := lg.base + int64(len(lg.ends))
	e := r.c.engines[k]
	for _, q := range e.running {
		if q.generated > 0 {
			keep = min(keep, q.firstStep)
		}
	}
	for i := range e.waiting.len() {
		if q := e.waiting.at(i); q.generated > 0 {
			keep = min(keep, q.firstStep)
		}
	}
	n := copy(lg.ends, lg.ends[keep-lg.base:])
	copy(lg.gaps, lg.gaps[keep-lg.base:])
	lg.ends, lg.gaps, lg.base = lg.ends[:n], lg.gaps[:n], keep
}

// finish cancels requests still in flight at the end and totals the stats.
func (r *runner) finish() {
	for u := range r.users {
		vu := &r.users[u]
		if vu.rec == nil || (vu.phase != phaseSubmit && vu.phase != phaseInFlight) {
			continue
		}
		vu.rec.Status, vu.rec.Done, vu.rec.Error = result.StatusCancelled, r.at(r.end), "measured window ended"
		if vu.phase == phaseInFlight {
			r.c.Release(vu.req, r.end)
			r.fleet.answered(vu.replica, r.end)
		}
		if err := r.emit(vu); err != nil {
			break
		}
	}
	r.mon.Advance(r.end)
	for _, e := range r.c.engines {
		s := e.Stats()
		t := &r.stats.Engine
		t.Steps += s.Steps
		t.BusySeconds += s.BusySeconds
		t.PromptTokens += s.PromptTokens
		t.GenerationTokens += s.GenerationTokens
		t.PrefixQueries += s.PrefixQueries
		t.PrefixHits += s.PrefixHits
		t.Preemptions += s.Preemptions
		t.Evictions += s.Evictions
		t.Finished += s.Finished
		t.Rejected += s.Rejected
		t.Terms = t.Terms.Plus(s.Terms)
	}
	r.stats.Series = r.mon.series
	r.stats.Fleet = r.fleet.stats(r.c.Router(), r.c.engines)
	if m := r.mon; m.n > 0 {
		r.stats.MeanKVUsage, r.stats.PeakKVUsage = m.kvSum/m.n, m.kvPeak
		if m.gpuN > 0 {
			r.stats.MeanSMActive = m.smSum / m.gpuN
		}
	}
}

// replyKey identifies the content of a simulated reply: distinct for every
// (user, session, turn), and never equal to a workload segment key in
// practice (64-bit mixing).
func replyKey(user, session, turn int) uint64 {
	return fmix(mix(mix(mix(0x7265706c79, uint64(user)), uint64(session)), uint64(turn)))
}

// userHeap is a min-heap of user indices by their next event time, ties by
// index so runs are deterministic. It allocates nothing after construction.
type userHeap struct {
	users []vuser
	idx   []int32
}

func (h *userHeap) len() int    { return len(h.idx) }
func (h *userHeap) peek() int32 { return h.idx[0] }
func (h *userHeap) less(a, b int32) bool {
	ua, ub := &h.users[a], &h.users[b]
	if ua.next != ub.next {
		return ua.next < ub.next
	}
	return a < b
}

func (h *userHeap) push(u int32) {
	h.idx = append(h.idx, u)
	i := len(h.idx) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.idx[i], h.idx[p]) {
			break
		}
		h.idx[i], h.idx[p] = h.idx[p], h.idx[i]
		i = p
	}
}

func (h *userHeap) pop() int32 {
	top := h.idx[0]
	n := len(h.idx) - 1
	h.idx[0] = h.idx[n]
	h.idx = h.idx[:n]
	i := 0
	for {
		l, m := 2*i+1, i
		if l < n && h.less(h.idx[l], h.idx[m]) {
			m = l
		}
		if l+1 < n && h.less(h.idx[l+1], h.idx[m]) {
			m = l + 1
		}
		if m == i {
			break
		}
		h.idx[i], h.idx[m] = h.idx[m], h.idx[i]
		i = m
	}
	return top
}
