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
// assumption and that c's file did not set, with the value c holds: what
// spoc assumed for the user. A field the file set (or set part of, or whose
// list item it wrote) is the user's decision and is left out.
func Assumptions(c *Config) []Assumption {
	var all, out []Assumption
	collectAssumptions(reflect.ValueOf(c).Elem(), "", &all)
	for _, a := range all {
		if !c.setByFile(a.Path) {
			out = append(out, a)
		}
	}
	return out
}

// setByFile reports whether the file wrote path, a field under it, or the
// list item path lies in (a profile the user wrote is theirs as a whole).
func (c *Config) setByFile(path string) bool {
	if c.written[path] {
		return true
	}
	for w := range c.written {
		if strings.HasPrefix(w, path+".") || strings.HasPrefix(w, path+"[") {
			return true
		}
		if strings.HasSuffix(w, "]") && strings.HasPrefix(path, w+".") {
			return true
		}
	}
	return false
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
