package config

import (
	"fmt"
	"reflect"
	"strings"
)

// Assumption is one configured value whose default was not a published fact
// of the reference case.
type Assumption struct {
	Path  string `json:"field"`
	Value string `json:"value"`
	Note  string `json:"note"`
}

// Assumptions lists every field of c whose schema marks its default as an
// assumption, with the value c holds, so a report can print them all.
func Assumptions(c *Config) []Assumption {
	var out []Assumption
	collectAssumptions(reflect.ValueOf(c).Elem(), "", &out)
	return out
}

func collectAssumptions(v reflect.Value, path string, out *[]Assumption) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		p := join(path, yamlName(f))
		fv := v.Field(i)
		if note := f.Tag.Get("assumption"); note != "" {
			*out = append(*out, Assumption{Path: p, Value: valueText(fv), Note: note})
			continue
		}
		switch {
		case fv.Kind() == reflect.Struct && fv.Type() != reflect.TypeOf(Dist{}):
			collectAssumptions(fv, p, out)
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct:
			for j := 0; j < fv.Len(); j++ {
				collectAssumptions(fv.Index(j), fmt.Sprintf("%s[%d]", p, j), out)
			}
		}
	}
}

func valueText(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case Dist:
		return distText(x)
	case LatencyClause:
		if x.Max == 0 {
			return "off"
		}
		return fmt.Sprintf("p%g ≤ %s", x.Percentile, x.Max)
	case Duration:
		return x.String()
	}
	return strings.TrimSpace(fmt.Sprint(v.Interface()))
}
