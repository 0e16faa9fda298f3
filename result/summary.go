package result

import (
	"math"
	"strconv"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Metric names a latency distribution the Summary keeps.
type Metric int

// Latency metrics. TTFT, TPOT and E2E are measured from the scheduled send
// time; ITL is per token: the gap before a chunk of n tokens counts as n
// samples of gap/n (a speculative-decoding step that emits 4 tokens after
// 80 ms is 4 tokens at 20 ms, not one 80 ms stall); DispatchLag is sent
// minus scheduled.
const (
	MetricTTFT Metric = iota
	MetricITL
	MetricTPOT
	MetricE2E
	MetricDispatchLag
	numMetrics
)

var metricNames = [numMetrics]string{"ttft", "itl", "tpot", "e2e", "dispatch_lag"}

// String returns the metric's short name ("ttft", "itl", ...).
func (m Metric) String() string {
	if m < 0 || m >= numMetrics {
		return "metric(" + strconv.Itoa(int(m)) + ")"
	}
	return metricNames[m]
}

// Histogram range: 1 µs to 24 h at 3 significant digits (0.1 % resolution).
const (
	histLowestUS  = 1
	histHighestUS = int64(24 * time.Hour / time.Microsecond)
	histDigits    = 3
)

// DefaultClientBoundLagP99 is the dispatch-lag p99 above which a run is
// marked client-bound unless an option says otherwise.
const DefaultClientBoundLagP99 = 10 * time.Millisecond

// UnsentLateShare is the share of a window's requests that may be due for
// longer than the dispatch-lag limit and never sent before the run counts
// as client-bound: the share the lag p99 rule lets be late among the sent.
const UnsentLateShare = 0.01

// DefaultCPUSaturation is the fraction of its usable cores above which the
// client counts as CPU-saturated (and the run as client-bound).
const DefaultCPUSaturation = 0.9

// DefaultPromptDriftLimit is the |mean prompt drift| of a profile above
// which a summary flags the run: the server's prompt lengths differ from the
// plan's targets by more than chat-template overhead and tokenizer
// differences explain (a few per cent), so the run measured other context
// lengths than the profile describes (docs/loadgen.md, "Plan drift").
const DefaultPromptDriftLimit = 0.10

// Drift histogram: |drift| in units of 0.01 %, up to 1,000,000 % (a
// 10,000-fold prompt), 3 significant digits.
const (
	driftUnit    = 1e4
	driftHighest = int64(1e8)
)

// Window is a measured window. Records are counted when their scheduled send
// time is in [Start, End). A zero Start means "not given": records flagged
// Warmup are excluded and the window is inferred from the records. A zero End
// means open-ended.
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Contains reports whether t falls in the window.
func (w Window) Contains(t time.Time) bool {
	if t.Before(w.Start) {
		return false
	}
	return w.End.IsZero() || t.Before(w.End)
}

// ClientHealth is what the load client measured about itself during the
// window; a simulator leaves it unset.
type ClientHealth struct {
	// CPUCores is how many cores the client process could use.
	CPUCores float64 `json:"cpu_cores"`
	// CPUUtilization is the fraction of those cores the process used.
	CPUUtilization float64 `json:"cpu_utilization"`
	// SchedLatencyP99Ms is the Go runtime's goroutine scheduling latency p99.
	SchedLatencyP99Ms float64 `json:"sched_latency_p99_ms"`
	// GCCycles counts the client's garbage collections in the window and
	// GCCPUShare is the CPU of the cycles completed in it (the Go runtime's
	// estimate) over the client's capacity in the window (CPUCores × its
	// length): each cycle delays chunk reads while it marks, so they explain
	// timing error spikes.
	GCCycles   int64   `json:"gc_cycles"`
	GCCPUShare float64 `json:"gc_cpu_share"`
}

// Option configures a Summary.
type Option func(*Summary)

// WithClientBoundLag sets the dispatch-lag p99 above which the run is
// client-bound (default DefaultClientBoundLagP99).
func WithClientBoundLag(d time.Duration) Option {
	return func(s *Summary) {
		if d > 0 {
			s.lagLimit = d
		}
	}
}

// WithCPUSaturation sets the CPU utilisation fraction above which the client
// is saturated (default DefaultCPUSaturation).
func WithCPUSaturation(f float64) Option {
	return func(s *Summary) {
		if f > 0 {
			s.cpuLimit = f
		}
	}
}

// WithPromptDriftLimit sets the |mean prompt drift| above which a profile
// is flagged (default DefaultPromptDriftLimit).
func WithPromptDriftLimit(f float64) Option {
	return func(s *Summary) {
		if f > 0 {
			s.driftLimit = f
		}
	}
}

// Summary accumulates records into per-profile and overall statistics with
// bounded memory (HDR histograms). It works on any consistent clock, so the
// simulator's virtual time serves as well as wall time. It is safe for
// concurrent use; Result may be called at any time.
type Summary struct {
	mu       sync.Mutex
	sla      SLA
	window   Window
	lagLimit time.Duration
	cpuLimit float64
	// driftLimit is the |mean prompt drift| that flags a profile.
	driftLimit float64
	health     *ClientHealth
	shards     []ShardClient
	overall    *group
	profiles   map[string]*group
	excluded   int64
	// unsent counts the counted records the client never sent (cancelled
	// before sending), unsentLate those of them that had been due for
	// longer than lagLimit when they were given up, and unsentWait is the
	// longest such wait: a client that stalls sends nothing, so it leaves
	// no dispatch-lag sample, only requests still waiting at the end.
	unsent, unsentLate int64
	unsentWait         time.Duration
	first              time.Time // earliest scheduled of counted records
	last               time.Time // latest done of counted records
	gapBuf             []int64
	// slots count the counted records by when they were scheduled, in
	// slotWidth steps, for SettlingReport (the window's halves are known
	// only once a live run has ended).
	slots map[int64]*slot
}

// NewSummary returns an empty Summary judging against sla over window w.
func NewSummary(sla SLA, w Window, opts ...Option) *Summary {
	s := &Summary{
		sla:        sla,
		window:     w,
		lagLimit:   DefaultClientBoundLagP99,
		cpuLimit:   DefaultCPUSaturation,
		driftLimit: DefaultPromptDriftLimit,
		overall:    newGroup("overall"),
		profiles:   map[string]*group{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// SetWindow replaces the measured window: it sets the span used for rates
// and filters records added from now on. A runner that learns its window only
// when it starts builds the Summary with a zero Window (records are then
// filtered by their Warmup flag, which marks the same boundary) and sets the
// window when it is known.
func (s *Summary) SetWindow(w Window) {
	s.mu.Lock()
	s.window = w
	s.mu.Unlock()
}

// SetEnd moves the end of the measured window (an interrupted run ends early).
func (s *Summary) SetEnd(t time.Time) {
	s.mu.Lock()
	s.window.End = t
	s.mu.Unlock()
}

// SetShards attaches the client shards' own checks of a split run: the run
// is client-bound when any of them is.
func (s *Summary) SetShards(sh []ShardClient) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shards = append([]ShardClient(nil), sh...)
}

// SetClientHealth attaches the client's self-measurement to the result.
func (s *Summary) SetClientHealth(h ClientHealth) {
	s.mu.Lock()
	s.health = &h
	s.mu.Unlock()
}

// BorrowsRecords says a Summary keeps nothing of a record once added: it
// counts it (Borrower).
func (s *Summary) BorrowsRecords() {}

// Write adds r; it makes a Summary a Sink.
func (s *Summary) Write(r *Record) error {
	s.Add(r)
	return nil
}

// Add counts r if it belongs to the measured window and reports whether it did.
func (s *Summary) Add(r *Record) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.window.Start.IsZero() {
		if !s.window.Contains(r.Scheduled) {
			s.excluded++
			return false
		}
	} else if r.Warmup {
		s.excluded++
		return false
	}
	if s.first.IsZero() || r.Scheduled.Before(s.first) {
		s.first = r.Scheduled
	}
	if r.Done.After(s.last) {
		s.last = r.Done
	}
	if r.Sent.IsZero() && r.Status == StatusCancelled {
		// Done is when the request was given up: it had waited at least
		// Done − Scheduled past its send time (a censored dispatch lag)
		s.unsent++
		if w := r.Done.Sub(r.Scheduled); w > s.lagLimit {
			s.unsentLate++
			s.unsentWait = max(s.unsentWait, w)
		}
	}
	good, goodBut := s.isGood(r)
	s.overall.add(r, good, goodBut)
	s.overall.exceed.count(s.sla, r)
	g := s.profiles[r.Profile]
	if g == nil {
		g = newGroup(r.Profile)
		s.profiles[r.Profile] = g
	}
	g.add(r, good, goodBut)
	g.exceed.count(s.sla, r)
	s.slot(r)
	return true
}

// isGood reports whether r succeeded within every enabled latency clause
// (good), and within every clause but ITL (goodButITL, the goodput of a run
// whose ITL is unmeasurable, StreamReport); a request's ITL is judged at
// the clause's percentile of its own gaps.
func (s *Summary) isGood(r *Record) (good, goodButITL bool) {
	if !s.goodButITL(r) {
		return false, false
	}
	return s.goodITL(r), true
}

// goodButITL reports whether r succeeded within every enabled latency
// clause but ITL.
func (s *Summary) goodButITL(r *Record) bool {
	if r.Status != StatusOK {
		return false
	}
	if c := s.sla.TTFT; c.Max > 0 {
		if ttft, ok := r.TTFT(); !ok || ttft > c.Max {
			return false
		}
	}
	if c := s.sla.E2E; c.Max > 0 && r.E2E() > c.Max {
		return false
	}
	if c := s.sla.TPOT; c.Max > 0 {
		if tpot, ok := r.TPOT(); ok && tpot > c.Max {
			return false
		}
	}
	return true
}

// goodITL reports whether r's ITL at the clause's percentile of its own
// gaps meets the ITL clause (true without one).
func (s *Summary) goodITL(r *Record) bool {
	if c := s.sla.ITL; c.Max > 0 && len(r.TokenGapsUS) > 0 {
		if s.requestITL(r, c.Percentile) > c.Max {
			return false
		}
	}
	return true
}

// Quantile returns the p-th percentile (0..100] of metric m for profile (or
// "" for overall); false when there are no samples.
func (s *Summary) Quantile(profile string, m Metric, p float64) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.overall
	if profile != "" {
		g = s.profiles[profile]
	}
	if g == nil || m < 0 || m >= numMetrics {
		return 0, false
	}
	return g.quantile(m, p)
}

// group accumulates one profile (or everything).
type group struct {
	name                    string
	requests, ok, cancelled int64
	cancelledQueued         int64 // cancelled before a first token
	errors                  map[Status]int64
	httpStatus              map[int]int64
	hist                    [numMetrics]*hdr.Histogram
	maxUS                   [numMetrics]int64
	prompt, cached, output  int64
	good                    int64

	// Plan drift, over successful requests: (server prompt tokens −
	// target) / target where both are known, output / max_tokens where
	// max_tokens is, and the reasoning share of the output.
	driftN      int64
	driftSum    float64
	driftAbs    *hdr.Histogram // |drift| in 1/driftUnit
	fillN       int64
	fillSum     float64
	okOutput    int64
	okReasoning int64

	// exceed counts the samples over each SLA clause's limit.
	exceed exceedance

	// gaps and sameRead count token gaps, and those of 0 µs (StreamReport).
	gaps, sameRead int64
	// goodButITL counts the requests good on every clause but ITL.
	goodButITL int64
}

func newGroup(name string) *group {
	g := &group{name: name, errors: map[Status]int64{}, httpStatus: map[int]int64{},
		driftAbs: hdr.New(1, driftHighest, histDigits)}
	for i := range g.hist {
		g.hist[i] = hdr.New(histLowestUS, histHighestUS, histDigits)
	}
	return g
}

// requestITL is the pct-th percentile (nearest rank) of r's own token gaps,
// which it must have.
func (s *Summary) requestITL(r *Record, pct float64) time.Duration {
	s.gapBuf = appendTokenGaps(s.gapBuf[:0], r)
	idx := int(math.Ceil(pct/100*float64(len(s.gapBuf)))) - 1
	idx = max(0, min(idx, len(s.gapBuf)-1))
	return time.Duration(nthSmallest(s.gapBuf, idx)) * time.Microsecond
}

// nthSmallest returns the value that x[k] would hold were x sorted, in
// linear expected time (Hoare's selection; x is reordered). A request's
// ITL percentile is judged on every record of a day, so a sort of its
// gaps was the judging's main cost.
func nthSmallest(x []int64, k int) int64 {
	lo, hi := 0, len(x)-1
	for lo < hi {
		// median of three as the pivot: sorted and constant gaps, the
		// common cases, then split in the middle
		mid := lo + (hi-lo)/2
		a, b, c := x[lo], x[mid], x[hi]
		pivot := max(min(a, b), min(max(a, b), c))
		if hi-lo >= 64 {
			pivot = samplePivot(x[lo:hi+1], k-lo)
		}
		i, j := lo, hi
		for i <= j {
			for x[i] < pivot {
				i++
			}
			for x[j] > pivot {
				j--
			}
			if i <= j {
				x[i], x[j] = x[j], x[i]
				i++
				j--
			}
		}
		// x[lo..j] ≤ pivot ≤ x[i..hi], and x[j+1..i-1] == pivot
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return x[k]
		}
	}
	return x[k]
}

// samplePivot returns the value of nine of x's, spread evenly over it,
// whose rank among them is k's in x: a pivot near x's k-th smallest, so
// the first split leaves a tenth or so of a long x where a median left
// half (a p95 is judged near the top).
func samplePivot(x []int64, k int) int64 {
	var s [9]int64
	last := len(x) - 1
	for i := range s {
		s[i] = x[i*last/8]
	}
	for i := 1; i < len(s); i++ { // insertion sort
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[(k*8+last/2)/last]
}

// appendTokenGaps appends r's per-token gaps in microseconds: each chunk's
// gap divided by its token count, once per token. A record of one-token
// chunks (no token counts: every simulated record) is its gaps as they are.
func appendTokenGaps(dst []int64, r *Record) []int64 {
	if len(r.TokenCounts) == 0 {
		return append(dst, r.TokenGapsUS...)
	}
	for i, gap := range r.TokenGapsUS {
		n := r.ChunkTokens(i)
		for range n {
			dst = append(dst, gap/int64(n))
		}
	}
	return dst
}

func (g *group) record(m Metric, d time.Duration) { g.recordN(m, d, 1) }

// recordN records n samples of d.
func (g *group) recordN(m Metric, d time.Duration, n int64) {
	us := int64(d / time.Microsecond)
	us = max(histLowestUS, min(us, histHighestUS))
	_ = g.hist[m].RecordValues(us, n) // in range by construction
	g.maxUS[m] = max(g.maxUS[m], us)
}

func (g *group) add(r *Record, good, goodButITL bool) {
	g.requests++
	switch r.Status {
	case StatusOK:
		g.ok++
	case StatusCancelled:
		g.cancelled++
		if r.FirstToken.IsZero() {
			g.cancelledQueued++
		}
	default:
		g.errors[r.Status]++
	}
	// A cancelled stream got its 200 before the window cut it: no error.
	if r.HTTPStatus != 0 && r.Status != StatusOK && r.Status != StatusCancelled {
		g.httpStatus[r.HTTPStatus]++
	}
	if good {
		g.good++
	}
	if goodButITL {
		g.goodButITL++
	}
	if !r.Sent.IsZero() {
		g.record(MetricDispatchLag, r.DispatchLag())
	}
	prompt := r.PromptTokens
	if prompt == 0 && r.Status == StatusOK {
		prompt = r.PromptTokensTarget
	}
	g.output += int64(r.OutputTokens)
	if r.Status != StatusOK {
		return
	}
	g.prompt += int64(prompt)
	g.cached += int64(r.CachedTokens)
	g.addDrift(r)
	if ttft, ok := r.TTFT(); ok {
		g.record(MetricTTFT, ttft)
	}
	if tpot, ok := r.TPOT(); ok {
		g.record(MetricTPOT, tpot)
	}
	g.record(MetricE2E, r.E2E())
	g.addStream(r)
	for i, gap := range r.TokenGapsUS {
		n := r.ChunkTokens(i)
		g.recordN(MetricITL, time.Duration(gap/int64(n))*time.Microsecond, int64(n))
	}
}

// addDrift accumulates how far successful request r strayed from its plan.
func (g *group) addDrift(r *Record) {
	if r.PromptTokens > 0 && r.PromptTokensTarget > 0 {
		d := float64(r.PromptTokens-r.PromptTokensTarget) / float64(r.PromptTokensTarget)
		g.driftN++
		g.driftSum += d
		v := min(int64(math.Round(math.Abs(d)*driftUnit)), driftHighest)
		_ = g.driftAbs.RecordValue(v) // in range by construction
	}
	if r.MaxTokens > 0 {
		g.fillN++
		g.fillSum += float64(r.OutputTokens) / float64(r.MaxTokens)
	}
	g.okOutput += int64(r.OutputTokens)
	g.okReasoning += int64(r.ReasoningTokens)
}

func (g *group) quantile(m Metric, p float64) (time.Duration, bool) {
	h := g.hist[m]
	if h.TotalCount() == 0 {
		return 0, false
	}
	v := min(h.ValueAtPercentile(p), g.maxUS[m])
	if p >= 100 {
		v = g.maxUS[m]
	}
	return time.Duration(v) * time.Microsecond, true
}

func (g *group) errorCount() int64 {
	var n int64
	for _, c := range g.errors {
		n += c
	}
	return n
}
