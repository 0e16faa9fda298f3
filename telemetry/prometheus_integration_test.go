package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/internal/testharness/promtest"
	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/sim"
)

// TestPrometheusMatchesDirectScrape runs the real Prometheus against two live
// exporters while Collectors scrape them directly, then checks that
// QueryRange (the library path of `spoc telemetry query`) derives the same
// signals, stragglers included:
//
//   - the fake exporter, whose values are exact functions of time, within
//     the tolerance the two samplings' different instants allow;
//   - the simulator (`spoc sim serve`) under load with a throttled GPU,
//     within looser tolerances, since its values move request by request.
//
// One Prometheus serves both, to pay its five-second start-up once.
func TestPrometheusMatchesDirectScrape(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	if raceDetector {
		t.Skip("wall-clock paced: the race detector slows the simulator past its scrape timeouts")
	}
	const period = 200 * time.Millisecond
	exp := newFakeExporter()
	born := time.Now()
	exp.live = func() int { return int(time.Since(born) / period) }
	fake := exp.start(t)
	// The simulator starts once Prometheus runs, on an address known now,
	// so that its throttle window is placed after Prometheus's start-up.
	simListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	simURL := "http://" + simListener.Addr().String()
	jobs := map[string]string{
		"vllm": fake.URL + "/metrics", "dcgm": fake.URL + "/dcgm/metrics",
		"sim-vllm": simURL + "/metrics", "sim-dcgm": simURL + "/dcgm/metrics",
	}
	prom := promtest.Start(t, jobs, period)
	fakeC, err := NewCollector([]Target{{Name: "vllm", URL: jobs["vllm"]}, {Name: "dcgm", URL: jobs["dcgm"]}}, period, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stopFake := runCollector(t, fakeC)
	waitForScrapes(t, prom, 2)
	t.Logf("fake exporter scraped by Prometheus after %s", time.Since(born).Round(time.Millisecond))

	// Simulator: GPU 2 runs at 60 % clock from 1.5 s to 4.5 s of wall time.
	const scale = 10
	throttleFrom, throttleTo := 1500*time.Millisecond, 4500*time.Millisecond
	srv, dep, _ := startSim(t, simListener, scale, []sim.Throttle{{GPU: 2, ClockFactor: 0.6,
		Start: throttleFrom.Seconds() * scale, End: throttleTo.Seconds() * scale}})
	simBorn := time.Now()
	simC, err := NewCollector([]Target{{Name: "sim-vllm", URL: jobs["sim-vllm"]}, {Name: "sim-dcgm", URL: jobs["sim-dcgm"]}}, period, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stopSim := runCollector(t, simC)
	stopLoad := driveSim(simURL, srv.Model(), 8, 48)
	defer stopLoad()
	waitForScrapes(t, prom, 4)

	start := time.Now()
	startTick := exp.live()
	exp.mu.Lock()
	exp.throttleGPU, exp.throttleFrom, exp.throttleTo = 2, startTick+5, startTick+12
	exp.mu.Unlock()
	end := simBorn.Add(throttleTo + 1500*time.Millisecond)
	if min := start.Add(20 * period); end.Before(min) {
		end = min
	}
	time.Sleep(time.Until(end))
	time.Sleep(3 * period) // let both sides take their last scrape
	stopLoad()
	stopFake()
	stopSim()
	t.Logf("window %s after the fake exporter started, %s after the simulator", start.Sub(born).Round(time.Millisecond), start.Sub(simBorn).Round(time.Millisecond))

	query := func(selector string, d DeriveOptions) Signals {
		st, err := QueryRange(context.Background(), prom, start, end, QueryOptions{Step: period, Selector: selector})
		if err != nil {
			t.Fatal(err)
		}
		return st.Window(start, end, d)
	}
	t.Run("fake exporter", func(t *testing.T) {
		direct := fakeC.Window(start, end)
		viaProm := query(`job=~"vllm|dcgm"`, DeriveOptions{})
		compareSignals(t, direct, viaProm, exactTolerances)
		wantStart := born.Add(time.Duration(startTick+5) * period)
		wantEnd := born.Add(time.Duration(startTick+13) * period)
		for name, s := range map[string]Signals{"direct": direct, "Prometheus": viaProm} {
			checkStraggler(t, name, s, "2", wantStart, wantEnd, 2*period)
		}
	})
	t.Run("simulator", func(t *testing.T) {
		d := DeriveOptions{TPSize: dep.TensorParallelSize}
		direct := simC.store.Window(start, end, d)
		viaProm := query(`job=~"sim-vllm|sim-dcgm"`, d)
		compareSignals(t, direct, viaProm, simTolerances)
		if direct.Engine.Running.Max == 0 || direct.Engine.GenerationTokens == 0 {
			t.Errorf("the simulator served nothing: %+v", direct.Engine)
		}
		for name, s := range map[string]Signals{"direct": direct, "Prometheus": viaProm} {
			checkStraggler(t, name, s, "2", simBorn.Add(throttleFrom), simBorn.Add(throttleTo), 3*period)
		}
	})
}

// tolerances say how far the Prometheus path may be from the direct one.
type tolerances struct {
	exactRatios bool    // hit rate and latency quantiles identical
	counters    float64 // relative
	gauges      float64 // relative, on means
}

var (
	exactTolerances = tolerances{exactRatios: true, counters: 0.2, gauges: 0.15}
	simTolerances   = tolerances{counters: 0.3, gauges: 0.3}
)

func compareSignals(t *testing.T, direct, viaProm Signals, tol tolerances) {
	t.Helper()
	d, p := direct.Engine, viaProm.Engine
	t.Logf("direct:     running %.2f/%.0f KV p50 %.3f hit %.3f prompt %.0f TTFT p50 %.3f p99 %.3f ITL p50 %.4f stragglers %v",
		d.Running.Mean, d.Running.Max, d.KVCacheUsage.P50, d.PrefixCacheHitRate, d.PromptTokens, d.TTFT.P50, d.TTFT.P99, d.ITL.P50, stragglerNames(direct))
	t.Logf("Prometheus: running %.2f/%.0f KV p50 %.3f hit %.3f prompt %.0f TTFT p50 %.3f p99 %.3f ITL p50 %.4f stragglers %v",
		p.Running.Mean, p.Running.Max, p.KVCacheUsage.P50, p.PrefixCacheHitRate, p.PromptTokens, p.TTFT.P50, p.TTFT.P99, p.ITL.P50, stragglerNames(viaProm))
	if d.TTFT.Count == 0 || p.TTFT.Count == 0 {
		t.Fatalf("no TTFT observations: direct %v, Prometheus %v", d.TTFT.Count, p.TTFT.Count)
	}
	rel := func(what string, a, b, r float64) { near(t, what, b, a, r*math.Max(math.Abs(a), 1e-9)) }
	if tol.exactRatios {
		for _, c := range []struct {
			what string
			a, b float64
		}{
			{"prefix hit rate", d.PrefixCacheHitRate, p.PrefixCacheHitRate},
			{"TTFT p50", d.TTFT.P50, p.TTFT.P50}, {"TTFT p90", d.TTFT.P90, p.TTFT.P90}, {"TTFT p99", d.TTFT.P99, p.TTFT.P99},
			{"ITL p90", d.ITL.P90, p.ITL.P90}, {"TTFT mean", d.TTFT.Mean, p.TTFT.Mean},
			{"running max", d.Running.Max, p.Running.Max}, {"KV max", d.KVCacheUsage.Max, p.KVCacheUsage.Max},
		} {
			near(t, c.what, c.b, c.a, 1e-9)
		}
		// The fake's KV gauge steps through 0.1…0.4 one level per period, so
		// the median of two samplings at different phases may differ by one
		// level (0.1), which float rounding must not turn into a failure.
		near(t, "KV p50", p.KVCacheUsage.P50, d.KVCacheUsage.P50, 0.1+1e-9)
		near(t, "preemptions", p.Preemptions, d.Preemptions, 2)
	} else {
		near(t, "prefix hit rate", p.PrefixCacheHitRate, d.PrefixCacheHitRate, 0.1)
		rel("TTFT p50", d.TTFT.P50, p.TTFT.P50, 0.25)
		rel("ITL p50", d.ITL.P50, p.ITL.P50, 0.25)
		near(t, "KV p50", p.KVCacheUsage.P50, d.KVCacheUsage.P50, 0.1)
	}
	rel("running mean", d.Running.Mean, p.Running.Mean, tol.gauges)
	rel("prompt tokens", d.PromptTokens, p.PromptTokens, tol.counters)
	rel("generation tokens", d.GenerationTokens, p.GenerationTokens, tol.counters)
	if len(direct.GPUs) == 0 || len(direct.GPUs) != len(viaProm.GPUs) {
		t.Fatalf("GPUs: direct %d, Prometheus %d", len(direct.GPUs), len(viaProm.GPUs))
	}
	for i := range direct.GPUs {
		a, b := direct.GPUs[i], viaProm.GPUs[i]
		if a.Name() != b.Name() || a.UUID != b.UUID || a.Model != b.Model {
			t.Errorf("GPU %d: direct %s %s %s, Prometheus %s %s %s", i, a.Name(), a.UUID, a.Model, b.Name(), b.UUID, b.Model)
		}
		near(t, a.Name()+" SM active", b.SMActive.Mean, a.SMActive.Mean, math.Max(1e-9, tol.gauges*a.SMActive.Mean))
		near(t, a.Name()+" DRAM active", b.DRAMActive.Mean, a.DRAMActive.Mean, math.Max(1e-9, tol.gauges*a.DRAMActive.Mean))
		near(t, a.Name()+" mean SM clock", b.SMClockMHz.Mean, a.SMClockMHz.Mean, 0.05*a.SMClockMHz.Mean)
		near(t, a.Name()+" max temperature", b.TemperatureC.Max, a.TemperatureC.Max, 3)
		near(t, a.Name()+" slowdown fraction", b.SlowdownFraction, a.SlowdownFraction, 0.15)
	}
}

// checkStraggler wants exactly one straggler, GPU gpu, flagged from about
// from to about to.
func checkStraggler(t *testing.T, name string, s Signals, gpu string, from, to time.Time, slack time.Duration) {
	t.Helper()
	if len(s.Stragglers) != 1 || s.Stragglers[0].GPU != gpu {
		t.Errorf("%s: stragglers %v, want GPU %s only", name, stragglerNames(s), gpu)
		return
	}
	st := s.Stragglers[0]
	if st.Start.Before(from.Add(-slack)) || st.Start.After(from.Add(slack)) || st.End.Before(to.Add(-2*slack)) || st.End.After(to.Add(slack)) {
		t.Errorf("%s: straggler window %s–%s, want about %s–%s", name,
			st.Start.Format("15:04:05.000"), st.End.Format("15:04:05.000"), from.Format("15:04:05.000"), to.Format("15:04:05.000"))
	}
}

func stragglerNames(s Signals) []string {
	var out []string
	for _, st := range s.Stragglers {
		out = append(out, fmt.Sprintf("%s %s–%s %v", st.Name(), st.Start.Format("05.000"), st.End.Format("05.000"), st.Reasons))
	}
	return out
}

// runCollector runs c until the returned stop is called (or the test ends).
func runCollector(t *testing.T, c *Collector) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("collector: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitForScrapes waits until Prometheus has scraped n targets successfully.
func waitForScrapes(t *testing.T, base string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape("sum(up)"))
		if err == nil {
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			if strings.Contains(b.String(), fmt.Sprintf(`"%d"]`, n)) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("prometheus did not scrape %d targets within 30 s", n)
}

// startPrometheusConfigCheck runs promtool (shipped with Prometheus) on a
// configuration file.
func startPrometheusConfigCheck(t *testing.T, path string) {
	t.Helper()
	bin := testtool.Find(t, "apt-get install -y prometheus", "promtool")
	out, err := exec.Command(bin, "check", "config", path).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check config %s: %v\n%s", path, err, out)
	}
}
