package config

import (
	"fmt"
	"io"
	"reflect"
	"strings"
)

// WriteReference writes the configuration reference as Markdown: one table
// row per field with its YAML path, type, default and documentation. The file
// docs/configuration.md is this output; a test keeps them equal.
func WriteReference(w io.Writer) error {
	def := Default()
	var b strings.Builder
	b.WriteString("# Configuration reference\n\n")
	b.WriteString("Generated from the schema in package `config` (`go test ./config -run TestReferenceUpToDate -update` rewrites it).\n")
	b.WriteString("Print the fully defaulted file with `spoc config default`; validate one with `spoc config check -c FILE`.\n")
	b.WriteString("Unknown keys are errors. Durations are Go duration strings (`90s`, `10m`, `150ms`).\n")
	b.WriteString("Rows marked **assumption** are defaults the reference study did not publish.\n")
	v := reflect.ValueOf(def).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := yamlName(f)
		fmt.Fprintf(&b, "\n## `%s`\n\n%s\n\n| key | type | default | meaning |\n|---|---|---|---|\n", name, f.Tag.Get("doc"))
		refRows(&b, v.Field(i), f.Type, name)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

func refRows(b *strings.Builder, v reflect.Value, t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
		if v.IsValid() && !v.IsNil() {
			v = v.Elem()
		} else {
			v = reflect.Value{}
		}
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		p := path + "." + yamlName(f)
		var fv reflect.Value
		if v.IsValid() {
			fv = v.Field(i)
		}
		doc := strings.ReplaceAll(f.Tag.Get("doc"), "|", "\\|")
		if a := f.Tag.Get("assumption"); a != "" {
			doc += " **assumption:** " + a
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", p, typeName(f.Type), defaultText(fv), doc)
		switch {
		case ft.Kind() == reflect.Struct && ft != reflect.TypeOf(Dist{}):
			refRows(b, fv, f.Type, p)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && ft.Elem() != reflect.TypeOf(Dist{}):
			var ev reflect.Value
			if fv.IsValid() && fv.Len() > 0 {
				ev = fv.Index(0)
			}
			refRows(b, ev, ft.Elem(), p+"[]")
		}
	}
}

func typeName(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(Duration(0)):
		return "duration"
	case t == reflect.TypeOf(Dist{}):
		return "distribution"
	case t.Kind() == reflect.Pointer:
		return typeName(t.Elem())
	case t.Kind() == reflect.Slice:
		return "list of " + typeName(t.Elem())
	case t.Kind() == reflect.Map:
		return "map"
	case t.Kind() == reflect.Struct:
		return "section"
	case t.Kind() == reflect.Interface:
		return "any"
	}
	return t.Kind().String()
}

func defaultText(v reflect.Value) string {
	if !v.IsValid() {
		return ""
	}
	switch v.Kind() {
	case reflect.Struct:
		if d, ok := v.Interface().(Dist); ok {
			return "`" + distText(d) + "`"
		}
		return ""
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			return ""
		}
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct {
			return fmt.Sprintf("%d entries", v.Len())
		}
	case reflect.Pointer:
		if v.IsNil() {
			return ""
		}
	}
	if d, ok := v.Interface().(Duration); ok {
		return "`" + d.String() + "`"
	}
	s := fmt.Sprint(v.Interface())
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "|", "\\|") + "`"
}

func distText(d Dist) string {
	var s string
	switch d.Kind {
	case DistLognormal:
		s = fmt.Sprintf("lognormal(median=%g, sigma=%g)", d.Median, d.Sigma)
	case DistConstant:
		s = fmt.Sprintf("constant(%g)", d.Value)
	default:
		s = d.Kind
	}
	if d.Min != nil || d.Max != nil {
		lo, hi := "", ""
		if d.Min != nil {
			lo = fmt.Sprint(*d.Min)
		}
		if d.Max != nil {
			hi = fmt.Sprint(*d.Max)
		}
		s += fmt.Sprintf(" in [%s, %s]", lo, hi)
	}
	return s
}
