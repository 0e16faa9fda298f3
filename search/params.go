package search

import (
	"fmt"
	"math"
	"sort"
	"strconv"
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

// Key returns a canonical string for p (sorted names and typed values) used
// to detect duplicate parameter sets. Numbers compare by value, so an int 4
// and a JSON-decoded 4.0 give the same key.
func (p Params) Key() string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := make([]byte, 0, 24*len(keys))
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, k)
		b = append(b, ':')
		switch v := p[k].(type) {
		case string:
			b = strconv.AppendQuote(b, v)
		case bool:
			b = strconv.AppendBool(b, v)
		case int:
			b = strconv.AppendFloat(b, float64(v), 'g', -1, 64)
		case int64:
			b = strconv.AppendFloat(b, float64(v), 'g', -1, 64)
		case float64:
			b = strconv.AppendFloat(b, v, 'g', -1, 64)
		default:
			b = fmt.Appendf(b, "%T(%v)", v, v)
		}
	}
	return string(b)
}
