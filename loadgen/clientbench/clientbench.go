// Package clientbench measures how accurately a load client times streamed
// responses: it runs a client against a testserver, joins every record with
// the server's own log of when each chunk was actually written, and reports
// the client's timing error, dispatch lag and throughput. The accurate
// ceiling is the most concurrent streams at which the errors stay within
// bounds. External clients (Python comparisons) are measured the same way:
// they write result.Record JSON lines, tagged with the X-Request-Id they sent.
package clientbench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/loadgen/testserver"
	"github.com/spoc-project/spoc/result"
)

// Accuracy bounds of the accurate ceiling.
const (
	DefaultITLErrorP99    = 2 * time.Millisecond
	DefaultDispatchLagP99 = 5 * time.Millisecond
)

// Level is the measurement of one client at one concurrency.
type Level struct {
	Client  string `json:"client"`
	Streams int    `json:"streams"`
	// Requests counts measured-window records; OK the successful ones.
	Requests int64 `json:"requests"`
	OK       int64 `json:"ok"`
	// Timed counts streams whose chunks were compared with the server's
	// emissions (finished ones and those cut at the window end); Unmatched
	// those whose chunks did not match the server's log.
	Timed     int64 `json:"timed"`
	Unmatched int64 `json:"unmatched"`
	// TokensPerSecond is streamed output tokens per second in the window.
	TokensPerSecond float64 `json:"tokens_per_second"`
	// Timing errors against the server's actual emission times: the first
	// token's arrival time, and each inter-token gap.
	TTFTErrP50Ms float64 `json:"ttft_err_p50_ms"`
	TTFTErrP99Ms float64 `json:"ttft_err_p99_ms"`
	ITLErrP50Ms  float64 `json:"itl_err_p50_ms"`
	ITLErrP90Ms  float64 `json:"itl_err_p90_ms"`
	ITLErrP99Ms  float64 `json:"itl_err_p99_ms"`
	ITLErrMaxMs  float64 `json:"itl_err_max_ms"`
	// Arrival offsets are the client's read time of each chunk minus the
	// server's emission time, signed: a negative offset means the server's
	// timestamp came after the client had read the chunk (the server was
	// late to record it), a positive one that the client was late to read.
	ArrivalOffsetP01Ms float64 `json:"arrival_offset_p01_ms"`
	ArrivalOffsetP50Ms float64 `json:"arrival_offset_p50_ms"`
	ArrivalOffsetP99Ms float64 `json:"arrival_offset_p99_ms"`
	// DispatchLagP99Ms is the client's sent-minus-scheduled p99.
	DispatchLagP99Ms float64 `json:"dispatch_lag_p99_ms"`
	// ClientCores is the CPU the client used, in cores (1 = one core busy),
	// when known; CPUPerTokenUS is that per streamed token, in CPU
	// microseconds: the load-independent cost of the client.
	ClientCores   float64 `json:"client_cores,omitempty"`
	CPUPerTokenUS float64 `json:"cpu_per_token_us,omitempty"`
	// ServerCores is the test server's CPU use over the window, in cores,
	// when the bench started the server itself. Near one core the server,
	// not the client, limits the level: at 95 % of a core the kernel's
	// real-time throttle (sched_rt_runtime_us) stalls it for 50 ms.
	ServerCores float64 `json:"server_cores,omitempty"`
	// ServerCPUs is how many CPUs the server could use (its taskset list,
	// or all of them); 0 means one.
	ServerCPUs int `json:"server_cpus,omitempty"`
	// GCCycles counts the client's garbage collections in the window (Go
	// client only).
	GCCycles int64 `json:"gc_cycles,omitempty"`
	// Accurate is true when ITL error p99 and dispatch lag p99 are within bounds.
	Accurate bool `json:"accurate"`
}

// Workload is the fixed request shape of a measurement.
type Workload struct {
	Streams      int
	Warmup       time.Duration
	Duration     time.Duration
	PromptTokens int
	MaxTokens    int
}

// GoClient names spoc's own client in levels.
const GoClient = "spoc (Go)"

// ServerBound is the test server's CPU use, per CPU it may use, from which
// a level measures the server as much as the client: the kernel throttles
// real-time tasks at 95 % of a core, and the server's timers slip before
// that.
const ServerBound = 0.9

// ServerBound reports whether the test server was (nearly) saturated.
func (l *Level) ServerBound() bool {
	return l.ServerCores >= ServerBound*float64(max(1, l.ServerCPUs))
}

// CountCPUs counts the CPUs of a taskset list such as "0", "0-3" or "0,2-3".
func CountCPUs(list string) (int, error) {
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("CPU list %q: %w", list, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0, fmt.Errorf("CPU list %q: %w", list, err)
			}
		}
		if a < 0 || b < a {
			return 0, fmt.Errorf("CPU list %q: bad range %q", list, part)
		}
		n += b - a + 1
	}
	return n, nil
}

// Ceilings returns each client's accurate ceiling: the most streams at which
// it was accurate with every lower level measured accurate too (0 when its
// lowest level was not). A level that passes above a failing one is noise
// in the client's favour, not a ceiling; a server-bound level ends the run
// too, since there the machine, not the client, sets the pace (its streams
// no longer get their nominal token rate).
func Ceilings(levels []*Level) map[string]int {
	byClient := map[string][]*Level{}
	for _, l := range levels {
		byClient[l.Client] = append(byClient[l.Client], l)
	}
	out := make(map[string]int, len(byClient))
	for c, ls := range byClient {
		sort.SliceStable(ls, func(i, j int) bool { return ls[i].Streams < ls[j].Streams })
		out[c] = 0
		for _, l := range ls {
			if !l.Accurate || l.ServerBound() {
				break
			}
			out[c] = l.Streams
		}
	}
	return out
}

// RunGo measures loadgen itself against the server at url.
func RunGo(ctx context.Context, url string, w Workload) (*Level, error) {
	if err := ResetLog(ctx, url); err != nil {
		return nil, err
	}
	tr := loadgen.NewTransport(w.Streams)
	defer tr.CloseIdleConnections()
	r, err := loadgen.New(loadgen.Options{
		Target: url, Model: "bench", Users: w.Streams,
		Ramp: min(w.Warmup, time.Second), Warmup: w.Warmup, Duration: w.Duration,
		RequestTimeout: time.Minute, FirstByteTimeout: 30 * time.Second,
		RunID: "go", Renderer: loadgen.FillerRenderer{}, HTTPClient: &http.Client{Transport: tr},
	})
	if err != nil {
		return nil, err
	}
	// Keep only the timing of each record, in a pointer-light form: spoc
	// run streams its records to a file and keeps none, and a heap of
	// retained records would make every GC cycle mark more than a real
	// run's does.
	var recs []timing
	rep, err := r.Run(ctx, loadgen.SyntheticSource{Turns: 1, PrefixTokens: w.PromptTokens, MaxTokens: w.MaxTokens},
		result.SinkFunc(func(rec *result.Record) error { recs = append(recs, newTiming(rec)); return nil }))
	if err != nil {
		return nil, fmt.Errorf("run loadgen: %w", err)
	}
	log, err := FetchLog(ctx, url)
	if err != nil {
		return nil, err
	}
	lv := compare(GoClient, w.Streams, recs, log, rep.Window)
	lv.SetCPU(rep.Health.CPUUtilization * rep.Health.CPUCores)
	lv.GCCycles = rep.Health.GCCycles
	return lv, nil
}

// SetCPU records the client's CPU use in cores and derives the cost per token.
func (l *Level) SetCPU(cores float64) {
	l.ClientCores = cores
	if l.TokensPerSecond > 0 {
		l.CPUPerTokenUS = cores * 1e6 / l.TokensPerSecond
	}
}

// ResetLog clears the server's request log before a measurement.
func ResetLog(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/_spoc/log/reset", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reset test server log: %w", err)
	}
	resp.Body.Close()
	return nil
}

// FetchLog downloads the server's request log.
func FetchLog(ctx context.Context, url string) ([]testserver.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/_spoc/log", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch test server log: %w", err)
	}
	defer resp.Body.Close()
	var log []testserver.Request
	if err := json.NewDecoder(resp.Body).Decode(&log); err != nil {
		return nil, fmt.Errorf("decode test server log: %w", err)
	}
	return log, nil
}

// timing is what Compare needs of a record; times are Unix nanoseconds.
type timing struct {
	id                     string
	scheduled, sent, first int64
	status                 result.Status
	tokens                 int
	gapsUS                 []int64
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func newTiming(r *result.Record) timing {
	return timing{id: r.RequestID, scheduled: unixNano(r.Scheduled), sent: unixNano(r.Sent), first: unixNano(r.FirstToken),
		status: r.Status, tokens: r.OutputTokens, gapsUS: r.TokenGapsUS}
}

// Compare joins records with the server log (by request id) and computes the
// client's errors over the records scheduled in window.
func Compare(client string, streams int, recs []*result.Record, log []testserver.Request, window result.Window) *Level {
	ts := make([]timing, len(recs))
	for i, r := range recs {
		ts[i] = newTiming(r)
	}
	return compare(client, streams, ts, log, window)
}

func compare(client string, streams int, recs []timing, log []testserver.Request, window result.Window) *Level {
	emitted := make(map[string][]time.Time, len(log))
	for _, q := range log {
		emitted[q.ID] = q.Emitted
	}
	lv := &Level{Client: client, Streams: streams}
	var ttftErr, itlErr, lag, offset []float64
	var tokens int64
	for _, r := range recs {
		if !window.Contains(time.Unix(0, r.scheduled)) {
			continue
		}
		lv.Requests++
		tokens += int64(r.tokens)
		if r.sent != 0 {
			lag = append(lag, ms(time.Duration(r.sent-r.scheduled)))
		}
		if r.status == result.StatusOK {
			lv.OK++
		}
		// Streams cut at the window end are timed as well as finished ones:
		// compare the chunks the client read with the first emissions.
		if r.first == 0 || (r.status != result.StatusOK && r.status != result.StatusCancelled) {
			continue
		}
		em, ok := emitted[r.id]
		if !ok || len(em) < len(r.gapsUS)+1 || (r.status == result.StatusOK && len(em) != len(r.gapsUS)+1) {
			lv.Unmatched++
			continue
		}
		lv.Timed++
		first := time.Unix(0, r.first)
		ttftErr = append(ttftErr, abs(ms(first.Sub(em[0]))))
		at := first
		offset = append(offset, ms(at.Sub(em[0])))
		for i, g := range r.gapsUS {
			gap := time.Duration(g) * time.Microsecond
			itlErr = append(itlErr, abs(ms(gap-em[i+1].Sub(em[i]))))
			at = at.Add(gap)
			offset = append(offset, ms(at.Sub(em[i+1])))
		}
	}
	if secs := window.End.Sub(window.Start).Seconds(); secs > 0 {
		lv.TokensPerSecond = float64(tokens) / secs
	}
	lv.TTFTErrP50Ms, lv.TTFTErrP99Ms = quantile(ttftErr, 0.5), quantile(ttftErr, 0.99)
	lv.ITLErrP50Ms, lv.ITLErrP90Ms = quantile(itlErr, 0.5), quantile(itlErr, 0.9)
	lv.ITLErrP99Ms, lv.ITLErrMaxMs = quantile(itlErr, 0.99), quantile(itlErr, 1)
	lv.DispatchLagP99Ms = quantile(lag, 0.99)
	lv.ArrivalOffsetP01Ms, lv.ArrivalOffsetP50Ms = quantile(offset, 0.01), quantile(offset, 0.5)
	lv.ArrivalOffsetP99Ms = quantile(offset, 0.99)
	lv.Accurate = lv.Timed > 0 && lv.Unmatched*100 <= lv.Timed &&
		lv.ITLErrP99Ms <= ms(DefaultITLErrorP99) && lv.DispatchLagP99Ms <= ms(DefaultDispatchLagP99)
	return lv
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	i := int(q*float64(len(v))+0.5) - 1
	return v[max(0, min(i, len(v)-1))]
}
