package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/workload"
)

// Virtual is implemented by engines that are the simulator. An evaluation
// that finds one can skip HTTP and wall-clock time altogether and run the
// whole load in virtual time (sim.RunVirtual) on VirtualDeployment(p),
// which is what makes a simulated study take seconds.
type Virtual interface {
	Engine
	// VirtualDeployment returns the simulated deployment configured with
	// p. Parameters the simulator refuses (an impossible value) give a
	// *Failure with ReasonRejected; a deployment whose weights leave no
	// room for KV cache gives ReasonKVCache. Both are INFEASIBLE.
	VirtualDeployment(p search.Params) (sim.Deployment, error)
}

// SimOptions configure the simulator launcher.
type SimOptions struct {
	// TimeScale speeds up the HTTP server's clock (engine.sim.time_scale).
	TimeScale float64
	// ErrorRate injects HTTP 500s (engine.sim.error_rate); Seed draws them.
	ErrorRate float64
	Seed      uint64
	Logger    *slog.Logger
}

// Sim is the built-in simulator as an engine: Start serves the simulated
// deployment on a loopback port, and VirtualDeployment lets an evaluation
// run it in virtual time instead.
type Sim struct {
	base sim.Deployment
	opts SimOptions

	mu  sync.Mutex
	cur *simServer
}

var _ Virtual = (*Sim)(nil)

// NewSim returns the launcher for base, the deployment every trial's
// parameters are applied to.
func NewSim(base sim.Deployment, o SimOptions) (*Sim, error) {
	if o.TimeScale <= 0 {
		o.TimeScale = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sim{base: base, opts: o}, nil
}

// NewSimFromConfig resolves the engine section's model, GPU and flags into a
// simulated deployment and returns its launcher.
func NewSimFromConfig(e config.Engine, o Options) (*Sim, error) {
	d, err := sim.NewDeployment(e.SimDeployment())
	if err != nil {
		return nil, fmt.Errorf("sim engine: %w", err)
	}
	return NewSim(d, SimOptions{TimeScale: e.Sim.TimeScale, ErrorRate: e.Sim.ErrorRate, Logger: o.Logger})
}

// Kind returns "sim".
func (s *Sim) Kind() string { return "sim" }

// VirtualDeployment applies p to the base deployment's engine flags. A flag
// the simulator does not model is a plain error (the study's space is
// wrong for this engine, every trial would fail alike).
func (s *Sim) VirtualDeployment(p search.Params) (sim.Deployment, error) {
	known := sim.ParamNames()
	for k := range p {
		f := FlagName(k)
		if !slices.Contains(known, f) && !slices.Contains(known, trimNo(f)) {
			return sim.Deployment{}, fmt.Errorf("sim engine: parameter %q is not a flag the simulator models (known: %v)", k, known)
		}
	}
	d := s.base
	if err := d.Params.Apply(p); err != nil {
		return sim.Deployment{}, &Failure{Reason: ReasonRejected, Detail: err.Error(), ExitCode: -1}
	}
	if err := checkDeployment(d); err != nil {
		return sim.Deployment{}, err
	}
	return d, nil
}

// checkDeployment builds d the way a run would, without running it: a
// virtual run under an already cancelled context prices the deployment
// and sizes its KV cache, then stops before the first step. A deployment
// whose weights and activations leave no memory for the KV cache is the
// simulator's "CUDA out of memory at start-up".
func checkDeployment(d sim.Deployment) error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := sim.RunVirtual(ctx, sim.Options{Deployment: d, Users: 1, Duration: 1, SeriesInterval: -1}, noSessions{}, discardRecords{})
	switch {
	case err == nil || errors.Is(err, context.Canceled):
		return nil
	case strings.Contains(err.Error(), "kv cache size"):
		return &Failure{Reason: ReasonKVCache, Detail: err.Error(), ExitCode: -1}
	}
	return fmt.Errorf("sim engine: %w", err)
}

// noSessions is the workload of checkDeployment, which never asks for one.
type noSessions struct{}

func (noSessions) Session(user, n int) (*workload.Script, error) {
	return nil, errors.New("sim engine: deployment check has no workload")
}

type discardRecords struct{}

func (discardRecords) Write(*result.Record) error { return nil }

func trimNo(f string) string {
	if len(f) > 3 && f[:3] == "no-" {
		return f[3:]
	}
	return f
}

// simServer is a running simulator HTTP server.
type simServer struct {
	sim     *sim.Server
	http    *http.Server
	done    chan struct{} // closed when Serve returns
	logFile *os.File
}

// Start serves the simulated deployment configured with p on a loopback
// port: the OpenAI-compatible API, vLLM metrics on /metrics and DCGM-style
// GPU metrics on /dcgm/metrics. Request-level events go to server.log in
// the artefact directory.
func (s *Sim) Start(ctx context.Context, p search.Params) (Endpoint, error) {
	s.mu.Lock()
	busy := s.cur != nil
	s.mu.Unlock()
	if busy {
		return Endpoint{}, errors.New("sim engine: a server is already running; Stop it first")
	}
	d, err := s.VirtualDeployment(p)
	if err != nil {
		return Endpoint{}, err
	}
	logPath, logFile, err := createServerLog(ctx, "sim")
	if err != nil {
		return Endpoint{}, err
	}
	flags, _ := Flags(p)
	fmt.Fprintf(logFile, "# spoc: simulated %s on %d× %s %s\n", d.Model.Name, max(d.GPUs, 1), d.GPU.Name, quoteArgv(flags))
	srv, err := sim.NewServer(sim.ServerConfig{
		Deployment: d, TimeScale: s.opts.TimeScale, ErrorRate: s.opts.ErrorRate, Seed: s.opts.Seed,
		Logger: slog.New(slog.NewTextHandler(logFile, nil)),
	})
	if err != nil {
		logFile.Close()
		return Endpoint{}, fmt.Errorf("sim engine: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		logFile.Close()
		return Endpoint{}, fmt.Errorf("sim engine: listen: %w", err)
	}
	r := &simServer{sim: srv, http: &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{}), logFile: logFile}
	go func() {
		defer close(r.done)
		if err := r.http.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(logFile, "# spoc: serve: %v\n", err)
		}
	}()
	s.mu.Lock()
	s.cur = r
	s.mu.Unlock()
	base := "http://" + l.Addr().String()
	s.opts.Logger.Info("server started", "engine", "sim", "url", base, "log", logPath)
	return Endpoint{
		BaseURL:     base,
		MetricsURLs: []string{base + "/metrics", base + "/dcgm/metrics"},
		Model:       srv.Model(),
		Log:         logPath,
	}, nil
}

// Stop ends the simulator (requests in flight fail, as on a real server
// that goes away) and closes its listener.
func (s *Sim) Stop(ctx context.Context) error {
	s.mu.Lock()
	r := s.cur
	s.cur = nil
	s.mu.Unlock()
	if r == nil {
		return nil
	}
	defer r.logFile.Close()
	r.sim.Close()
	if err := r.http.Shutdown(ctx); err != nil {
		r.http.Close()
	}
	<-r.done
	return nil
}

// DryRun describes the simulated server trial would get, and whether the
// simulator would refuse it.
func (s *Sim) DryRun(p search.Params, trial int) (string, error) {
	flags, err := Flags(p)
	if err != nil {
		return "", err
	}
	d := s.base
	desc := fmt.Sprintf("simulated %s on %d× %s (tensor parallel %d): %s", d.Model.Name, max(d.GPUs, 1), d.GPU.Name, max(d.TensorParallelSize, 1), quoteArgv(flags))
	if _, err := s.VirtualDeployment(p); err != nil {
		var f *Failure
		if !errors.As(err, &f) {
			return "", err
		}
		desc += " — would be INFEASIBLE: " + f.Error()
	}
	return desc, nil
}
