package telemetry

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)

// virtualClock returns a Now function stepping one second per call.
func virtualClock() func() time.Time {
	i := -1
	return func() time.Time {
		i++
		return t0.Add(time.Duration(i) * time.Second)
	}
}

// collect scrapes rounds ticks 0..rounds-1 of exp with a virtual clock.
func collect(t *testing.T, exp *fakeExporter, opts Options, rounds int) *Collector {
	t.Helper()
	srv := exp.start(t)
	opts.Now = virtualClock()
	c, err := NewCollector([]Target{{Name: "vllm", URL: srv.URL + "/metrics"}, {Name: "dcgm", URL: srv.URL + "/dcgm/metrics"}}, time.Second, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < rounds; i++ {
		for _, sc := range c.ScrapeOnce(context.Background()) {
			if sc.Error != "" {
				t.Fatalf("round %d: %s", i, sc.Error)
			}
		}
		exp.advance()
	}
	return c
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v (±%v)", what, got, want, tol)
	}
}

func TestCollectorDerivesEngineSignals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		old       bool
		lowerHost bool
	}{{"current names", false, false}, {"vLLM v0 and DCGM<3.3 names, lowercase hostname", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			exp := newFakeExporter()
			exp.oldNames, exp.lowerHost = tc.old, tc.lowerHost
			c := collect(t, exp, Options{}, 8)
			s := c.Window(t0, t0.Add(7*time.Second))
			e := s.Engine
			near(t, "running mean", e.Running.Mean, 11, 1e-9)
			near(t, "running max", e.Running.Max, 14, 0)
			near(t, "waiting mean", e.Waiting.Mean, 2, 1e-9)
			near(t, "waiting max", e.Waiting.Max, 6, 0)
			near(t, "KV p50", e.KVCacheUsage.P50, 0.25, 1e-9)
			near(t, "KV max", e.KVCacheUsage.Max, 0.4, 1e-9)
			near(t, "prefix queries", e.PrefixCacheQueries, 28000, 0)
			near(t, "prefix hit rate", e.PrefixCacheHitRate, 0.75, 1e-12)
			near(t, "preemptions", e.Preemptions, 3, 0)
			near(t, "prompt tokens", e.PromptTokens, 28000, 0)
			near(t, "generation tokens", e.GenerationTokens, 3500, 0)
			near(t, "requests", e.RequestsSucceeded, 70, 0)
			near(t, "TTFT count", e.TTFT.Count, 70, 0)
			near(t, "TTFT mean", e.TTFT.Mean, 0.09, 1e-9)
			near(t, "TTFT p50", e.TTFT.P50, 0.06, 1e-9)
			near(t, "TTFT p90", e.TTFT.P90, 0.1, 1e-9)
			near(t, "TTFT p95", e.TTFT.P95, 0.625, 1e-9)
			near(t, "TTFT p99", e.TTFT.P99, 0.725, 1e-9)
			near(t, "ITL p50", e.ITL.P50, 0.025, 1e-9)
			near(t, "ITL p90", e.ITL.P90, 0.045, 1e-9)
			near(t, "ITL p99", e.ITL.P99, 0.0495, 1e-9)
			near(t, "ITL mean", e.ITL.Mean, 0.025, 1e-9)

			if len(s.GPUs) != 4 {
				t.Fatalf("GPUs = %d, want 4", len(s.GPUs))
			}
			for i, g := range s.GPUs {
				if g.Host != "node-a" || g.GPU != string(rune('0'+i)) || g.Model != "NVIDIA H100 80GB HBM3" || !strings.HasPrefix(g.UUID, "GPU-") {
					t.Errorf("GPU %d identity = %+v", i, g)
				}
				near(t, "SM active", g.SMActive.Mean, 0.37, 1e-12)
				near(t, "DRAM active", g.DRAMActive.Mean, 0.55, 1e-12)
				near(t, "tensor active", g.TensorActive.Mean, 0.12, 1e-12)
				near(t, "SM clock", g.SMClockMHz.Mean, 1980, 0)
				near(t, "temperature", g.TemperatureC.Max, 62, 0)
				near(t, "power", g.PowerW.Mean, 540, 0)
				if !reflect.DeepEqual(g.ThrottleReasons, []string{"sw_power_cap"}) || g.SlowdownFraction != 0 {
					t.Errorf("GPU %d throttle = %v (%v), want sw_power_cap only", i, g.ThrottleReasons, g.SlowdownFraction)
				}
			}
			if len(s.Stragglers) != 0 {
				t.Errorf("stragglers without injection: %+v", s.Stragglers)
			}
			if len(s.Gaps) != 0 {
				t.Errorf("gaps: %+v", s.Gaps)
			}
		})
	}
}

func TestCollectorSubWindow(t *testing.T) {
	c := collect(t, newFakeExporter(), Options{}, 12)
	// Ticks 4..6: baseline at tick 4, increase over 2 ticks.
	s := c.Window(t0.Add(4*time.Second), t0.Add(6*time.Second))
	near(t, "prompt tokens", s.Engine.PromptTokens, 8000, 0)
	near(t, "running max", s.Engine.Running.Max, 12, 0) // phases 0,1,2
	near(t, "TTFT count", s.Engine.TTFT.Count, 20, 0)
	// A window between two scrapes counts from the scrape before it.
	s = c.Window(t0.Add(4500*time.Millisecond), t0.Add(6*time.Second))
	near(t, "prompt tokens (mid-interval start)", s.Engine.PromptTokens, 8000, 0)
}

func TestCollectorFlagsThrottledGPU(t *testing.T) {
	exp := newFakeExporter()
	exp.throttleGPU, exp.throttleFrom, exp.throttleTo = 2, 3, 6
	c := collect(t, exp, Options{}, 10)
	s := c.Window(t0, t0.Add(9*time.Second))
	if len(s.Stragglers) != 1 {
		t.Fatalf("stragglers = %+v, want exactly GPU 2", s.Stragglers)
	}
	st := s.Stragglers[0]
	if st.GPU != "2" || st.Host != "node-a" || st.Target != "dcgm" {
		t.Errorf("flagged %s, want node-a/gpu2", st.Name())
	}
	if !st.Start.Equal(t0.Add(3*time.Second)) || !st.End.Equal(t0.Add(6*time.Second)) || st.Samples != 4 {
		t.Errorf("window %s–%s (%d samples), want ticks 3–6", st.Start, st.End, st.Samples)
	}
	want := []string{"sm_clock_below_peers", "hw_slowdown", "hw_thermal_slowdown"}
	if !reflect.DeepEqual(st.Reasons, want) {
		t.Errorf("reasons = %v, want %v", st.Reasons, want)
	}
	near(t, "clock", st.ClockMHz, 1410, 0)
	near(t, "peer median", st.PeerMedianMHz, 1980, 0)
	near(t, "min ratio", st.MinClockRatio, 1410.0/1980, 1e-12)
	g := s.GPUs[2]
	near(t, "slowdown fraction", g.SlowdownFraction, 0.4, 1e-12)
	near(t, "max temperature", g.TemperatureC.Max, 91, 0)
	if len(g.ThrottleReasons) != 3 {
		t.Errorf("GPU 2 reasons = %v", g.ThrottleReasons)
	}
	// A window outside the throttling flags nothing.
	if s := c.Window(t0.Add(7*time.Second), t0.Add(9*time.Second)); len(s.Stragglers) != 0 {
		t.Errorf("stragglers after recovery: %+v", s.Stragglers)
	}
}

func TestCollectorSurvivesBadTargets(t *testing.T) {
	exp := newFakeExporter()
	good := exp.start(t)
	malformed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte("vllm:num_requests_running{engine=\"0\" 3\n"))
	}))
	defer malformed.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "engine restarting", http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()

	var jsonl bytes.Buffer
	c, err := NewCollector([]Target{
		{Name: "good", URL: good.URL + "/metrics"},
		{Name: "garbled", URL: malformed.URL},
		{Name: "flaky", URL: failing.URL},
		{Name: "gone", URL: deadURL},
	}, time.Second, Options{Now: virtualClock(), JSONL: &jsonl})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		round := c.ScrapeOnce(context.Background())
		if len(round) != 4 {
			t.Fatalf("round has %d scrapes", len(round))
		}
		if round[0].Error != "" || len(round[0].Samples) == 0 {
			t.Fatalf("good target: %q, %d samples", round[0].Error, len(round[0].Samples))
		}
		for _, sc := range round[1:] {
			if !strings.Contains(sc.Error, `"`+sc.Target+`"`) {
				t.Errorf("error %q does not name target %q", sc.Error, sc.Target)
			}
		}
		exp.advance()
	}
	gaps := c.Gaps()
	if len(gaps) != 3 {
		t.Fatalf("gaps = %+v, want one per bad target", gaps)
	}
	for _, g := range gaps {
		if g.Scrapes != 3 || !g.Start.Equal(t0) || !g.End.Equal(t0.Add(2*time.Second)) {
			t.Errorf("gap %+v, want 3 scrapes over the whole run", g)
		}
	}
	s := c.Window(t0, t0.Add(2*time.Second))
	near(t, "prompt tokens from the good target", s.Engine.PromptTokens, 8000, 0)
	if len(s.Gaps) != 3 {
		t.Errorf("window gaps = %d, want 3", len(s.Gaps))
	}
	if n := strings.Count(jsonl.String(), "\n"); n != 12 {
		t.Errorf("JSONL has %d lines, want 12 (4 targets × 3 rounds)", n)
	}
	// A target that recovers closes its gap; a new failure opens another.
	st := NewStore(StoreOptions{})
	for i, e := range []string{"x", "", "y", "y"} {
		st.AddScrape(Scrape{Time: t0.Add(time.Duration(i) * time.Second), Target: "a", Error: e})
	}
	if g := st.Gaps(); len(g) != 2 || g[0].Scrapes != 1 || g[1].Scrapes != 2 {
		t.Errorf("gaps after recovery = %+v", g)
	}
}

func TestCollectorRunStopsWithContext(t *testing.T) {
	exp := newFakeExporter()
	srv := exp.start(t)
	c, err := NewCollector([]Target{{Name: "vllm", URL: srv.URL + "/metrics"}}, 10*time.Millisecond, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	// Wait for the first round, however long the machine takes.
	for len(c.Series()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil on cancellation", err)
	}
}

func TestNewCollectorRejectsBadTargets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		targets []Target
		want    string
	}{
		{"none", nil, "no targets"},
		{"relative URL", []Target{{Name: "a", URL: "/metrics"}}, `target "a"`},
		{"empty name", []Target{{Name: "", URL: "http://x/metrics"}}, "empty name"},
		{"duplicate", []Target{{Name: "a", URL: "http://x/m"}, {Name: "a", URL: "http://y/m"}}, "used twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewCollector(tc.targets, time.Second, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct{ in, want string }{
		{"vllm=http://h:8000/metrics", ""},
		{"novalue", "want NAME=URL"},
		{"=http://h/m", "want NAME=URL"},
		{"x=ftp://h/m", "not an absolute http(s) URL"},
	} {
		_, err := ParseTarget(tc.in)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseTarget(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}
