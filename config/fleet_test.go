package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/sim"
)

// The default fleet is each engine's behaviour before fleets: the simulated
// cluster's zero Fleet (least-loaded), keyed by user on X-Session-Id.
func TestDefaultFleetIsTheSimulatorsZeroFleet(t *testing.T) {
	s, err := Default().Setup(SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Deployment.Sim.Fleet; !reflect.DeepEqual(got, sim.Fleet{SessionKey: sim.SessionKeyUser}) || got.Policy() != sim.RouterLeastLoaded {
		t.Errorf("default simulated fleet = %+v, want least-loaded keyed by user", got)
	}
	if c := s.Client; c.SessionHeader != "X-Session-Id" || c.SessionKey != "user" {
		t.Errorf("client session header = %q by %q, want X-Session-Id by user", c.SessionHeader, c.SessionKey)
	}
}

func TestFleetSectionReachesTheSimulatedCluster(t *testing.T) {
	cfg, err := Load(strings.NewReader("engine: {gpus: 8, tensor_parallel_size: 2}\nfleet: {router: session-affinity, session_key: session, hash_balance_factor: 150, session_header: X-User}\n"), "fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := cfg.Setup(SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := sim.Fleet{Router: sim.RouterSessionAffinity, SessionKey: sim.SessionKeySession, HashBalanceFactor: 150}
	if got := s.Deployment.Sim.Fleet; !reflect.DeepEqual(got, want) {
		t.Errorf("simulated fleet = %+v, want %+v", got, want)
	}
	if n, err := s.Deployment.Sim.Replicas(); n != 4 || err != nil {
		t.Errorf("replicas = %d, %v; want 8 / 2 = 4", n, err)
	}
	if s.Client.SessionHeader != "X-User" || s.Client.SessionKey != "session" {
		t.Errorf("client = %+v", s.Client)
	}
}

const processFleet = `engine:
  kind: process
  gpus: 3
  tensor_parallel_size: 1
  process:
    command: [spoc, sim, serve, --port, "{{.Port}}", --model, "{{.Model}}", --replica, "{{.Replica}}", --on, "{{.GPUs}}"]
`

// A process engine of several replicas is one vLLM server with
// --data-parallel-size unless the fleet's router is one HAProxy runs;
// then each replica is its own server and no data-parallel size is passed.
func TestProcessFleetRouterDecidesDataParallelism(t *testing.T) {
	for _, tc := range []struct {
		router, dryRun string
		dataParallel   bool
	}{
		{"", "", true},
		{"vllm-data-parallel", "", true},
		{"round-robin", "(× 3 replicas of 1 GPUs behind HAProxy, balance roundrobin)", false},
		{"least-loaded", "balance leastconn", false},
		{"session-affinity", "balance hdr(X-Session-Id) consistent hash", false},
	} {
		t.Run("router "+tc.router, func(t *testing.T) {
			cfg, err := Load(strings.NewReader(processFleet+"fleet: {router: "+tc.router+"}\n"), "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			params := cfg.Engine.BaseParams(cfg.Fleet)
			if _, ok := params["data-parallel-size"]; ok != tc.dataParallel {
				t.Errorf("BaseParams = %v: data-parallel-size set %v, want %v", params, ok, tc.dataParallel)
			}
			if got := cfg.TuneSpec().BaseParams["data-parallel-size"]; (got != nil) != tc.dataParallel {
				t.Errorf("the study's base flags disagree with the launcher's: data-parallel-size %v", got)
			}
			l, err := cfg.Engine.Launcher(LauncherOptions{Fleet: cfg.Fleet})
			if err != nil {
				t.Fatal(err)
			}
			dry, err := l.(engine.DryRunner).DryRun(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(dry, `--replica "<replica>" --on "<gpus>"`) || !strings.Contains(dry, tc.dryRun) ||
				strings.Contains(dry, "HAProxy") == tc.dataParallel {
				t.Errorf("dry run = %q, want %q in it", dry, tc.dryRun)
			}
		})
	}
}

func TestHeaderNames(t *testing.T) {
	for name, ok := range map[string]bool{
		"X-Session-Id": true, "x-session-token": true, "a!#$%&'*+-.^_`|~9": true,
		"": false, "X Session": false, "X-Session:": false, "Sessión": false, "X(y)": false, "a\x7f": false,
	} {
		if validHeaderName(name) != ok {
			t.Errorf("validHeaderName(%q) = %v, want %v", name, !ok, ok)
		}
	}
}
