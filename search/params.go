package search

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// Params maps parameter names to values: int parameters hold int, float
// parameters float64, categorical parameters the chosen value (string, bool,
// int or float64, exactly as declared in the Space).
type Params map[string]any

// Clone returns a shallow copy of p (values are scalars).
func (p Params) Clone() Params {
	if p == nil {
		return nil
	}
	out := make(Params, len(p))
	for k, v := range p {
		out[k] = v
	}
	return out
}

// Int returns the named value as an int (0 if absent or not numeric).
func (p Params) Int(name string) int {
	switch v := p[name].(type) {
	case int:
		return v
	case int64:
		return int(v)
	case float64:
		return int(math.Round(v))
	}
	return 0
}

// Float returns the named value as a float64 (0 if absent or not numeric).
func (p Params) Float(name string) float64 {
	switch v := p[name].(type) {
	case float64:
		return v
	case int:
		return float64(v)
	case int64:
		return float64(v)
	}
	return 0
}

// String returns the named value when it is a string, else "".
func (p Params) String(name string) string {
	s, _ := p[name].(string)
	return s
}

// Bool returns the named value when it is a bool, else false.
func (p Params) Bool(name string) bool {
	b, _ := p[name].(bool)
	return b
}

// Key returns a canonical string for p (sorted keys, JSON values) used to
// detect duplicate parameter sets.
func (p Params) Key() string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := make([]byte, 0, 16*len(keys))
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(p[k])
		if err != nil {
			vb = fmt.Appendf(nil, "%v", p[k])
		}
		b = append(b, kb...)
		b = append(b, ':')
		b = append(b, vb...)
	}
	return string(b)
}
