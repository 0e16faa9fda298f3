package engine

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/vllm"
)

// Options are what FromConfig needs beyond the engine section.
type Options struct {
	// NamePrefix names Kubernetes objects (the study name, for example);
	// "spoc" when empty.
	NamePrefix string
	// ExtraMetricsURLs (GPU exporters from the telemetry section) are added
	// to every Endpoint of process launchers.
	ExtraMetricsURLs []string
	// Dir receives one folder per started server (its log and files).
	Dir string
	// Runner replaces kubectl (tests, wrappers); nil runs the configured
	// binary.
	Runner Runner
	Logger *slog.Logger
}

// BaseParams are the flags every server of this deployment gets before the
// trial's: the configured engine.params, the tensor-parallel size, the
// context limit and, for a local process on several tensor-parallel groups,
// the data-parallel size. Kubernetes runs data-parallel replicas as pods
// instead (see KubernetesOptions.Replicas).
func BaseParams(e config.Engine) Params {
	p := Params{}
	if e.TensorParallelSize > 0 {
		p["tensor-parallel-size"] = e.TensorParallelSize
	}
	if e.MaxModelLen > 0 {
		p["max-model-len"] = e.MaxModelLen
	}
	if e.Kind == config.EngineProcess && e.TensorParallelSize > 0 && e.GPUs/e.TensorParallelSize > 1 {
		p["data-parallel-size"] = e.GPUs / e.TensorParallelSize
	}
	return vllm.Merge(p, e.Params)
}

// FromConfig returns the launcher the engine section describes. The sim
// kind needs package sim and is built by NewSimFromConfig.
func FromConfig(e config.Engine, o Options) (Launcher, error) {
	served := vllm.ServedName(e.Model, e.ServedModelName)
	switch e.Kind {
	case config.EngineSim:
		return NewSimFromConfig(e, o)
	case config.EngineProcess:
		pe := e.Process
		return NewProcess(ProcessOptions{
			Command:          pe.Command,
			Env:              pe.Env,
			Model:            e.Model,
			ServedModelName:  served,
			BaseParams:       BaseParams(e),
			HealthPath:       pe.HealthPath,
			MetricsPath:      pe.MetricsPath,
			ExtraMetricsURLs: o.ExtraMetricsURLs,
			HealthTimeout:    time.Duration(pe.HealthTimeout),
			StopTimeout:      time.Duration(pe.StopTimeout),
			Dir:              o.Dir,
			Logger:           o.Logger,
		})
	case config.EngineExternal:
		urls := append(append([]string(nil), e.External.MetricsURL...), o.ExtraMetricsURLs...)
		return NewExternal(e.External.URL, served, "", urls)
	case config.EngineKubernetes:
		k := e.Kubernetes
		tp := max(e.TensorParallelSize, 1)
		runner := o.Runner
		if runner == nil {
			runner = ExecRunner{Binary: k.Kubectl}
		}
		return NewKubernetes(KubernetesOptions{
			Namespace:       k.Namespace,
			Context:         k.Context,
			Image:           k.Image,
			Args:            k.Args,
			Model:           e.Model,
			ServedModelName: served,
			BaseParams:      BaseParams(e),
			Replicas:        max(e.GPUs/tp, 1),
			GPUsPerReplica:  tp,
			GPUResource:     k.GPUResource,
			NodeSelector:    k.NodeSelector,
			ReadyTimeout:    time.Duration(k.ReadyTimeout),
			StopTimeout:     time.Duration(e.Process.StopTimeout),
			PortForward:     k.PortForward,
			NamePrefix:      o.NamePrefix,
			Dir:             o.Dir,
			Runner:          runner,
			Logger:          o.Logger,
		})
	}
	return nil, fmt.Errorf("engine.kind: unknown engine %q", e.Kind)
}
