package tune

import (
	"fmt"
	"math"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/vllm"
)

// Dropped is a searched flag removed from the study's space because no
// value of it but one can change what the engine does: every trial runs
// with Value, and Reason says why.
type Dropped struct {
	Name   string `json:"name"`
	Value  any    `json:"value"`
	Reason string `json:"reason"`
}

// Prune removes the dimensions of params that cannot change the engine's
// behaviour given the flags every server gets (base, then vLLM's defaults)
// and the context limit:
//
//   - a dimension with one value;
//   - enable-chunked-prefill when the largest max-num-batched-tokens the
//     study can try is below max-model-len: vLLM refuses to start with
//     chunked prefill off then (a whole prompt must fit one step), so only
//     "on" can run;
//   - long-prefill-token-threshold when every value is 0 or at least the
//     largest budget: a threshold at or above the budget never limits a
//     step (vllm.Canonical), so every value means "off".
//
// Each removed flag is returned with the value every trial gets.
func Prune(params []search.ParamSpec, base search.Params, maxModelLen int) ([]search.ParamSpec, []Dropped) {
	kept := make([]search.ParamSpec, 0, len(params))
	var dropped []Dropped
	_, budgetHigh, budgetKnown := intRange(params, base, "max-num-batched-tokens")
	for _, q := range params {
		flag := vllm.FlagName(q.Name)
		switch {
		case q.Type == "categorical" && len(q.Choices) == 1 || (q.Type == "int" || q.Type == "float") && q.Low == q.High:
			v := any(q.Low)
			if q.Type == "int" {
				v = int(q.Low)
			}
			if len(q.Choices) == 1 {
				v = canonicalChoice(q.Choices[0])
			}
			dropped = append(dropped, Dropped{Name: q.Name, Value: v, Reason: "it has one value"})
			continue
		case flag == "enable-chunked-prefill" && q.Type == "bool" && maxModelLen > 0 && budgetKnown && budgetHigh < maxModelLen && hasChoice(q, true):
			dropped = append(dropped, Dropped{Name: q.Name, Value: true, Reason: fmt.Sprintf(
				"vLLM starts with chunked prefill off only when max-num-batched-tokens ≥ max-model-len (%d), and the study's largest max-num-batched-tokens is %d: only true can run",
				maxModelLen, budgetHigh)})
			continue
		case flag == "long-prefill-token-threshold" && budgetKnown && thresholdAlwaysOff(q, budgetHigh):
			dropped = append(dropped, Dropped{Name: q.Name, Value: 0, Reason: fmt.Sprintf(
				"every value is 0 or at least the study's largest max-num-batched-tokens (%d): a threshold at or above the step budget never limits a step, so all mean off",
				budgetHigh)})
			continue
		}
		kept = append(kept, q)
	}
	return kept, dropped
}

// intRange is the range of an integer flag over the study: its searched
// range, or the one value base (then vLLM's defaults) gives it.
func intRange(params []search.ParamSpec, base search.Params, flag string) (lo, hi int, ok bool) {
	for _, q := range params {
		if vllm.FlagName(q.Name) != flag {
			continue
		}
		switch q.Type {
		case "int", "float":
			return int(math.Ceil(q.Low)), int(math.Floor(q.High)), true
		case "categorical":
			lo, hi = math.MaxInt, math.MinInt
			for _, c := range q.Choices {
				n, isInt := canonicalChoice(c).(int)
				if !isInt {
					return 0, 0, false
				}
				lo, hi = min(lo, n), max(hi, n)
			}
			return lo, hi, len(q.Choices) > 0
		}
		return 0, 0, false
	}
	for _, m := range []map[string]any{base, vllm.Defaults()} {
		for k, v := range m {
			if vllm.FlagName(k) == flag {
				n, isInt := canonicalChoice(v).(int)
				return n, n, isInt
			}
		}
	}
	return 0, 0, false
}

func hasChoice(q search.ParamSpec, v any) bool {
	if len(q.Choices) == 0 {
		return true // a bool without choices is false and true
	}
	for _, c := range q.Choices {
		if c == v {
			return true
		}
	}
	return false
}

// thresholdAlwaysOff reports whether every value of a threshold dimension
// is 0 or at least budgetHigh.
func thresholdAlwaysOff(q search.ParamSpec, budgetHigh int) bool {
	switch q.Type {
	case "int":
		return q.Low >= float64(budgetHigh) || (q.Low == 0 && q.High == 0)
	case "categorical":
		for _, c := range q.Choices {
			n, isInt := canonicalChoice(c).(int)
			if !isInt || (n != 0 && n < budgetHigh) {
				return false
			}
		}
		return len(q.Choices) > 0
	}
	return false
}

// Seed is a configuration a study evaluates before it samples any.
type Seed struct {
	// Name says where it comes from: "engine.params" or the engine's
	// defaults ("vLLM defaults", "SGLang defaults").
	Name   string        `json:"name"`
	Params search.Params `json:"params"`
}

// Seeds returns the configurations a new study evaluates first, in order:
// the configured flags (base, with the engine's defaults for searched
// flags base does not set), then the engine's defaults (named name: the
// flavor's, engine.Flavor.Defaults). One that the space cannot hold (a
// value outside a searched range, a broken rule), that sets no value for
// a searched flag, or that is canonically equal to an earlier seed is
// left out, and skipped says why. With no defaults (a generic server that
// declares none) there is no defaults seed, and skipped says so.
func Seeds(space search.Space, base search.Params, defaults map[string]any, name string) (seeds []Seed, skipped []string) {
	seen := map[string]string{}
	sources := []struct {
		name   string
		layers []map[string]any
	}{{"engine.params", []map[string]any{base, defaults}}}
	if len(defaults) == 0 {
		skipped = append(skipped, fmt.Sprintf("no defaults seed: the %s are none", name))
	} else {
		sources = append(sources, struct {
			name   string
			layers []map[string]any
		}{name, []map[string]any{defaults}})
	}
	for _, src := range sources {
		p := make(search.Params, len(space.Params))
		var missing string
		for _, sp := range space.Params {
			v, ok := lookup(sp.Name, src.layers...)
			if !ok {
				missing = sp.Name
				break
			}
			p[sp.Name] = v
		}
		switch {
		case missing != "" && src.name == name:
			skipped = append(skipped, fmt.Sprintf("%s not tried first: they have no fixed value for %s (the engine derives it at start-up, or has no such flag)", name, missing))
			continue
		case missing != "":
			skipped = append(skipped, fmt.Sprintf("%s not tried first: neither it nor the %s set %s", src.name, name, missing))
			continue
		}
		np, err := space.Check(p)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s not tried first: %v", src.name, err))
			continue
		}
		k := space.CanonicalKey(np)
		if prev, dup := seen[k]; dup {
			skipped = append(skipped, fmt.Sprintf("%s not tried separately: within the searched flags they equal %s", src.name, prev))
			continue
		}
		seen[k] = src.name
		seeds = append(seeds, Seed{Name: src.name, Params: np})
	}
	return seeds, skipped
}

// lookup returns flag's value from the first layer that sets it, under
// any spelling vllm.FlagName accepts.
func lookup(flag string, layers ...map[string]any) (any, bool) {
	f := vllm.FlagName(flag)
	for _, m := range layers {
		for k, v := range m {
			if vllm.FlagName(k) == f {
				return canonicalChoice(v), true
			}
		}
	}
	return nil, false
}
