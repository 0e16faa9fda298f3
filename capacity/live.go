package capacity

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/telemetry"
)

// ErrNothingServed: a live server answered every request of a run with an
// HTTP error; the run measured no capacity.
var ErrNothingServed = errors.New("the server served nothing")

// evaluateLive runs params at load on a server of the launcher (the one
// running when its flags are the same, servers.go) over HTTP in real time,
// scraping or querying its telemetry, and checks the server outlived the
// run: a dead server's errors are no measurement of its capacity.
func (e *Evaluator) evaluateLive(ctx context.Context, params map[string]any, load Load, out Outputs) (ev *Evaluation, err error) {
	if load.Autoscale != nil {
		return nil, fmt.Errorf("%w: autoscaling is a model of the simulated fleet; a live engine runs the replicas it has", ErrBadSetup)
	}
	gen, err := e.workloadFor(load)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	srv, err := e.server(ctx, params, load)
	if err != nil {
		return nil, err
	}
	warm := e.curWarm
	ep := srv.Endpoint()
	defer func() {
		// A run that failed may have killed the server: the next
		// evaluation must not reuse it blindly. Say what really happens to
		// it: spoc stops only a server it started.
		if err == nil {
			return
		}
		interrupted := ctx.Err() != nil
		switch owned := ownsServers(e.launcher); {
		case !owned && interrupted:
			e.logger.Warn("interrupted: the run's requests were cancelled; the external server keeps running (spoc never stops a server it did not start)", "endpoint", ep.BaseURL)
		case !owned:
			e.logger.Warn("the run failed; the external server is left as it is (spoc never stops a server it did not start): the next run checks it again", "endpoint", ep.BaseURL, "err", err)
		case interrupted:
			e.logger.Warn("interrupted: stopping the server spoc started", "err", err)
		default:
			e.logger.Warn("stopping the server after a failed run; the next run starts a new one", "err", err)
		}
		if serr := e.stopLocked(ctx); serr != nil {
			e.logger.Warn("stop engine after a failed run", "err", serr)
		}
	}()

	tel := e.setup.Telemetry
	var targets []telemetry.Target
	for i, u := range ep.MetricsURLs {
		if tel.NoServerMetrics != "" {
			// spoc does not know what the server's names mean
			break
		}
		name := fmt.Sprintf("engine%d", i)
		if i < len(ep.MetricsNames) && ep.MetricsNames[i] != "" {
			name = ep.MetricsNames[i] // the pod of a Kubernetes replica
		}
		targets = append(targets, telemetry.Target{Name: name, URL: u, Metrics: tel.ServerMetrics})
	}
	targets = append(targets, e.setup.Telemetry.Targets...)
	var coll *telemetry.Collector
	tctx, stopTelemetry := context.WithCancel(ctx)
	var twg sync.WaitGroup
	// With a Prometheus server configured, the run's window is queried from
	// it afterwards instead of scraping the targets directly.
	if tel.Enabled && len(targets) > 0 && tel.Prometheus == "" {
		coll, err = telemetry.NewCollector(targets, tel.Interval, telemetry.Options{
			JSONL: out.Telemetry, Logger: e.logger,
			Derive: telemetry.DeriveOptions{ClockFraction: tel.StragglerClockDrop, TPSize: e.setup.Deployment.TensorParallelSize},
		})
		if err != nil {
			stopTelemetry()
			return nil, fmt.Errorf("telemetry: %w", err)
		}
		twg.Add(1)
		go func() { defer twg.Done(); _ = coll.Run(tctx) }()
	}
	defer func() { stopTelemetry(); twg.Wait() }()

	model := ep.Model
	if model == "" {
		model = e.model()
	}
	opts := loadgen.Options{
		Target: ep.BaseURL, Endpoint: e.setup.Client.Endpoint, Model: model, APIKey: e.setup.Client.APIKey, APIKeyPlainHTTP: e.setup.Client.APIKeyPlainHTTP,
		Users: load.Users, Ramp: load.Ramp, Warmup: load.Warmup, Duration: load.Duration, ThinkTimeScale: load.ThinkTimeScale,
		Phase: e.phase(load), PhaseSeed: e.phaseSeed(load), Arrivals: e.arrivals(load),
		RequestTimeout: e.setup.Client.RequestTimeout, FirstByteTimeout: e.setup.Client.FirstByteTimeout,
		ExactOutputLength: e.setup.Client.ExactOutputLength, HistoryPolicy: e.setup.Client.HistoryPolicy,
		SessionHeader: e.setup.Client.SessionHeader, SessionKey: e.setup.Client.SessionKey, RunID: fmt.Sprintf("run-%d-%d", load.Users, time.Now().Unix()),
		Renderer: gen, Logger: e.logger,
	}
	summaryOpts := []result.Option{result.WithClientBoundLag(e.setup.Client.ClientBoundLagP99), result.WithPromptDriftLimit(e.setup.Client.PromptDriftLimit)}
	sum := result.NewSummary(e.setup.SLA, result.Window{}, summaryOpts...)
	sinks := []result.Sink{sum}
	var w *result.Writer
	if out.Records != nil {
		w = result.NewWriter(out.Records)
		sinks = append(sinks, w)
	}
	// One client, or the run split over several processes (run.clients):
	// each shard's records also feed its own summary, for its own
	// client-bound check.
	var (
		execute   func(context.Context, result.Sink) (*loadgen.Report, error)
		progress  interface{ Progress() loadgen.Progress }
		split     *loadgen.SplitReport
		shardSums []*result.Summary
	)
	if clients := max(e.setup.Client.Clients, 1); clients > 1 || e.setup.Client.Pods != nil {
		spec, mid := e.workloadSpecFor(load)
		sp, err := loadgen.NewSplitter(loadgen.SplitOptions{Options: opts, Clients: clients, Workload: spec, MaxModelLen: e.setup.Deployment.MaxModelLen, MidSession: mid,
			Pods: e.setup.Client.Pods, Logger: e.logger})
		if err != nil {
			return nil, err
		}
		for range clients {
			shardSums = append(shardSums, result.NewSummary(e.setup.SLA, result.Window{}, summaryOpts...))
		}
		sinks = append(sinks, result.SinkFunc(func(r *result.Record) error { return shardSums[r.Shard].Write(r) }))
		progress = sp
		execute = func(ctx context.Context, sink result.Sink) (*loadgen.Report, error) {
			var err error
			split, err = sp.Run(ctx, sink)
			if split == nil {
				return nil, err
			}
			return &split.Report, err
		}
	} else {
		runner, err := loadgen.New(opts)
		if err != nil {
			return nil, err
		}
		progress = runner
		execute = func(ctx context.Context, sink result.Sink) (*loadgen.Report, error) {
			return runner.Run(ctx, gen, sink)
		}
	}
	report := out.Progress
	if watch := e.watcher(); watch != nil {
		started, length := time.Now(), load.Warmup+load.Duration
		report = func(pr loadgen.Progress) {
			if out.Progress != nil {
				out.Progress(pr)
			}
			watch(RunStatus{Load: load, Elapsed: time.Since(started), Length: length, Progress: pr})
		}
	}
	stopProgress := watchProgress(progress, report)
	rep, err := execute(ctx, result.Tee(sinks...))
	stopProgress()
	if w != nil {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write records: %w", cerr)
		}
	}
	interrupted := err != nil && rep != nil && rep.Interrupted && ctx.Err() != nil
	if err != nil && !interrupted {
		return nil, err
	}
	if !interrupted {
		// A server that died during the run failed its requests: that is
		// no measurement of its capacity, so no verdict either.
		if aerr := engine.Alive(ctx, srv); aerr != nil {
			return nil, fmt.Errorf("after the run at %d users: %w", load.Users, aerr)
		}
	}
	if split != nil {
		sum.SetShards(shardClients(split, shardSums))
	} else {
		sum.SetClientHealth(rep.Health)
	}
	sum.SetWindow(rep.Window)
	res := sum.Result()
	if o := res.Overall; !interrupted && o.OK == 0 && o.Errors > 0 && o.ErrorsByClass[result.StatusHTTPError] == o.Errors {
		// The server answered every request with an error: it serves
		// nothing, so this is no point of a capacity curve.
		return nil, fmt.Errorf("%w: every one of %d requests at %d users got an HTTP error %v", ErrNothingServed, o.Errors, load.Users, o.ErrorsByHTTPStatus)
	}
	ev = &Evaluation{Users: load.Users, Params: params, Provenance: e.provenance(ep.BaseURL), Summary: res, Verdict: res.SLA, Pass: res.SLA.Pass, Failed: res.SLA.First(),
		Interrupted: interrupted, Scheduled: rep.Scheduled, WarmCache: warm, Sessions: rep.Sessions}
	if tel.Enabled {
		ev.NoServerMetrics = tel.NoServerMetrics
	}
	if interrupted {
		// What was measured before Ctrl-C is returned with the error: a
		// caller may print it, but it is no verdict.
		return ev, err
	}
	derive := telemetry.DeriveOptions{ClockFraction: tel.StragglerClockDrop, TPSize: e.setup.Deployment.TensorParallelSize}
	switch {
	case coll != nil:
		stopTelemetry()
		twg.Wait()
		sig := coll.Window(rep.Window.Start, rep.Window.End)
		ev.Signals = &sig
	case tel.Enabled && tel.Prometheus != "":
		store, qerr := telemetry.QueryRange(ctx, tel.Prometheus, rep.Window.Start, rep.Window.End,
			telemetry.QueryOptions{Step: tel.Interval, Queries: prometheusQueries(tel)})
		if qerr != nil {
			// the load run stands on its own; the gap is logged, not fatal
			e.logger.Warn("telemetry query failed; the run has no engine or GPU signals", "prometheus", tel.Prometheus, "err", qerr)
			break
		}
		sig := store.Window(rep.Window.Start, rep.Window.End, derive)
		ev.Signals = &sig
	}
	return ev, nil
}

// prometheusQueries are the queries of a run's telemetry from Prometheus:
// the catalog's, or for a server with names of its own (or none known)
// its engine metrics by those names (or left out), with
// telemetry.queries over them.
func prometheusQueries(tel Telemetry) telemetry.Queries {
	if tel.ServerMetrics == nil && tel.NoServerMetrics == "" {
		return tel.Queries
	}
	q := telemetry.ServerQueries(tel.ServerMetrics)
	for k, v := range tel.Queries {
		q[k] = v
	}
	return q
}

// watchProgress calls fn with the runner's counters every second until the
// returned stop is called; a nil fn watches nothing.
func watchProgress(r interface{ Progress() loadgen.Progress }, fn func(loadgen.Progress)) (stop func()) {
	if fn == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn(r.Progress())
			}
		}
	}()
	return func() { close(done); <-finished }
}

// shardClients is each client shard's own client-bound check: its records'
// dispatch lag and requests left unsent, and its own process's CPU, over
// the run's window.
func shardClients(split *loadgen.SplitReport, sums []*result.Summary) []result.ShardClient {
	out := make([]result.ShardClient, 0, len(split.Shards))
	for i, sh := range split.Shards {
		s := sums[i]
		s.SetWindow(split.Window)
		s.SetClientHealth(sh.Health)
		r := s.Result()
		h := sh.Health
		out = append(out, result.ShardClient{Shard: sh.Index, Name: sh.Name(), Requests: sh.Records, Health: &h,
			DispatchLagP99Ms: r.Client.DispatchLagP99Ms, UnsentLate: r.Client.UnsentLate, StartSkewMs: float64(sh.StartSkew) / float64(time.Millisecond),
			Bound: r.Client.Bound, Reasons: r.Client.Reasons})
	}
	return out
}
