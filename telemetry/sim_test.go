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

// driveSim keeps users virtual users sending chat requests of maxTokens
// tokens each that share a long system prompt (so the prefix cache hits)
// until stop is called.
func driveSim(url, model string, users, maxTokens int) (stop func()) {
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
					"max_tokens": maxTokens,
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

// simRound is one scrape round of the simulator: the logical time the
// collector stamped it with and bounds on the simulated time at which the
// simulator answered it.
type simRound struct {
	stamp        time.Time
	simLo, simHi float64 // simulated seconds
}

// TestSimulatorStragglerInjection scrapes the simulator under load: with a
// GPU throttled for a stretch, that GPU and that stretch are flagged;
// without injection nothing is.
//
// The simulator runs on the wall clock, so the test does not predict when
// a scrape lands. It stamps rounds with a logical clock, bounds the
// simulated time each round was answered at (from the wall-clock times
// around NewServer and around the round) and checks only what those bounds
// decide: a round surely inside the throttle is in the flagged window, a
// round surely outside is not. A slow or loaded machine (or the race
// detector) widens the bounds and leaves more rounds undecided instead of
// failing; only rounds slower than the whole throttle (a wall second) would
// leave none to check. Scrapes get a generous timeout, so load does not turn
// into gaps either.
func TestSimulatorStragglerInjection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for seconds of wall time")
	}
	const (
		scale = 20
		// The simulator reports the last whole simulated second it closed
		// (T = floor(now)) with the clock at its middle, T−0.5: GPU 1 reads
		// throttled exactly while now is in [from+1, to+1).
		from, to = 20.0, 40.0 // simulated seconds
		runTo    = 50.0       // scrape until the simulator is surely past this
		pace     = 20 * time.Millisecond
		step     = 100 * time.Millisecond // logical time between rounds
		timeout  = time.Minute
	)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		throttles []sim.Throttle
	}{
		{"GPU 1 throttled", []sim.Throttle{{GPU: 1, ClockFactor: 0.6, Start: from, End: to}}},
		{"no injection", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := time.Now()
			srv, dep, url := startSim(t, nil, scale, tc.throttles)
			after := time.Now() // the simulator's clock started in [before, after]
			// Long replies keep the engine busy through the run however
			// late the clients send their next request: an idle GPU is no
			// straggler, and the clock rule needs busy peers.
			stopLoad := driveSim(url, srv.Model(), 6, 4096)
			defer stopLoad()
			var rounds []simRound
			c, err := NewCollector([]Target{{Name: "vllm", URL: url + "/metrics"}, {Name: "dcgm", URL: url + "/dcgm/metrics"}}, timeout,
				Options{
					Timeout: timeout,
					Now:     func() time.Time { return base.Add(time.Duration(len(rounds)) * step) },
					Derive:  DeriveOptions{TPSize: dep.TensorParallelSize},
				})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for {
				t1 := time.Now()
				c.ScrapeOnce(ctx)
				t2 := time.Now()
				r := simRound{stamp: base.Add(time.Duration(len(rounds)) * step),
					simLo: t1.Sub(after).Seconds() * scale, simHi: t2.Sub(before).Seconds() * scale}
				rounds = append(rounds, r)
				if r.simLo >= runTo {
					break
				}
				time.Sleep(pace) // only how many rounds there are; verdicts do not depend on it
			}
			s := c.Window(base, rounds[len(rounds)-1].stamp)
			if len(s.Gaps) > 0 {
				t.Errorf("gaps scraping the simulator: %+v", s.Gaps)
			}
			if len(s.GPUs) != dep.GPUs {
				t.Fatalf("GPUs = %d, want %d", len(s.GPUs), dep.GPUs)
			}
			if s.Engine.Running.Max == 0 {
				t.Errorf("no request ever ran: %+v", s.Engine.Running)
			}
			t.Logf("%d rounds; stragglers: %v", len(rounds), stragglerNames(s))
			if tc.throttles == nil {
				if len(s.Stragglers) != 0 {
					t.Errorf("flagged without injection: %v", stragglerNames(s))
				}
				return
			}
			if len(s.Stragglers) != 1 || s.Stragglers[0].GPU != "1" {
				t.Fatalf("stragglers %v, want GPU 1 only", stragglerNames(s))
			}
			st := s.Stragglers[0]
			var inside, outside int
			for _, r := range rounds {
				flagged := !r.stamp.Before(st.Start) && !r.stamp.After(st.End)
				switch {
				case r.simLo >= from+1 && r.simHi < to+1:
					inside++
					if !flagged {
						t.Errorf("round at simulated %.2f–%.2f s, inside the throttle, is outside the window %s", r.simLo, r.simHi, stragglerNames(s))
					}
				case r.simHi < from+1 || r.simLo >= to+1:
					outside++
					if flagged {
						t.Errorf("round at simulated %.2f–%.2f s, outside the throttle, is inside the window %s", r.simLo, r.simHi, stragglerNames(s))
					}
				}
			}
			t.Logf("rounds surely inside the throttle: %d, surely outside: %d", inside, outside)
			if inside == 0 {
				t.Errorf("no round surely inside the throttle (simulated %v–%v s): the window was never checked", from+1, to+1)
			}
			if !contains(st.Reasons, "hw_thermal_slowdown") || !contains(st.Reasons, "sm_clock_below_peers") {
				t.Errorf("reasons = %v, want the clock rule and the thermal bit", st.Reasons)
			}
			near(t, "clock ratio", st.MinClockRatio, 0.6, 0.02)
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
