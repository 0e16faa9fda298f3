package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/sim/serve"
	"github.com/spoc-project/spoc/vllm"
)

// Virtual is implemented by engines that are the simulator. An evaluation
// that finds one can skip HTTP and wall-clock time altogether and run the
// whole load in virtual time (sim.RunVirtual) on VirtualDeployment(p),
// which is what makes a simulated study take seconds.
type Virtual interface {
	Launcher
	// VirtualDeployment returns the simulated deployment configured with
	// p. Parameters the simulator refuses (an impossible value) give a
	// *Failure with ReasonRejected; a deployment whose weights leave no
	// room for KV cache gives ReasonKVCache. Both are INFEASIBLE.
	VirtualDeployment(p Params) (sim.Deployment, error)
}

// SimOptions configure the simulator launcher.
type SimOptions struct {
	// TimeScale speeds up the HTTP server's clock (engine.sim.time_scale).
	TimeScale float64
	// ErrorRate injects HTTP 500s (engine.sim.error_rate); Seed draws them.
	ErrorRate float64
	Seed      uint64
	// MaxServers is how many HTTP servers the launcher runs at once
	// (search.parallel); 1 when 0. Virtual-time evaluations start none.
	MaxServers int
	// Dir receives one folder per started server with its log; a
	// temporary folder per server when empty.
	Dir    string
	Logger *slog.Logger
}

// Sim is the built-in simulator as an engine: Start serves the simulated
// deployment on a loopback port, and VirtualDeployment lets an evaluation
// run it in virtual time instead.
type Sim struct {
	base sim.Deployment
	opts SimOptions
	slot slot
	dirs *serverDirs
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
	return &Sim{base: base, opts: o, dirs: &serverDirs{root: o.Dir}, slot: slot{max: o.MaxServers}}, nil
}

// Kind returns "sim".
func (s *Sim) Kind() string { return "sim" }

// VirtualDeployment applies p to the base deployment's engine flags. A flag
// the simulator does not model is a plain error (the study's space is
// wrong for this engine, every trial would fail alike).
func (s *Sim) VirtualDeployment(p Params) (sim.Deployment, error) {
	for k := range p {
		if !sim.IsParamOf(s.base.Flavor, k) {
			return sim.Deployment{}, fmt.Errorf("sim engine: parameter %q is not a flag the simulator models (known: %v)", k, sim.ParamNames())
		}
	}
	d := s.base
	if err := d.ApplyParams(p); err != nil {
		return sim.Deployment{}, &Failure{Reason: ReasonRejected, Detail: err.Error(), ExitCode: -1}
	}
	if err := checkDeployment(d); err != nil {
		return sim.Deployment{}, err
	}
	return d, nil
}

// checkDeployment builds d as a run would (prices it, sizes its KV cache)
// without running anything. A deployment whose weights and activations
// leave no memory for the KV cache is the simulator's "CUDA out of memory
// at start-up".
func checkDeployment(d sim.Deployment) error {
	_, err := d.Build()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, perfmodel.ErrNoKVCache):
		return &Failure{Reason: ReasonKVCache, Detail: err.Error(), ExitCode: -1}
	}
	return fmt.Errorf("sim engine: %w", err)
}

// simServer is a running simulator HTTP server.
type simServer struct {
	s       *Sim
	sim     *serve.Server
	http    *http.Server
	ep      Endpoint
	done    chan struct{} // closed when Serve returns
	logFile *os.File
	once    sync.Once
}

// Start serves the simulated deployment configured with p on a loopback
// port: the OpenAI-compatible API, vLLM metrics on /metrics and DCGM-style
// GPU metrics on /dcgm/metrics. Request-level events go to server.log in
// a new server folder.
func (s *Sim) Start(ctx context.Context, p Params) (Server, error) {
	if err := s.slot.take("sim"); err != nil {
		return nil, err
	}
	srv, err := s.start(p)
	if err != nil {
		s.slot.release()
		return nil, err
	}
	return srv, nil
}

func (s *Sim) start(p Params) (*simServer, error) {
	d, err := s.VirtualDeployment(p)
	if err != nil {
		return nil, err
	}
	logPath, logFile, err := s.dirs.createServerLog("sim")
	if err != nil {
		return nil, err
	}
	flags, _ := s.flavor().Args(p)
	fmt.Fprintf(logFile, "# spoc: simulated %s on %d× %s %s\n", d.Model.Name, max(d.GPUs, 1), d.GPU.Name, quoteArgv(flags))
	srv, err := serve.New(serve.Config{
		Deployment: d, TimeScale: s.opts.TimeScale, ErrorRate: s.opts.ErrorRate, Seed: s.opts.Seed,
		Logger: slog.New(slog.NewTextHandler(logFile, nil)),
	})
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("sim engine: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		logFile.Close()
		return nil, fmt.Errorf("sim engine: listen: %w", err)
	}
	base := "http://" + l.Addr().String()
	r := &simServer{s: s, sim: srv, http: &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{}), logFile: logFile,
		ep: Endpoint{BaseURL: base, MetricsURLs: []string{base + vllm.PathMetrics, base + "/dcgm/metrics"}, Model: srv.Model(), Log: logPath}}
	go func() {
		defer close(r.done)
		if err := r.http.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(logFile, "# spoc: serve: %v\n", err)
		}
	}()
	s.opts.Logger.Info("server started", "engine", "sim", "url", base, "log", logPath)
	return r, nil
}

// Endpoint returns the loopback address the simulator serves on.
func (r *simServer) Endpoint() Endpoint { return r.ep }

// ResetCache posts /reset_prefix_cache once the server is idle, as to a
// real server (resetWhenIdle).
func (r *simServer) ResetCache(ctx context.Context) error {
	return resetWhenIdle(ctx, r.ep.BaseURL, r.ep.MetricsURLs[0])
}

// Stop ends the simulator (requests in flight fail, as on a real server
// that goes away) and closes its listener.
func (r *simServer) Stop(ctx context.Context) error {
	r.once.Do(func() {
		defer r.s.slot.release()
		defer r.logFile.Close()
		r.sim.Close()
		if err := r.http.Shutdown(ctx); err != nil {
			r.http.Close()
		}
		<-r.done
	})
	return nil
}

// DryRun describes the simulated server p would get, and whether the
// simulator would refuse it.
func (s *Sim) DryRun(p Params) (string, error) {
	flags, err := s.flavor().Args(p)
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

// flavor is the dialect of the simulated deployment's parameters: SGLang's
// flags for a deployment of flavor sglang, vLLM's otherwise.
func (s *Sim) flavor() Flavor {
	if f, ok := Named(s.base.Flavor); ok {
		return f
	}
	return VLLM()
}

// Describe names the simulated deployment; the provenance it goes into
// already says "simulated".
func (s *Sim) Describe() string {
	d := s.base
	gpus, tp := max(d.GPUs, 1), max(d.TensorParallelSize, 1)
	if n := gpus / tp; n > 1 {
		// a fleet: not one engine across all its GPUs
		return fmt.Sprintf("%s on %d× %s, %d replicas of tensor parallel %d", d.Model.Name, gpus, d.GPU.Name, n, tp)
	}
	return fmt.Sprintf("%s on %d× %s, tensor parallel %d", d.Model.Name, gpus, d.GPU.Name, tp)
}
