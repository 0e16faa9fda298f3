package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/sim/serve"
)

// startSim serves the simulator (what `spoc sim serve` runs) for the default
// deployment, scale times faster than real time, on l (a fresh loopback
// listener when nil). Throttle times are simulated seconds from now.
func startSim(t *testing.T, l net.Listener, scale float64, throttles []sim.Throttle) (*serve.Server, sim.Deployment, string) {
	t.Helper()
	dep, err := sim.NewDeployment(sim.ReferenceDeploymentSpec())
	if err != nil {
		t.Fatal(err)
	}
	dep.Throttles = throttles
	s, err := serve.New(serve.Config{Deployment: dep, TimeScale: scale, Hostname: "simnode", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s.Handler())
	if l != nil {
		ts.Listener.Close()
		ts.Listener = l
	}
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, dep, ts.URL
}

// driveSim keeps users virtual users sending chat requests that share a
// long system prompt (so the prefix cache hits) until stop is called.
func driveSim(url, model string, users int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	system := strings.Repeat("You are a careful coding assistant for the spoc repository. ", 60)
	var wg sync.WaitGroup
	client := &http.Client{}
	for u := 0; u < users; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for turn := 0; ctx.Err() == nil; turn++ {
				body, _ := json.Marshal(map[string]any{
					"model":      model,
					"max_tokens": 48,
					"messages": []map[string]string{
						{"role": "system", "content": system},
						{"role": "user", "content": fmt.Sprintf("user %d turn %d: explain the scheduler", u, turn)},
					},
				})
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}
}

// TestSimulatorStragglerInjection scrapes the simulator under load: with a
// GPU throttled for a stretch, that GPU and about that stretch are flagged;
// without injection nothing is.
func TestSimulatorStragglerInjection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for seconds of wall time")
	}
	if raceDetector {
		t.Skip("wall-clock paced: the race detector slows the simulator past its scrape timeouts")
	}
	const (
		scale    = 20
		interval = 100 * time.Millisecond
		from     = 1 * time.Second
		to       = 2 * time.Second
		runFor   = 3 * time.Second
	)
	for _, tc := range []struct {
		name      string
		throttles []sim.Throttle
	}{
		{"GPU 1 throttled", []sim.Throttle{{GPU: 1, ClockFactor: 0.6, Start: from.Seconds() * scale, End: to.Seconds() * scale}}},
		{"no injection", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, dep, url := startSim(t, nil, scale, tc.throttles)
			born := time.Now()
			stopLoad := driveSim(url, srv.Model(), 6)
			defer stopLoad()
			c, err := NewCollector([]Target{{"vllm", url + "/metrics"}, {"dcgm", url + "/dcgm/metrics"}}, interval,
				Options{Derive: DeriveOptions{TPSize: dep.TensorParallelSize}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), runFor)
			defer cancel()
			if err := c.Run(ctx); err != nil {
				t.Fatal(err)
			}
			s := c.Window(born, born.Add(runFor))
			if len(s.Gaps) > 0 {
				t.Errorf("gaps scraping the simulator: %+v", s.Gaps)
			}
			if len(s.GPUs) != dep.GPUs {
				t.Fatalf("GPUs = %d, want %d", len(s.GPUs), dep.GPUs)
			}
			if s.Engine.Running.Max == 0 {
				t.Errorf("no request ever ran: %+v", s.Engine.Running)
			}
			t.Logf("stragglers: %v", stragglerNames(s))
			if tc.throttles == nil {
				if len(s.Stragglers) != 0 {
					t.Errorf("flagged without injection: %v", stragglerNames(s))
				}
				return
			}
			checkStraggler(t, "direct", s, "1", born.Add(from), born.Add(to), 3*interval)
			if len(s.Stragglers) == 1 {
				st := s.Stragglers[0]
				if !contains(st.Reasons, "hw_thermal_slowdown") || !contains(st.Reasons, "sm_clock_below_peers") {
					t.Errorf("reasons = %v, want the clock rule and the thermal bit", st.Reasons)
				}
				near(t, "clock ratio", st.MinClockRatio, 0.6, 0.02)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
