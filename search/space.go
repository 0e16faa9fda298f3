package search

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Kind is a parameter's type.
type Kind string

// Parameter kinds.
const (
	KindInt         Kind = "int"
	KindFloat       Kind = "float"
	KindCategorical Kind = "categorical"
)

// Param describes one searched parameter. Build it with Int, IntStep, IntLog,
// Float, FloatStep, FloatLog, Categorical or Bool rather than by hand.
type Param struct {
	Name string `json:"name"`
	Kind Kind   `json:"type"`
	// Low and High bound numeric parameters (inclusive).
	Low  float64 `json:"low,omitempty"`
	High float64 `json:"high,omitempty"`
	// Step, when > 0, restricts values to Low + k·Step (ints default to 1).
	Step float64 `json:"step,omitempty"`
	// Log samples uniformly in log space (Low must be > 0; no Step).
	Log bool `json:"log,omitempty"`
	// Choices are the values of a categorical parameter: strings, bools, ints
	// or float64s.
	Choices []any `json:"choices,omitempty"`
}

// Int declares an integer parameter in [low, high].
func Int(name string, low, high int) Param {
	return Param{Name: name, Kind: KindInt, Low: float64(low), High: float64(high), Step: 1}
}

// IntStep declares an integer parameter in {low, low+step, …} ≤ high.
func IntStep(name string, low, high, step int) Param {
	return Param{Name: name, Kind: KindInt, Low: float64(low), High: float64(high), Step: float64(step)}
}

// IntLog declares an integer parameter in [low, high] sampled in log space.
func IntLog(name string, low, high int) Param {
	return Param{Name: name, Kind: KindInt, Low: float64(low), High: float64(high), Step: 1, Log: true}
}

// Float declares a real parameter in [low, high].
func Float(name string, low, high float64) Param {
	return Param{Name: name, Kind: KindFloat, Low: low, High: high}
}

// FloatStep declares a real parameter in {low, low+step, …} ≤ high.
func FloatStep(name string, low, high, step float64) Param {
	return Param{Name: name, Kind: KindFloat, Low: low, High: high, Step: step}
}

// FloatLog declares a real parameter in [low, high] sampled in log space.
func FloatLog(name string, low, high float64) Param {
	return Param{Name: name, Kind: KindFloat, Low: low, High: high, Log: true}
}

// Categorical declares a parameter taking one of choices.
func Categorical(name string, choices ...any) Param {
	return Param{Name: name, Kind: KindCategorical, Choices: choices}
}

// Bool declares a boolean parameter (categorical over false, true).
func Bool(name string) Param { return Categorical(name, false, true) }

// Validate checks the declaration itself.
func (p Param) Validate() error {
	if p.Name == "" {
		return errors.New("parameter has no name")
	}
	switch p.Kind {
	case KindInt, KindFloat:
		if math.IsNaN(p.Low) || math.IsNaN(p.High) || math.IsInf(p.Low, 0) || math.IsInf(p.High, 0) {
			return fmt.Errorf("parameter %q: bounds must be finite", p.Name)
		}
		if p.Low > p.High {
			return fmt.Errorf("parameter %q: low %v > high %v", p.Name, p.Low, p.High)
		}
		if p.Step < 0 || math.IsNaN(p.Step) {
			return fmt.Errorf("parameter %q: negative step %v", p.Name, p.Step)
		}
		if p.Kind == KindInt {
			if p.Low != math.Trunc(p.Low) || p.High != math.Trunc(p.High) || p.Step != math.Trunc(p.Step) {
				return fmt.Errorf("parameter %q: int bounds and step must be integers", p.Name)
			}
			if p.Step == 0 {
				return fmt.Errorf("parameter %q: int step must be ≥ 1", p.Name)
			}
		}
		if p.Log {
			if p.Low <= 0 {
				return fmt.Errorf("parameter %q: log scale needs low > 0, got %v", p.Name, p.Low)
			}
			if p.Step > 0 && !(p.Kind == KindInt && p.Step == 1) {
				return fmt.Errorf("parameter %q: log scale and step are exclusive", p.Name)
			}
		}
	case KindCategorical:
		if len(p.Choices) == 0 {
			return fmt.Errorf("parameter %q: categorical with no choices", p.Name)
		}
		for i, c := range p.Choices {
			switch c.(type) {
			case string, bool, int, float64:
			default:
				return fmt.Errorf("parameter %q: choice %d has unsupported type %T (want string, bool, int or float64)", p.Name, i, c)
			}
			for j := 0; j < i; j++ {
				if choiceEqual(p.Choices[j], c) {
					return fmt.Errorf("parameter %q: duplicate choice %v", p.Name, c)
				}
			}
		}
	default:
		return fmt.Errorf("parameter %q: unknown type %q", p.Name, p.Kind)
	}
	return nil
}

// Contains checks that v is a valid value of p and returns it in its
// canonical Go type (int for ints, float64 for floats, the declared choice
// for categoricals), so values decoded from JSON become usable again.
func (p Param) Contains(v any) (any, error) {
	switch p.Kind {
	case KindCategorical:
		if i := p.ChoiceIndex(v); i >= 0 {
			return p.Choices[i], nil
		}
		return nil, fmt.Errorf("parameter %q: %v is not one of %v", p.Name, v, p.Choices)
	case KindInt, KindFloat:
		var x float64
		switch n := v.(type) {
		case int:
			x = float64(n)
		case int64:
			x = float64(n)
		case float64:
			x = n
		case json.Number:
			f, err := n.Float64()
			if err != nil {
				return nil, fmt.Errorf("parameter %q: %w", p.Name, err)
			}
			x = f
		default:
			return nil, fmt.Errorf("parameter %q: value %v has type %T, want a number", p.Name, v, v)
		}
		if math.IsNaN(x) || x < p.Low || x > p.High {
			return nil, fmt.Errorf("parameter %q: %v outside [%v, %v]", p.Name, x, p.Low, p.High)
		}
		if p.Step > 0 {
			k := (x - p.Low) / p.Step
			if math.Abs(k-math.Round(k)) > 1e-9*math.Max(1, math.Abs(k)) {
				return nil, fmt.Errorf("parameter %q: %v is not on the step grid %v + k·%v", p.Name, x, p.Low, p.Step)
			}
		}
		if p.Kind == KindInt {
			return int(math.Round(x)), nil
		}
		return x, nil
	}
	return nil, fmt.Errorf("parameter %q: unknown type %q", p.Name, p.Kind)
}

// ChoiceIndex returns the index of v among p's choices, or -1. Numbers
// compare by value, so a JSON-decoded 4.0 matches a declared int 4.
func (p Param) ChoiceIndex(v any) int {
	for i, c := range p.Choices {
		if choiceEqual(c, v) {
			return i
		}
	}
	return -1
}

func choiceEqual(a, b any) bool {
	af, aNum := number(a)
	bf, bNum := number(b)
	if aNum || bNum {
		return aNum && bNum && af == bf
	}
	return a == b
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// Bounds returns the sampling interval of a numeric parameter in internal
// coordinates (log-transformed when Log). Log-scale ints widen by ±0.5 so
// that every integer gets its share of the interval.
func (p Param) Bounds() (lo, hi float64) {
	lo, hi = p.Low, p.High
	if p.Log {
		if p.Kind == KindInt {
			lo, hi = math.Max(lo-0.5, 0.5), hi+0.5
		}
		return math.Log(lo), math.Log(hi)
	}
	return lo, hi
}

// ToInternal maps a value of a numeric parameter to internal coordinates
// (log when Log); for categoricals it returns the choice index.
func (p Param) ToInternal(v any) float64 {
	if p.Kind == KindCategorical {
		return float64(p.ChoiceIndex(v))
	}
	x, _ := number(v)
	if p.Log {
		return math.Log(x)
	}
	return x
}

// FromInternal maps internal coordinate x back to a valid value: clipped to
// the bounds, rounded to the step grid, int-typed for ints. For categoricals
// x is rounded to the nearest choice index.
func (p Param) FromInternal(x float64) any {
	if p.Kind == KindCategorical {
		i := int(math.Round(x))
		i = max(0, min(len(p.Choices)-1, i))
		return p.Choices[i]
	}
	if math.IsNaN(x) {
		x = p.Low
	} else if p.Log {
		x = math.Exp(x)
	}
	x = math.Max(p.Low, math.Min(p.High, x))
	if p.Step > 0 {
		n := math.Floor((p.High-p.Low)/p.Step + 1e-9)
		k := math.Max(0, math.Min(n, math.Round((x-p.Low)/p.Step)))
		x = gridValue(p, k)
	}
	if p.Kind == KindInt {
		return int(math.Round(x))
	}
	return x
}

// gridValue is Low + k·Step, cleaned of binary rounding noise (so that
// 0.8 + 7·0.01 reads 0.87) and never above High.
func gridValue(p Param, k float64) float64 {
	x := p.Low + k*p.Step
	if p.Kind == KindFloat && math.Abs(x) < 1e6 {
		x = math.Round(x*1e12) / 1e12
	}
	return math.Min(x, p.High)
}

// Uniform draws a value uniformly (in internal coordinates) from r.
func (p Param) Uniform(r *rand.Rand) any {
	switch {
	case p.Kind == KindCategorical:
		return p.Choices[r.IntN(len(p.Choices))]
	case p.Step > 0 && !p.Log:
		n := int(math.Floor((p.High-p.Low)/p.Step+1e-9)) + 1
		x := gridValue(p, float64(r.IntN(n)))
		if p.Kind == KindInt {
			return int(math.Round(x))
		}
		return x
	}
	lo, hi := p.Bounds()
	return p.FromInternal(lo + r.Float64()*(hi-lo))
}
