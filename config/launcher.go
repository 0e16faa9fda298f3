package config

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/engine/haproxy"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/vllm"
)

// LauncherOptions are what Engine.Launcher needs beyond the engine section.
type LauncherOptions struct {
	// NamePrefix names Kubernetes objects (the study name, for example);
	// "spoc" when empty.
	NamePrefix string
	// Study labels Kubernetes objects (spoc.dev/study), for `spoc k8s gc`.
	Study string
	// MaxServers is how many servers a kubernetes (or sim) launcher runs
	// at once: search.parallel, one per trial running at the same time.
	MaxServers int
	// ExtraMetricsURLs (GPU exporters from the telemetry section) are added
	// to every endpoint of process and external launchers.
	ExtraMetricsURLs []string
	// Dir receives one folder per started server (its log and files).
	Dir string
	// Runner replaces kubectl (tests, wrappers); nil runs the configured
	// binary.
	Runner engine.Runner
	// Sim is the simulated deployment Config.Setup resolved once, for the
	// sim launcher; nil resolves the engine section's.
	Sim    *sim.Deployment
	Logger *slog.Logger
	// Fleet is the router in front of the replicas (the fleet section):
	// a process fleet behind HAProxy starts one server per replica.
	Fleet Fleet
}

// BaseParams are the flags every server of this deployment gets before a
// candidate's, in the flavor's names (engine.Flavor.ShapeParams): the
// configured engine.params, the tensor-parallel size, the context limit,
// the served model name when one is configured, the switches spoc reads a
// launched server by (vLLM's --enable-prompt-tokens-details, SGLang's
// --enable-metrics and --enable-cache-report) and, for a local process on
// several tensor-parallel groups that f does not put behind HAProxy, the
// data-parallel size (the server routes inside itself). Flavor generic
// gets engine.params alone.
// Kubernetes runs data-parallel replicas as pods instead
// (engine.KubernetesOptions.Replicas), and so does a process fleet behind
// HAProxy: one server per replica.
func (e Engine) BaseParams(f Fleet) engine.Params {
	fl, ok := engine.Named(e.flavorName())
	if !ok {
		// generic: nothing implicit, a generic server gets what
		// engine.params says, each through its template
		return engine.Params(vllm.Merge(nil, e.Params))
	}
	shape := engine.Shape{TensorParallel: e.TensorParallelSize, ContextLength: e.MaxModelLen,
		// a server spoc starts gets the switches spoc reads it by
		Launched: e.Kind == EngineProcess || e.Kind == EngineKubernetes}
	if e.Kind != EngineSim {
		// requests use the served name; a server started without it would
		// answer them 404
		shape.ServedModelName = e.ServedModelName
	}
	if n := e.replicas(); e.Kind == EngineProcess && n > 1 && !haproxyFronted(e, f) {
		// the server routes between its own data-parallel replicas
		shape.DataParallel = n
	}
	return vllm.Merge(fl.ShapeParams(shape), e.Params)
}

// launchers are the engine kinds and their launchers' constructors, one
// entry per kind (blackbox_exporter's prober table is the model): a new
// engine is one entry here, its section in engine.go and its name in
// EngineKinds.
var launchers = map[string]func(Engine, LauncherOptions) (engine.Launcher, error){
	EngineSim:        simLauncher,
	EngineProcess:    processLauncher,
	EngineExternal:   externalLauncher,
	EngineKubernetes: kubernetesLauncher,
}

// Launcher returns the launcher the engine section describes: the one
// engine every phase of a plan runs on.
func (e Engine) Launcher(o LauncherOptions) (engine.Launcher, error) {
	newLauncher, ok := launchers[e.Kind]
	if !ok {
		return nil, fmt.Errorf("engine.kind: unknown engine %q", e.Kind)
	}
	return newLauncher(e, o)
}

// simLauncher is the simulator of the engine section's model, GPU and
// flags: o.Sim, the deployment Config.Setup resolved, or the section's own
// when o has none.
func simLauncher(e Engine, o LauncherOptions) (engine.Launcher, error) {
	d := o.Sim
	if d == nil {
		resolved, err := resolveSim(e, o.Fleet)
		if err != nil {
			return nil, err
		}
		d = &resolved
	}
	return engine.NewSim(*d, engine.SimOptions{TimeScale: e.Sim.TimeScale, ErrorRate: e.Sim.ErrorRate, MaxServers: o.MaxServers, Dir: o.Dir, Logger: o.Logger})
}

func processLauncher(e Engine, o LauncherOptions) (engine.Launcher, error) {
	pe := e.Process
	flavor, err := e.LaunchFlavor()
	if err != nil {
		return nil, err
	}
	return engine.NewProcess(engine.ProcessOptions{
		Flavor:           flavor,
		Command:          pe.Command,
		Env:              pe.Env,
		Model:            e.Model,
		ServedModelName:  vllm.ServedName(e.Model, e.ServedModelName),
		BaseParams:       e.BaseParams(o.Fleet),
		HealthPath:       pe.HealthPath,
		MetricsPath:      pe.MetricsPath,
		ExtraMetricsURLs: o.ExtraMetricsURLs,
		HealthTimeout:    time.Duration(pe.HealthTimeout),
		StopTimeout:      time.Duration(pe.StopTimeout),
		Dir:              o.Dir,
		Logger:           o.Logger,
		Replicas:         e.replicas(),
		GPUsPerReplica:   e.TensorParallelSize,
		Router:           fleetRouter(e, o.Fleet),
	})
}

// fleetRouter is the HAProxy a process fleet runs behind, nil when f puts
// none in front (one server: vLLM's own data parallelism, or one replica).
func fleetRouter(e Engine, f Fleet) *engine.FleetRouter {
	if !haproxyFronted(e, f) {
		return nil
	}
	r := &engine.FleetRouter{Binary: f.HAProxy, Header: f.SessionHeader, HashBalanceFactor: f.HashBalanceFactor}
	switch f.Router {
	case sim.RouterRoundRobin:
		r.Balance = haproxy.RoundRobin
	case sim.RouterLeastLoaded:
		r.Balance = haproxy.LeastConn
	case sim.RouterSessionAffinity:
		r.Balance = haproxy.Hash
	}
	return r
}

func externalLauncher(e Engine, o LauncherOptions) (engine.Launcher, error) {
	urls := append(append([]string(nil), e.External.MetricsURL...), o.ExtraMetricsURLs...)
	flavor, err := e.LaunchFlavor()
	if err != nil {
		return nil, err
	}
	ext, err := engine.NewExternal(e.External.URL, vllm.ServedName(e.Model, e.ServedModelName), "", urls)
	if err != nil {
		return nil, err
	}
	return ext.WithFlavor(flavor), nil
}

func kubernetesLauncher(e Engine, o LauncherOptions) (engine.Launcher, error) {
	k := e.Kubernetes
	tp := max(e.TensorParallelSize, 1)
	runner := o.Runner
	if runner == nil {
		runner = engine.ExecRunner{Binary: k.Kubectl}
	}
	flavor, err := e.LaunchFlavor()
	if err != nil {
		return nil, err
	}
	args := k.Args
	if len(args) == 0 && e.flavorName() == FlavorSGLang {
		args = DefaultSGLangKubeArgs
	}
	opts := engine.KubernetesOptions{
		Flavor:          flavor,
		Namespace:       k.Namespace,
		Context:         k.Context,
		Kubeconfig:      k.Kubeconfig,
		Study:           o.Study,
		Image:           k.Image,
		Args:            args,
		Model:           e.Model,
		ServedModelName: vllm.ServedName(e.Model, e.ServedModelName),
		BaseParams:      e.BaseParams(o.Fleet),
		Replicas:        max(e.replicas(), 1),
		GPUsPerReplica:  tp,
		GPUResource:     k.GPUResource,
		NodeSelector:    k.NodeSelector,
		ReadyTimeout:    time.Duration(k.ReadyTimeout),
		StopTimeout:     time.Duration(k.StopTimeout),
		PortForward:     k.PortForward,
		NamePrefix:      o.NamePrefix,
		MaxServers:      o.MaxServers,
		Dir:             o.Dir,
		Runner:          runner,
		Logger:          o.Logger,
	}
	if err := k.Pod.apply(&opts); err != nil {
		return nil, err
	}
	return engine.NewKubernetes(opts)
}
