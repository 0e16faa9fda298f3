package result

import (
	"math"
	"sort"
	"strconv"
	"time"
)

// Latency is a distribution in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// Stats summarises one profile or the whole run.
type Stats struct {
	// Name is the profile, or "overall".
	Name string `json:"name"`
	// Requests counts every request scheduled in the window:
	// Requests = OK + Errors + Cancelled.
	Requests  int64 `json:"requests"`
	OK        int64 `json:"ok"`
	Errors    int64 `json:"errors"`
	Cancelled int64 `json:"cancelled"`
	// ErrorsByClass splits Errors by status (http_error, timeout, stream_error).
	ErrorsByClass map[Status]int64 `json:"errors_by_class,omitempty"`
	// ErrorsByHTTPStatus counts failed requests by the HTTP code they got;
	// cancelled requests are not failed, whatever code they had received.
	ErrorsByHTTPStatus map[int]int64 `json:"errors_by_http_status,omitempty"`
	// ErrorRate is Errors / (OK + Errors); cancelled requests are neither.
	ErrorRate float64 `json:"error_rate"`

	TTFT Latency `json:"ttft"`
	// ITL is per token: a chunk of n tokens adds n samples of its gap / n
	// (MetricITL), so Count is tokens, not chunks.
	ITL         Latency `json:"itl"`
	TPOT        Latency `json:"tpot"`
	E2E         Latency `json:"e2e"`
	DispatchLag Latency `json:"dispatch_lag"`

	// PromptTokens and CachedTokens sum successful requests (server-reported
	// prompt length, else the target); OutputTokens includes the partial
	// output of failed and cancelled streams, which the server did produce.
	PromptTokens int64 `json:"prompt_tokens"`
	CachedTokens int64 `json:"cached_tokens"`
	OutputTokens int64 `json:"output_tokens"`

	RequestsPerSecond     float64 `json:"requests_per_second"`
	OutputTokensPerSecond float64 `json:"output_tokens_per_second"`
	TotalTokensPerSecond  float64 `json:"total_tokens_per_second"`
	// GoodRequests met every enabled SLA latency clause individually;
	// GoodputPerSecond is their rate.
	GoodRequests     int64   `json:"good_requests"`
	GoodputPerSecond float64 `json:"goodput_per_second"`

	// Drift compares the successful requests with their plan.
	Drift Drift `json:"drift"`

	// Exceedance counts, for each enabled SLA latency clause, the samples
	// over its limit (the capacity estimator's input).
	Exceedance []Exceedance `json:"sla_exceedance,omitempty"`
}

// Drift compares what a profile's live requests were with what the plan
// (the session scripts) targeted. Only successful requests count: a failed
// one's history was abandoned.
type Drift struct {
	// Requests counts the successful requests with both a target and a
	// server-reported prompt length (usage.prompt_tokens); the prompt
	// fields are over them and zero when there are none.
	Requests int64 `json:"requests"`
	// PromptMean is the mean of (server prompt tokens − target) / target:
	// negative when live prompts were shorter than planned.
	PromptMean float64 `json:"prompt_mean"`
	// PromptAbsP95 is the 95th percentile of |(server − target) / target|.
	PromptAbsP95 float64 `json:"prompt_abs_p95"`
	// OutputFill is the mean of output tokens / max_tokens over successful
	// requests that sent max_tokens (1 when every reply used its budget).
	OutputFill float64 `json:"output_fill"`
	// ReasoningShare is the share of the output tokens streamed as
	// reasoning (Record.ReasoningTokens).
	ReasoningShare float64 `json:"reasoning_share"`
}

// DriftReport says whether some profile's live prompts strayed from the
// plan by more than Limit.
type DriftReport struct {
	// Limit is the |mean prompt drift| above which a profile is flagged.
	Limit float64 `json:"limit"`
	// Flagged is set when some profile exceeded it ("prompt drift");
	// Reasons names each such profile.
	Flagged bool     `json:"prompt_drift"`
	Reasons []string `json:"reasons,omitempty"`
}

// ClientReport says whether the client itself limited the measurement.
type ClientReport struct {
	Health *ClientHealth `json:"health,omitempty"`
	// DispatchLagP99Ms is the overall dispatch-lag p99; LagLimitMs its limit.
	DispatchLagP99Ms float64 `json:"dispatch_lag_p99_ms"`
	LagLimitMs       float64 `json:"lag_limit_ms"`
	// Unsent counts the window's requests the client never sent (due
	// before the run stopped, cancelled before sending); UnsentLate those
	// of them that had been due for longer than the lag limit, and
	// UnsentWaitMaxMs the longest such wait. More than UnsentLateShare of
	// the window's requests unsent late marks the run client-bound: the
	// client fell behind its schedule without sending, which leaves no
	// dispatch-lag sample.
	Unsent          int64   `json:"unsent"`
	UnsentLate      int64   `json:"unsent_late"`
	UnsentWaitMaxMs float64 `json:"unsent_wait_max_ms,omitempty"`
	// Bound marks the run untrustworthy; Reasons says why.
	Bound   bool     `json:"client_bound"`
	Reasons []string `json:"reasons,omitempty"`
	// Shards is each client process's own check when the run was split
	// over several (run.clients); any shard bound makes the run bound.
	Shards []ShardClient `json:"shards,omitempty"`
}

// ShardClient is one client shard's self-check in a split run: the same
// dispatch-lag and CPU rules over its own records and its own process.
type ShardClient struct {
	Shard int `json:"shard"`
	// Name says where it ran (a process id, a pod).
	Name             string        `json:"name"`
	Requests         int64         `json:"requests"`
	Health           *ClientHealth `json:"health,omitempty"`
	DispatchLagP99Ms float64       `json:"dispatch_lag_p99_ms"`
	// UnsentLate counts its requests due longer than the lag limit and
	// never sent (ClientReport.UnsentLate).
	UnsentLate int64 `json:"unsent_late"`
	// StartSkewMs is how late the shard started against the agreed instant.
	StartSkewMs float64  `json:"start_skew_ms"`
	Bound       bool     `json:"client_bound"`
	Reasons     []string `json:"reasons,omitempty"`
}

// Result is a Summary's JSON-able snapshot.
type Result struct {
	Window struct {
		Start    time.Time `json:"start"`
		End      time.Time `json:"end"`
		Seconds  float64   `json:"seconds"`
		Inferred bool      `json:"inferred"`
	} `json:"window"`
	// Excluded counts records outside the window (warm-up, or after the end).
	Excluded int64        `json:"excluded"`
	Overall  Stats        `json:"overall"`
	Profiles []Stats      `json:"profiles"`
	Client   ClientReport `json:"client"`
	// Drift flags profiles whose live context lengths strayed from the plan.
	Drift DriftReport `json:"drift"`
	// Settling compares the window's halves: was the run still settling?
	Settling SettlingReport `json:"settling"`
	// Stream says whether the token timing was measurable (bursts).
	Stream StreamReport `json:"stream"`
	SLA    Verdict      `json:"sla"`
}

// Result computes the current statistics and SLA verdict.
func (s *Summary) Result() *Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := &Result{Excluded: s.excluded}
	start, end := s.window.Start, s.window.End
	if start.IsZero() {
		start, end = s.first, s.last
		res.Window.Inferred = true
	} else if end.IsZero() {
		end = s.last
	}
	res.Window.Start, res.Window.End = start, end
	secs := end.Sub(start).Seconds()
	if secs < 0 {
		secs = 0
	}
	res.Window.Seconds = secs

	itlUnmeasurable := s.streamLocked().ITLUnmeasurable
	res.Overall = s.overall.stats(secs, itlUnmeasurable)
	res.Overall.Exceedance = s.overall.exceed.list(s.sla)
	names := make([]string, 0, len(s.profiles))
	for n := range s.profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st := s.profiles[n].stats(secs, itlUnmeasurable)
		st.Exceedance = s.profiles[n].exceed.list(s.sla)
		res.Profiles = append(res.Profiles, st)
	}

	c := &res.Client
	c.Health = s.health
	c.LagLimitMs = ms(s.lagLimit)
	if lag, ok := s.overall.quantile(MetricDispatchLag, 99); ok {
		c.DispatchLagP99Ms = ms(lag)
		if lag > s.lagLimit {
			c.Bound = true
			c.Reasons = append(c.Reasons, "dispatch lag p99 "+fmtDuration(lag)+" > "+fmtDuration(s.lagLimit))
		}
	}
	c.Unsent, c.UnsentLate, c.UnsentWaitMaxMs = s.unsent, s.unsentLate, ms(s.unsentWait)
	if n := res.Overall.Requests; s.unsentLate > 0 && float64(s.unsentLate) > UnsentLateShare*float64(n) {
		c.Bound = true
		c.Reasons = append(c.Reasons, strconv.FormatInt(s.unsentLate, 10)+" of "+strconv.FormatInt(n, 10)+
			" requests due in the window never sent (waiting up to "+fmtDuration(s.unsentWait)+", over "+fmtDuration(s.lagLimit)+")")
	}
	if h := s.health; h != nil && h.CPUUtilization >= s.cpuLimit {
		c.Bound = true
		c.Reasons = append(c.Reasons, "client CPU saturated ("+fmtPercent(h.CPUUtilization)+" of "+fmtFloat(h.CPUCores)+" cores)")
	}
	for _, sh := range s.shards {
		c.Shards = append(c.Shards, sh)
		if sh.Bound {
			c.Bound = true
			for _, r := range sh.Reasons {
				c.Reasons = append(c.Reasons, "client shard "+strconv.Itoa(sh.Shard)+" ("+sh.Name+"): "+r)
			}
		}
	}
	res.Drift.Limit = s.driftLimit
	for _, st := range res.Profiles {
		if d := st.Drift; d.Requests > 0 && math.Abs(d.PromptMean) > s.driftLimit {
			res.Drift.Flagged = true
			res.Drift.Reasons = append(res.Drift.Reasons, st.Name+" prompt drift "+fmtSignedPercent(d.PromptMean)+
				" (mean over "+strconv.FormatInt(d.Requests, 10)+" requests, |drift| p95 "+fmtPercent(d.PromptAbsP95)+
				") beyond ±"+fmtPercent(s.driftLimit))
		}
	}
	res.Settling = s.settlingLocked(start, end, res.Window.Inferred)
	res.Stream = s.streamLocked()
	if res.Stream.ITLUnmeasurable && c.Bound {
		res.Stream.Reason += "; the run is client-bound as well, and a client that reads late also reads chunks in bursts"
	}
	res.SLA = s.evaluateLocked()
	return res
}

// stats are g's statistics over secs; without a measurable ITL the goodput
// leaves the ITL clause out, as the verdict does.
func (g *group) stats(secs float64, itlUnmeasurable bool) Stats {
	good := g.good
	if itlUnmeasurable {
		good = g.goodButITL
	}
	st := Stats{
		Name:         g.name,
		Requests:     g.requests,
		OK:           g.ok,
		Errors:       g.errorCount(),
		Cancelled:    g.cancelled,
		PromptTokens: g.prompt,
		CachedTokens: g.cached,
		OutputTokens: g.output,
		GoodRequests: good,
	}
	if len(g.errors) > 0 {
		st.ErrorsByClass = make(map[Status]int64, len(g.errors))
		for k, v := range g.errors {
			st.ErrorsByClass[k] = v
		}
	}
	if len(g.httpStatus) > 0 {
		st.ErrorsByHTTPStatus = make(map[int]int64, len(g.httpStatus))
		for k, v := range g.httpStatus {
			st.ErrorsByHTTPStatus[k] = v
		}
	}
	if n := st.OK + st.Errors; n > 0 {
		st.ErrorRate = float64(st.Errors) / float64(n)
	}
	st.TTFT = g.latency(MetricTTFT)
	st.ITL = g.latency(MetricITL)
	st.TPOT = g.latency(MetricTPOT)
	st.E2E = g.latency(MetricE2E)
	st.DispatchLag = g.latency(MetricDispatchLag)
	st.Drift = g.drift()
	if secs > 0 {
		st.RequestsPerSecond = float64(g.ok) / secs
		st.OutputTokensPerSecond = float64(g.output) / secs
		st.TotalTokensPerSecond = float64(g.output+g.prompt) / secs
		st.GoodputPerSecond = float64(good) / secs
	}
	return st
}

func (g *group) drift() Drift {
	d := Drift{Requests: g.driftN}
	if g.driftN > 0 {
		d.PromptMean = g.driftSum / float64(g.driftN)
		d.PromptAbsP95 = float64(g.driftAbs.ValueAtPercentile(95)) / driftUnit
	}
	if g.fillN > 0 {
		d.OutputFill = g.fillSum / float64(g.fillN)
	}
	if g.okOutput > 0 {
		d.ReasoningShare = float64(g.okReasoning) / float64(g.okOutput)
	}
	return d
}

func (g *group) latency(m Metric) Latency {
	l := Latency{Count: g.hist[m].TotalCount()}
	if l.Count == 0 {
		return l
	}
	for _, q := range []struct {
		p   float64
		dst *float64
	}{{50, &l.P50}, {90, &l.P90}, {95, &l.P95}, {99, &l.P99}, {100, &l.Max}} {
		d, _ := g.quantile(m, q.p)
		*q.dst = ms(d)
	}
	return l
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
