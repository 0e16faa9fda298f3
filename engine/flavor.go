package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/spoc-project/spoc/sglang"
	"github.com/spoc-project/spoc/vllm"
)

// Flavor names.
const (
	FlavorVLLM    = "vllm"
	FlavorSGLang  = "sglang"
	FlavorGeneric = "generic"
)

// Flavor is the dialect of the server a launcher starts: how a server's
// parameters become command-line arguments, whether the launcher may add
// arguments of its own, which route empties the prefix cache and which
// metrics say the server is busy. The zero Flavor is vLLM's (VLLM).
type Flavor struct {
	// Name is the flavor's name (FlavorVLLM, FlavorGeneric), for errors
	// and descriptions.
	Name string
	// Args renders a server's parameters (base and trial merged) as the
	// arguments after the command template.
	Args func(Params) ([]string, error)
	// NamedFlags means parameters are the server's own flags by name
	// (vLLM's): a base flag the command sets is left to the command, a
	// trial flag the command sets is an error, and the launcher appends
	// --host with the loopback address unless the command binds one.
	// Without it the launcher adds nothing: the command and Args are the
	// whole command line.
	NamedFlags bool
	// ResetPath is the route POSTed to empty the prefix cache; empty means
	// the server has none (ResetCache answers ErrResetUnsupported, and a
	// plan flags every run after the first warm).
	ResetPath string
	// DevModeEnv is set to "1" in a loopback server's environment to open
	// ResetPath (vLLM's VLLM_SERVER_DEV_MODE); empty sets nothing.
	DevModeEnv string
	// BusyMetrics are the gauges whose sum counts the requests running or
	// waiting; a cache reset waits until they read 0. None: the reset
	// waits for nothing.
	BusyMetrics []string
	// Program is the command that serves model outside spoc, before its
	// flags (vllm serve MODEL); nil where spoc knows none (generic: the
	// configured command template is the only command).
	Program func(model string) []string
	// Shape names the flags of a deployment's shape and the switches a
	// launched server needs for spoc to read it; the zero ShapeFlags
	// (generic) names none, so that nothing implicit is passed.
	Shape ShapeFlags
	// Defaults are the values the server gives its flags when the command
	// line leaves them out, keyed by flag name (those with a fixed
	// default: SGLang derives some from the GPU at start-up); a study
	// seeds itself with them and tuned-vs-default compares against them.
	// DefaultsName says whose they are ("vLLM defaults"). A generic
	// server's are the ones its user declares, or none.
	Defaults     map[string]any
	DefaultsName string
	// Metrics are the server's own names of its engine metrics, by
	// telemetry role (running, kv_cache_usage, …; telemetry.Roles), for a
	// server whose names telemetry's catalog does not know (generic's
	// engine.generic.metrics). Nil for vLLM and SGLang: the catalog reads
	// their names (package vllm's, package sglang's). ServerMetrics says
	// which names telemetry reads.
	Metrics map[string]string
}

// NoGenericMetrics is why telemetry reads no metric of a generic server
// whose names spoc was not told.
const NoGenericMetrics = "no server metrics (generic flavor, no engine.generic.metrics)"

// ServerMetrics is how telemetry reads the server's metrics: by the
// catalog's names (vLLM's, SGLang's: names and none both empty), by the
// server's own names for each role (names), or not at all (none says
// why: a generic server whose names were not given).
func (f Flavor) ServerMetrics() (names map[string]string, none string) {
	switch {
	case len(f.Metrics) > 0:
		return f.Metrics, ""
	case f.Name == FlavorGeneric:
		return nil, NoGenericMetrics
	}
	return nil, ""
}

// ShapeFlags are a flavor's names for the flags spoc derives from the
// engine section rather than from engine.params: the parallelism, the
// context limit, the served name, and the switches without which spoc
// cannot read the server (vLLM's cached-token usage, SGLang's metrics).
type ShapeFlags struct {
	TensorParallel, DataParallel, ContextLength, ServedModelName string
	// Reporting are switched on in every server a launcher starts.
	Reporting []string
}

// Shape is a deployment's shape, as ShapeParams renders it. A zero field
// is left out.
type Shape struct {
	TensorParallel, DataParallel, ContextLength int
	ServedModelName                             string
	// Launched adds the flavor's reporting switches (a server spoc
	// starts, not a command shown to run elsewhere).
	Launched bool
}

// ShapeParams returns s in f's flag names (nil for a flavor that names
// none: generic).
func (f Flavor) ShapeParams(s Shape) Params {
	n := f.Shape
	p := Params{}
	set := func(name string, v int) {
		if name != "" && v > 0 {
			p[name] = v
		}
	}
	set(n.TensorParallel, s.TensorParallel)
	set(n.DataParallel, s.DataParallel)
	set(n.ContextLength, s.ContextLength)
	if n.ServedModelName != "" && s.ServedModelName != "" {
		p[n.ServedModelName] = s.ServedModelName
	}
	if s.Launched {
		for _, r := range n.Reporting {
			p[r] = true
		}
	}
	if len(p) == 0 {
		return nil
	}
	return p
}

// ErrNoProgram is why a flavor without a program of its own (generic)
// cannot write a command line apart from its launcher's template.
var ErrNoProgram = errors.New("the engine flavor has no command of its own: the configured command template is the command")

// CommandLine is the command that serves model with the flavor's program:
// the program, shape's flags, then p's (each group in Args' order),
// quoted for a POSIX shell. A flavor without a program answers
// ErrNoProgram.
func (f Flavor) CommandLine(model string, shape, p Params) (string, error) {
	f = f.or()
	if f.Program == nil {
		return "", fmt.Errorf("flavor %s: %w", f.Name, ErrNoProgram)
	}
	argv := f.Program(model)
	for _, group := range []Params{shape, p} {
		if len(group) == 0 {
			continue
		}
		flags, err := f.Args(group)
		if err != nil {
			return "", err
		}
		argv = append(argv, flags...)
	}
	return quoteArgv(argv), nil
}

// Named returns the flavor called name when it needs nothing beyond its
// name (vllm, sglang; "" is vllm). Generic needs its templates (Generic).
func Named(name string) (Flavor, bool) {
	switch name {
	case "", FlavorVLLM:
		return VLLM(), true
	case FlavorSGLang:
		return SGLang(), true
	}
	return Flavor{}, false
}

// VLLM is the flavor of vLLM's `vllm serve` (and spoc sim serve, which
// takes its flags): parameters are vLLM flags (vllm.Flags), the prefix
// cache is reset on vllm.PathResetPrefixCache once the server is idle.
func VLLM() Flavor {
	return Flavor{
		Name:        FlavorVLLM,
		Args:        func(p Params) ([]string, error) { return vllm.Flags(p) },
		NamedFlags:  true,
		ResetPath:   vllm.PathResetPrefixCache,
		DevModeEnv:  vllm.EnvServerDevMode,
		BusyMetrics: []string{vllm.MetricNumRequestsRunning, vllm.MetricNumRequestsWaiting},
		Program:     func(model string) []string { return []string{"vllm", "serve", model} },
		Defaults:    vllm.Defaults(), DefaultsName: "vLLM defaults",
		Shape: ShapeFlags{TensorParallel: vllm.FlagTensorParallelSize, DataParallel: vllm.FlagDataParallelSize,
			ContextLength: vllm.FlagMaxModelLen, ServedModelName: vllm.FlagServedModelName,
			// vLLM reports usage.prompt_tokens_details.cached_tokens only
			// with it; without it every record's cached tokens read as
			// unknown and the prefix-cache hit rate has only the counters
			Reporting: []string{vllm.FlagEnablePromptTokensDetails}},
	}
}

// SGLang is the flavor of SGLang's `python3 -m sglang.launch_server`:
// parameters are SGLang flags (sglang.Render: switches have no off form),
// the launcher appends --host like vLLM's, and the radix cache is flushed
// on sglang.PathFlushCache once sglang:num_running_reqs and
// sglang:num_queue_reqs read 0 (SGLang refuses the flush, HTTP 400, while
// requests run). No development mode is needed.
func SGLang() Flavor {
	return Flavor{
		Name:        FlavorSGLang,
		Args:        func(p Params) ([]string, error) { return sglang.Render(p) },
		NamedFlags:  true,
		ResetPath:   sglang.PathFlushCache,
		BusyMetrics: []string{sglang.MetricNumRunningReqs, sglang.MetricNumQueueReqs},
		Program: func(model string) []string {
			return append(append([]string(nil), sglang.Launch...), "--"+sglang.FlagModelPath, model)
		},
		Defaults: sglang.Defaults(), DefaultsName: "SGLang defaults",
		Shape: ShapeFlags{TensorParallel: sglang.FlagTPSize, DataParallel: sglang.FlagDPSize,
			ContextLength: sglang.FlagContextLength, ServedModelName: sglang.FlagServedModelName,
			// SGLang serves no metrics without the first and reports no
			// cached_tokens without the second
			Reporting: []string{sglang.FlagEnableMetrics, sglang.FlagEnableCacheReport}},
	}
}

// or returns f, or VLLM when f is the zero Flavor.
func (f Flavor) or() Flavor {
	if f.Name == "" && f.Args == nil {
		return VLLM()
	}
	if f.Args == nil {
		f.Args = func(p Params) ([]string, error) { return vllm.Flags(p) }
	}
	return f
}

// TemplateValue is what a generic flavor's argument template sees:
// {{.Name}} the parameter's name, {{.Value}} its value as text (true or
// false for a boolean, integers without a decimal point).
type TemplateValue struct {
	Name  string
	Value string
}

// Generic is the flavor of a server spoc knows nothing about: it passes
// nothing it was not told. Each parameter a server gets (engine.params or
// a trial's) is rendered by its own template, a list of text/template
// arguments over TemplateValue ("--max-seqs={{.Value}}", or "--batch",
// "{{.Value}}"); an argument that renders empty is dropped, so that a
// boolean can map to a flag present or absent
// ({{if eq .Value "true"}}--radix{{end}}). A parameter without a template
// is an error, never a guessed flag. resetPath (optional) is the route
// that empties the prefix cache; busy (optional) the gauges that count
// requests in flight.
func Generic(templates map[string][]string, resetPath string, busy []string) (Flavor, error) {
	parsed := make(map[string][]*template.Template, len(templates))
	for name, args := range templates {
		key := vllm.FlagName(name)
		if key == "" {
			return Flavor{}, fmt.Errorf("generic engine: empty parameter name %q", name)
		}
		if _, dup := parsed[key]; dup {
			return Flavor{}, fmt.Errorf("generic engine: two templates for parameter %q", key)
		}
		if len(args) == 0 {
			return Flavor{}, fmt.Errorf("generic engine: parameter %q: empty template (give at least one argument)", name)
		}
		for i, a := range args {
			t, err := template.New(fmt.Sprintf("%s[%d]", name, i)).Option("missingkey=error").Parse(a)
			if err != nil {
				return Flavor{}, fmt.Errorf("generic engine: parameter %q: template %q: %w", name, a, err)
			}
			parsed[key] = append(parsed[key], t)
		}
	}
	if resetPath != "" && !strings.HasPrefix(resetPath, "/") {
		return Flavor{}, fmt.Errorf("generic engine: reset path %q must start with /", resetPath)
	}
	render := func(p Params) ([]string, error) {
		names := make([]string, 0, len(p))
		byKey := make(map[string]string, len(p))
		for k := range p {
			key := vllm.FlagName(k)
			if prev, dup := byKey[key]; dup {
				return nil, fmt.Errorf("generic engine: parameters %q and %q are the same parameter", prev, k)
			}
			byKey[key] = k
			names = append(names, key)
		}
		sort.Strings(names)
		var args []string
		for _, key := range names {
			tmpls, ok := parsed[key]
			if !ok {
				return nil, &UntemplatedError{Param: byKey[key]}
			}
			v, err := valueText(p[byKey[key]])
			if err != nil {
				return nil, fmt.Errorf("generic engine: parameter %q: %w", byKey[key], err)
			}
			for _, t := range tmpls {
				var b bytes.Buffer
				if err := t.Execute(&b, TemplateValue{Name: byKey[key], Value: v}); err != nil {
					return nil, fmt.Errorf("generic engine: parameter %q: %w", byKey[key], err)
				}
				if b.Len() > 0 {
					args = append(args, b.String())
				}
			}
		}
		return args, nil
	}
	return Flavor{Name: FlavorGeneric, Args: render, ResetPath: resetPath, BusyMetrics: busy}, nil
}

// UntemplatedError is a parameter a generic flavor has no template for:
// spoc does not guess its flag.
type UntemplatedError struct{ Param string }

func (e *UntemplatedError) Error() string {
	return fmt.Sprintf("generic engine: parameter %q has no template (engine.generic.params): flavor generic passes only the arguments it is told", e.Param)
}

// valueText writes a parameter's value as a template sees it.
func valueText(v any) (string, error) {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Errorf("%v is not a finite number", x)
		}
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case string:
		return x, nil
	}
	return "", fmt.Errorf("unsupported value %v of type %T (want bool, int, float or string)", v, v)
}

// errNoResetRoute is why a flavor without a reset route cannot reset.
var errNoResetRoute = errors.New("the engine flavor names no cache-reset route")
