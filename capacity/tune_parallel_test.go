package capacity_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/tune"
)

// TestTuneParallelOnTheSimulator: spoc tune's use case with
// search.parallel 3 on the sim engine runs its trials side by side in
// virtual time on one evaluator (the workload, the simulator and the
// study shared by three goroutines: run with -race) and stores exactly
// the budget.
func TestTuneParallelOnTheSimulator(t *testing.T) {
	cfg := config.Default()
	cfg.Search.Trials = 6
	cfg.Search.Parallel = 3
	cfg.Search.Population = 2
	cfg.Search.Users = 8
	cfg.Search.Warmup = config.Duration(5 * time.Second)
	cfg.Search.Duration = config.Duration(20 * time.Second)
	cfg.Run.Ramp = 0
	cfg.Search.Storage = "sqlite:" + filepath.Join(t.TempDir(), "study.db")
	setup, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var reports []tune.Progress
	res, err := capacity.Tune(context.Background(), setup.Setup, capacity.TuneOptions{
		Progress: func(p tune.Progress) { reports = append(reports, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Trials) != 6 || len(reports) != 6 {
		t.Fatalf("%d trials stored, %d reported: %+v", len(res.Trials), len(reports), res.States)
	}
	workers := map[any]bool{}
	for _, tr := range res.Trials {
		if !tr.State.Finished() {
			t.Errorf("trial %d is %s", tr.Number, tr.State)
		}
		if tr.State == search.StateComplete && tr.UserAttrs[capacity.AttrProvenance] == nil {
			t.Errorf("trial %d has no provenance", tr.Number)
		}
		workers[tr.SystemAttrs["worker"]] = true
	}
	if len(workers) < 2 {
		t.Errorf("trials recorded by workers %v; want the three workers sharing them", workers)
	}
}

// liveSim serves the simulator over HTTP (its Virtual method hidden, so
// evaluations go through servers and the HTTP client as on a real engine)
// and records how many of its servers are up at once.
type liveSim struct {
	sim *engine.Sim
	mu  sync.Mutex
	up  int
	// most servers up at once, and starts
	most, starts int
}

func (l *liveSim) Start(ctx context.Context, p engine.Params) (engine.Server, error) {
	srv, err := l.sim.Start(ctx, p)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.up++
	l.starts++
	l.most = max(l.most, l.up)
	l.mu.Unlock()
	return &liveSimServer{Server: srv, l: l}, nil
}

type liveSimServer struct {
	engine.Server
	l    *liveSim
	once sync.Once
}

func (s *liveSimServer) Stop(ctx context.Context) error {
	err := s.Server.Stop(ctx)
	s.once.Do(func() {
		s.l.mu.Lock()
		s.l.up--
		s.l.mu.Unlock()
	})
	return err
}

// TestTuneParallelLive: a parallel study on an engine that starts
// servers runs each trial running at once on a server of its own (one
// evaluator per worker: the launcher sees 3 up at the peak, never more),
// all over HTTP with telemetry, and stops every server at the end. Run
// with -race: the evaluators share the workload, the launcher and the
// study.
func TestTuneParallelLive(t *testing.T) {
	if testing.Short() {
		t.Skip("serves the simulator over HTTP for a few seconds")
	}
	t.Parallel() // real time on a server of its own
	cfg := config.Default()
	cfg.Search.Trials = 6
	cfg.Search.Parallel = 3
	cfg.Search.Population = 2
	cfg.Search.Users = 2
	cfg.Search.Warmup = config.Duration(time.Second)
	cfg.Search.Duration = config.Duration(3 * time.Second)
	cfg.Run.Ramp = 0
	cfg.Run.ThinkTimeScale = 0.001
	cfg.Telemetry.Interval = config.Duration(250 * time.Millisecond)
	cfg.Search.Storage = "sqlite:" + filepath.Join(t.TempDir(), "study.db")
	setup, err := cfg.Setup(config.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := engine.NewSim(setup.Deployment.Sim, engine.SimOptions{TimeScale: 100, MaxServers: 3, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// the simulator served over HTTP, as a real engine is
	l := &liveSim{sim: s}
	setup.Launcher, setup.Virtual = l, false
	res, err := capacity.Tune(context.Background(), setup.Setup, capacity.TuneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Under the race detector on a busy machine a trial's first replies
	// may not finish within its window (INFEASIBLE: no request
	// completed); the run itself went through its server either way.
	t.Logf("trial states %v", res.States)
	if len(res.Trials) != 6 || res.States[search.StateComplete]+res.States[search.StateInfeasible] != 6 {
		t.Fatalf("%d trials %v, want 6 evaluated; trial 0: %v", len(res.Trials), res.States, res.Trials[0].SystemAttrs["fail_reason"])
	}
	for _, tr := range res.Trials {
		if tr.State != search.StateComplete {
			continue
		}
		if p, ok := tr.UserAttrs[capacity.AttrProvenance].(map[string]any); !ok || p["source"] != "live" {
			t.Errorf("trial %d provenance %v, want live", tr.Number, tr.UserAttrs[capacity.AttrProvenance])
		}
	}
	if l.most != 3 || l.up != 0 || l.starts != 6 {
		t.Errorf("servers: %d up at most at once, %d still up, %d started; want 3, 0 and one per trial", l.most, l.up, l.starts)
	}
}
