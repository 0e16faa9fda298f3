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

// sglangToSim maps the SGLang flags that set the deployment rather than
// an engine parameter; the engine parameters are mapped by
// sim.SGLangParams (the one table of what SGLang's flags mean to the
// simulator, and where they do not match).
var sglangToSim = map[string]func(v any, spec *sim.DeploymentSpec){
	sglang.FlagTPSize:          func(v any, s *sim.DeploymentSpec) { s.TensorParallelSize = v.(int) },
	sglang.FlagContextLength:   func(v any, s *sim.DeploymentSpec) { s.MaxModelLen = v.(int) },
	sglang.FlagServedModelName: func(v any, s *sim.DeploymentSpec) { s.ServedModelName = v.(string) },
}

// defineSGLangFlags defines every flag of SGLang's catalogue that fs does
// not define yet (--host, --port, --served-model-name are shared), hidden:
// the command's description names the mode.
func (c *CommandLine) defineSGLangFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&c.sglang, SGLangFaithfulFlag, false, "behave like an SGLang server where spoc depends on it, with SGLang's flag names (docs/simulator.md)")
	for _, f := range sglang.Catalogue.Flags() {
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
		f, _ := sglang.Catalogue.Lookup(n)
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
			if o.sglangParams == nil {
				o.sglangParams = map[string]any{}
			}
			o.sglangParams[f.Name] = v
		}
	}
	// the engine flags the simulator has no counterpart of are accepted
	// and named
	engineFlags := map[string]any{}
	for name, v := range o.sglangParams {
		if _, deployment := sglangToSim[name]; !deployment {
			engineFlags[name] = v
		}
	}
	_, ignored, err := sim.SGLangParams(engineFlags)
	if err != nil {
		return err
	}
	o.IgnoredSGLang = ignored
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
	engineFlags := map[string]any{}
	for name, v := range o.sglangParams {
		if set, deployment := sglangToSim[name]; deployment {
			set(v, &spec)
		} else {
			engineFlags[name] = v
		}
	}
	mapped, _, err := sim.SGLangParams(engineFlags) // checked by Parse
	if err == nil {
		for k, v := range mapped {
			params[k] = v
		}
	}
	return spec
}
