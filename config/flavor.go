package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/flagcatalog"
	"github.com/spoc-project/spoc/sglang"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/telemetry"
	"github.com/spoc-project/spoc/vllm"
)

// Engine flavors: the dialect of the server spoc launches.
const (
	FlavorVLLM    = engine.FlavorVLLM
	FlavorSGLang  = engine.FlavorSGLang
	FlavorGeneric = engine.FlavorGeneric
)

// EngineFlavors lists every engine flavor.
var EngineFlavors = []string{FlavorVLLM, FlavorSGLang, FlavorGeneric}

// GenericEngine describes a server spoc knows nothing about (flavor
// generic): the launcher passes the command template (engine.process.command
// or engine.kubernetes.args) and, for each parameter a server gets, the
// arguments its template renders — nothing else.
type GenericEngine struct {
	Params      map[string]ArgTemplate `yaml:"params,omitempty" doc:"Per parameter (an engine.params key or a search.space name), the arguments it becomes: one text/template string or a list of them, over {{.Value}} (the value as text: 8, 0.85, true) and {{.Name}}; an argument that renders empty is dropped ({{if eq .Value \"true\"}}--flag{{end}}). A parameter without a template is an error."`
	ResetPath   string                 `yaml:"reset_path,omitempty" doc:"Route POSTed to empty the server's prefix cache between runs (e.g. /reset_prefix_cache); empty: the server has none, and every run after the first on a server is flagged warm."`
	BusyMetrics []string               `yaml:"busy_metrics,omitempty" doc:"Prometheus gauges on the server's metrics path that count requests running or waiting; a cache reset waits until their sum reads 0. Empty: it waits for nothing."`
	Defaults    map[string]any         `yaml:"defaults,omitempty" doc:"The values the server gives the parameters its command line leaves out (as its documentation says), keyed like engine.generic.params: a study's second seed, and what tuned vs default compares an unset parameter at. Empty: spoc knows none, and there is no defaults seed."`
	Metrics     map[string]string      `yaml:"metrics,omitempty" doc:"The server's own Prometheus metric names, by what each measures (a role: running, waiting, kv_cache_usage, prefix_cache_queries, prefix_cache_hits, prompt_tokens, generation_tokens, preemptions, request_success, ttft, itl, e2e, queue_time; spoc telemetry catalog lists them): telemetry reads these names from the server's metrics path and nothing else of its, and a cache reset waits on running and waiting when busy_metrics is empty. Empty: spoc reads no server metrics (the run and the plan say so); GPU exporters are still read."`
}

// GenericDefaultsName names a generic server's declared defaults.
const GenericDefaultsName = "server's declared defaults (engine.generic.defaults)"

// EngineDefaults are the values the engine gives the flags its command
// line leaves out, and whose they are: the flavor's (engine.Flavor
// Defaults), or for generic what engine.generic.defaults declares, or
// none.
func (e Engine) EngineDefaults() (map[string]any, string) {
	if fl, ok := engine.Named(e.flavorName()); ok {
		return fl.Defaults, fl.DefaultsName
	}
	if len(e.Generic.Defaults) == 0 {
		return nil, GenericDefaultsName
	}
	return e.Generic.Defaults, GenericDefaultsName
}

// ArgTemplate is the arguments one parameter becomes under flavor generic:
// written as one string ("--max-seqs={{.Value}}") or a list of them
// (["--max-seqs", "{{.Value}}"]).
type ArgTemplate []string

// UnmarshalYAML accepts a string or a list of strings.
func (a *ArgTemplate) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var s string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*a = ArgTemplate{s}
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		*a = l
		return nil
	}
	return errors.New("want a template string or a list of template strings")
}

// flavorName is the engine's flavor, vllm when unset.
func (e Engine) flavorName() string {
	if e.Flavor == "" {
		return FlavorVLLM
	}
	return e.Flavor
}

// LaunchFlavor is the engine.Flavor the launchers of this engine speak:
// vLLM's, or the generic one built from engine.generic.
func (e Engine) LaunchFlavor() (engine.Flavor, error) {
	switch e.flavorName() {
	case FlavorVLLM:
		return engine.VLLM(), nil
	case FlavorSGLang:
		return engine.SGLang(), nil
	case FlavorGeneric:
		templates := make(map[string][]string, len(e.Generic.Params))
		for k, v := range e.Generic.Params {
			templates[k] = v
		}
		busy := e.Generic.BusyMetrics
		if len(busy) == 0 {
			// the gauges of requests in flight, where the server's names
			// for them are given
			for _, role := range []string{telemetry.RoleRunning, telemetry.RoleWaiting} {
				if name := e.Generic.Metrics[role]; name != "" {
					busy = append(busy, name)
				}
			}
		}
		fl, err := engine.Generic(templates, e.Generic.ResetPath, busy)
		fl.Defaults, fl.DefaultsName = e.EngineDefaults()
		fl.Metrics = e.Generic.Metrics
		return fl, err
	}
	return engine.Flavor{}, fmt.Errorf("engine.flavor: unknown flavor %q", e.Flavor)
}

// validateFlavor checks engine.flavor and, for generic, its templates and
// that every parameter a server would get has one: engine.params keys and
// every search.space name (space, the search section's).
func (e *Engine) validateFlavor(p string, space []Param, errs *Errors) {
	if !oneOf(e.flavorName(), EngineFlavors) {
		errs.Addf(p+".flavor", "unknown engine flavor %q%s (one of %s)", e.Flavor, suggest(e.Flavor, EngineFlavors), quoteList(EngineFlavors))
		return
	}
	if e.flavorName() != FlavorGeneric {
		if len(e.Generic.Params) > 0 || e.Generic.ResetPath != "" || len(e.Generic.BusyMetrics) > 0 || len(e.Generic.Defaults) > 0 || len(e.Generic.Metrics) > 0 {
			errs.Addf(p+".generic", "is read only with engine.flavor generic (the flavor is %s)", e.flavorName())
		}
	}
	switch e.flavorName() {
	case FlavorSGLang:
		e.validateFlags(p, space, sglang.Catalogue, "a vLLM", sglang.VLLMCounterparts, errs)
		return
	case FlavorVLLM:
		e.validateFlags(p, space, vllm.Catalogue, "an SGLang", vllmCounterparts(), errs)
		return
	}
	if e.Kind == EngineSim {
		errs.Addf(p+".flavor", "generic describes a server spoc knows nothing about, which the simulator cannot stand in for: use kind process, kubernetes or external (or flavor %s with kind sim)", FlavorVLLM)
	}
	for _, k := range sortedKeys(e.Generic.Params) {
		kp := p + ".generic.params." + k
		if len(e.Generic.Params[k]) == 0 {
			errs.Addf(kp, "must give at least one argument template")
			continue
		}
		if _, err := engine.Generic(map[string][]string{k: e.Generic.Params[k]}, "", nil); err != nil {
			errs.Addf(kp, "%s", strings.TrimPrefix(err.Error(), "generic engine: "))
		}
	}
	if e.Kind == EngineKubernetes && len(e.Kubernetes.Args) == 0 {
		// the default args are vLLM's (--model, --port)
		errs.Addf(p+".kubernetes.args", "flavor generic needs the container's args template (with {{.Port}} where the server takes its port): spoc adds none, not even vLLM's default --model and --port")
	}
	if e.Generic.ResetPath != "" && !strings.HasPrefix(e.Generic.ResetPath, "/") {
		errs.Addf(p+".generic.reset_path", "must be a path starting with /, got %q", e.Generic.ResetPath)
	}
	e.validateGenericMetrics(p+".generic.metrics", errs)
	if e.Kind == EngineExternal {
		// spoc applies no parameter to a server it did not start
		return
	}
	templated := make(map[string]bool, len(e.Generic.Params))
	names := make([]string, 0, len(e.Generic.Params))
	for k := range e.Generic.Params {
		templated[vllm.FlagName(k)] = true
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range sortedKeys(e.Params) {
		if !templated[vllm.FlagName(k)] {
			errs.Addf(p+".params."+k, "has no template in %s.generic.params%s: flavor generic passes only the arguments it is told", p, suggest(k, names))
		}
	}
	for _, k := range sortedKeys(e.Generic.Defaults) {
		if !templated[vllm.FlagName(k)] {
			errs.Addf(p+".generic.defaults."+k, "has no template in %s.generic.params%s: a defaults seed passes it to the server", p, suggest(k, names))
		}
	}
	for i, sp := range space {
		if !templated[vllm.FlagName(sp.Name)] {
			errs.Addf(fmt.Sprintf("search.space[%d].name", i), "%q has no template in %s.generic.params%s: flavor generic passes only the arguments it is told (search.space names the parameters to map)", sp.Name, p, suggest(sp.Name, names))
		}
	}
}

// validateGenericMetrics checks engine.generic.metrics: every key one of
// telemetry's engine metric roles, every name a Prometheus metric name
// given to one role only.
func (e *Engine) validateGenericMetrics(p string, errs *Errors) {
	roles := telemetry.Roles()
	owner := map[string]string{}
	for _, role := range sortedKeys(e.Generic.Metrics) {
		name := e.Generic.Metrics[role]
		if !oneOf(role, roles) {
			errs.Addf(p+"."+role, "unknown metric role %q%s (one of %s; spoc telemetry catalog says what each measures)", role, suggest(role, roles), quoteList(roles))
			continue
		}
		if err := telemetry.CheckServerMetrics(map[string]string{role: name}); err != nil {
			errs.Addf(p+"."+role, "%v", err)
			continue
		}
		if prev, dup := owner[name]; dup {
			errs.Addf(p+"."+role, "%q is already the server's name for %s: one metric measures one thing", name, prev)
			continue
		}
		owner[name] = role
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// dropVLLMDefaults clears the defaults that name vLLM flags when the
// flavor is generic and the file (or a setting) did not set them:
// engine.params (vLLM's scheduler flags) would otherwise reach a server
// that knows none of them. search.space stays: its names must each have a
// template, and a default space is reported as such (validateFlavor).
func (c *Config) dropVLLMDefaults() {
	flavor := c.Engine.flavorName()
	if flavor == FlavorVLLM {
		return
	}
	if !c.written["engine.params"] {
		c.Engine.Params = nil
	}
	if flavor != FlavorSGLang {
		if !c.written["engine.kubernetes.image"] {
			// vLLM's image cannot be a generic server's: kind kubernetes
			// then asks for one
			c.Engine.Kubernetes.Image = ""
		}
		return
	}
	// SGLang has its own knobs and its own image
	if !c.written["search.space"] {
		c.Search.Space = DefaultSGLangSpace()
	}
	if !c.written["engine.kubernetes.image"] {
		c.Engine.Kubernetes.Image = DefaultSGLangImage
	}
}

// DefaultSGLangImage is the server image of flavor sglang on Kubernetes.
const DefaultSGLangImage = "lmsysorg/sglang:latest"

// DefaultSGLangKubeArgs start the server in the SGLang image, which has
// no server entrypoint: the args are the whole command.
var DefaultSGLangKubeArgs = append(append([]string(nil), sglang.Launch...), "--"+sglang.FlagModelPath, "{{.Model}}", "--"+sglang.FlagPort, "{{.Port}}")

// validateFlags checks every engine.params key and search.space name
// against the flavor's flag catalogue (vllm.Catalogue, sglang.Catalogue,
// each read from the engine's source), so that a misspelt flag or another
// engine's fails spoc config check with its key and line and a "did you
// mean", and each engine.params value against the flag's type and
// choices. foreign maps the other engine's flags to this one's closest
// (counterparts), named by that engine.
func (e *Engine) validateFlags(p string, space []Param, cat *flagcatalog.Catalogue, other string, counterparts map[string]string, errs *Errors) {
	unknown := func(name string) string {
		f := vllm.FlagName(name)
		if c, ok := counterparts[f]; ok {
			return fmt.Sprintf("--%s is %s flag, not %s's (did you mean --%s? %s's closest; docs/engines.md says how they differ)", f, other, cat.Engine, c, cat.Engine)
		}
		return fmt.Sprintf("unknown %s flag --%s%s (spoc's %s catalogue, %s; a flag it lacks can be written into the command)", cat.Engine, f, suggest(f, cat.Names()), cat.Engine, catalogueVersion(cat))
	}
	for _, k := range sortedKeys(e.Params) {
		f, ok := cat.Lookup(k)
		if !ok {
			errs.Addf(p+".params."+k, "%s", unknown(k))
			continue
		}
		if err := f.Check(e.Params[k]); err != nil {
			errs.Addf(p+".params."+k, "%v", err)
			continue
		}
		if cat == vllm.Catalogue && sim.IsParam(k) {
			// a value vLLM's type allows but no server runs with
			// (max-num-seqs: -8), which the engine would refuse only
			// once the plan started
			d := sim.DefaultEngineParams()
			if err := d.Apply(map[string]any{k: e.Params[k]}); err != nil {
				errs.Addf(p+".params."+k, "%s", strings.TrimPrefix(err.Error(), "engine params: "))
			}
		}
	}
	for i, sp := range space {
		if _, ok := cat.Lookup(sp.Name); !ok {
			errs.Addf(fmt.Sprintf("search.space[%d].name", i), "%s", unknown(sp.Name))
		}
	}
}

// catalogueVersion names the release a catalogue was read from.
func catalogueVersion(cat *flagcatalog.Catalogue) string {
	if cat == vllm.Catalogue {
		return "vLLM " + vllm.CatalogueVersion
	}
	return "SGLang " + sglang.CatalogueVersion
}

// vllmCounterparts are SGLang's flags and vLLM's closest, the inverse of
// sglang.VLLMCounterparts.
func vllmCounterparts() map[string]string {
	out := make(map[string]string, len(sglang.VLLMCounterparts))
	for v, sg := range sglang.VLLMCounterparts {
		name, inverted := strings.CutSuffix(sg, " (inverted)")
		if inverted {
			v += " (inverted)"
		}
		out[name] = v
	}
	return out
}
