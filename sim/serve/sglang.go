package serve

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/spoc-project/spoc/sglang"
	"github.com/spoc-project/spoc/sim"
)

// SGLangFaithfulFlag turns on the SGLang-faithful mode (Config.SGLangFaithful):
// the command line takes SGLang's flag names.
const SGLangFaithfulFlag = "sglang-faithful"

// sglangToSim maps the SGLang flags whose semantics the simulator's
// vLLM-like engine has onto its parameters (vLLM names). The other flags
// of SGLang's catalogue are accepted in the SGLang-faithful mode and
// ignored with a log line: the simulator does not model them.
//
// Where the match is not exact:
//   - chunked-prefill-size is SGLang's prefill chunk per step; the
//     simulator's max-num-batched-tokens is vLLM's step budget, which
//     decodes share. -1 (no chunking) turns chunked prefill off.
//   - mem-fraction-static covers weights and the KV pool only; the
//     simulator reads it as vLLM's gpu-memory-utilization, which also
//     covers activations: the same number gives SGLang a somewhat larger
//     KV cache than the simulator does.
//   - max-prefill-tokens and schedule-policy (lpm) have no counterpart:
//     the simulator admits first come, first served, within its budget.
var sglangToSim = map[string]func(v any, spec *sim.DeploymentSpec){
	sglang.FlagMaxRunningRequests: func(v any, s *sim.DeploymentSpec) { s.Params["max-num-seqs"] = v },
	sglang.FlagChunkedPrefillSize: func(v any, s *sim.DeploymentSpec) {
		if n, _ := v.(int); n < 0 {
			s.Params["enable-chunked-prefill"] = false
			return
		}
		s.Params["max-num-batched-tokens"] = v
	},
	sglang.FlagMemFractionStatic: func(v any, s *sim.DeploymentSpec) { s.Params["gpu-memory-utilization"] = v },
	sglang.FlagDisableRadixCache: func(v any, s *sim.DeploymentSpec) { s.Params["enable-prefix-caching"] = !v.(bool) },
	sglang.FlagTPSize:            func(v any, s *sim.DeploymentSpec) { s.TensorParallelSize = v.(int) },
	sglang.FlagContextLength:     func(v any, s *sim.DeploymentSpec) { s.MaxModelLen = v.(int) },
	sglang.FlagServedModelName:   func(v any, s *sim.DeploymentSpec) { s.ServedModelName = v.(string) },
}

// SGLangModelled reports whether the SGLang-faithful mode maps flag onto
// the simulated engine (else it is accepted and ignored).
func SGLangModelled(flag string) bool {
	_, ok := sglangToSim[flag]
	return ok || flag == sglang.FlagModelPath || flag == sglang.FlagDPSize ||
		flag == sglang.FlagEnableMetrics || flag == sglang.FlagEnableCacheReport
}

// defineSGLangFlags defines every flag of SGLang's catalogue that fs does
// not define yet (--host, --port, --served-model-name are shared), hidden:
// the command's description names the mode.
func (c *CommandLine) defineSGLangFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&c.sglang, SGLangFaithfulFlag, false, "behave like an SGLang server where spoc depends on it, with SGLang's flag names (docs/simulator.md)")
	for _, f := range sglang.Catalogue() {
		for _, n := range append([]string{f.Name}, f.Aliases...) {
			if fs.Lookup(n) != nil {
				continue
			}
			if f.Kind == sglang.Bool {
				fs.Bool(n, false, "SGLang --"+n+" (with --"+SGLangFaithfulFlag+")")
			} else {
				fs.String(n, "", "SGLang --"+n+" (with --"+SGLangFaithfulFlag+")")
			}
			_ = fs.MarkHidden(n)
			c.sglangFlags = append(c.sglangFlags, n)
		}
	}
}

// parseSGLang reads the SGLang flags given, typed by the catalogue: an
// error for one given without the mode, or a value of the wrong kind.
func (c *CommandLine) parseSGLang(o *Options) error {
	for _, n := range c.sglangFlags {
		if !c.fs.Changed(n) {
			continue
		}
		if !c.sglang {
			return fmt.Errorf("unknown flag: --%s (an SGLang flag: needs --%s)", n, SGLangFaithfulFlag)
		}
		f, _ := sglang.Lookup(n)
		raw := c.fs.Lookup(n).Value.String()
		var v any
		switch f.Kind {
		case sglang.Bool:
			v = raw == "true"
		case sglang.Int:
			i, err := strconv.Atoi(raw)
			if err != nil {
				return fmt.Errorf("--%s: want an integer, got %q", n, raw)
			}
			v = i
		case sglang.Float:
			x, err := strconv.ParseFloat(raw, 64)
			if err != nil {
				return fmt.Errorf("--%s: want a number, got %q", n, raw)
			}
			v = x
		default:
			v = raw
		}
		if err := f.Check(v); err != nil {
			return err
		}
		switch f.Name {
		case sglang.FlagModelPath:
			o.Model = raw
		case sglang.FlagDPSize:
			o.sglangDP = v.(int)
		case sglang.FlagEnableMetrics:
			o.EnableMetrics = v.(bool)
		case sglang.FlagEnableCacheReport:
			o.EnablePromptTokensDetails = v.(bool)
		default:
			if _, ok := sglangToSim[f.Name]; ok {
				if o.sglangParams == nil {
					o.sglangParams = map[string]any{}
				}
				o.sglangParams[f.Name] = v
			} else {
				o.IgnoredSGLang = append(o.IgnoredSGLang, n)
			}
		}
	}
	return nil
}

// applySGLang maps the SGLang flags given onto spec.
func (o Options) applySGLang(spec sim.DeploymentSpec) sim.DeploymentSpec {
	if len(o.sglangParams) == 0 {
		return spec
	}
	params := make(map[string]any, len(spec.Params)+len(o.sglangParams))
	for k, v := range spec.Params {
		params[k] = v
	}
	spec.Params = params
	for name, v := range o.sglangParams {
		sglangToSim[name](v, &spec)
	}
	return spec
}
