package config

import (
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// AssumptionMarker prefixes the comment of every default that is an
// assumption rather than a published fact of the reference case.
const AssumptionMarker = "ASSUMPTION:"

// WriteYAML writes c as YAML with the doc comment of every field above it and
// assumption markers, so the output is a complete, annotated plan file that
// Load accepts unchanged.
func WriteYAML(w io.Writer, c *Config) error {
	n, err := commentedNode(reflect.ValueOf(c).Elem(), true)
	if err != nil {
		return fmt.Errorf("render config: %w", err)
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n},
		HeadComment: "spoc plan configuration. Every field is shown with its default.\nLines marked " + AssumptionMarker + " are defaults the reference study did not publish."}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("render config: %w", err)
	}
	return enc.Close()
}

// fieldComment is the doc text of a field plus its assumption, if any.
func fieldComment(f reflect.StructField) string {
	c := f.Tag.Get("doc")
	if a := f.Tag.Get("assumption"); a != "" {
		c += "\n" + AssumptionMarker + " " + a
	}
	return c
}

// commentedNode converts v to a YAML node; withComments adds field docs (only
// the first element of a list carries them, to keep the file readable).
func commentedNode(v reflect.Value, withComments bool) (*yaml.Node, error) {
	if m, ok := v.Interface().(yaml.Marshaler); ok && v.Kind() != reflect.Struct {
		out, err := m.MarshalYAML()
		if err != nil {
			return nil, err
		}
		return scalar(out), nil
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
		}
		return commentedNode(v.Elem(), withComments)
	case reflect.Struct:
		m := &yaml.Node{Kind: yaml.MappingNode}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			fv := v.Field(i)
			// Inside a distribution only the fields of its kind are shown; elsewhere
			// every field is printed so the file documents the whole schema.
			if strings.Contains(opts, "omitempty") && fv.IsZero() && (t == reflect.TypeOf(Dist{}) || fv.Kind() == reflect.Pointer) {
				continue
			}
			k := &yaml.Node{Kind: yaml.ScalarNode, Value: name}
			if withComments {
				k.HeadComment = fieldComment(f)
			}
			val, err := commentedNode(fv, withComments)
			if err != nil {
				return nil, err
			}
			m.Content = append(m.Content, k, val)
		}
		return m, nil
	case reflect.Slice:
		s := &yaml.Node{Kind: yaml.SequenceNode}
		if v.Len() > 0 && v.Index(0).Kind() != reflect.Struct {
			s.Style = yaml.FlowStyle
		}
		for i := 0; i < v.Len(); i++ {
			e, err := commentedNode(v.Index(i), withComments && i == 0)
			if err != nil {
				return nil, err
			}
			s.Content = append(s.Content, e)
		}
		return s, nil
	case reflect.Map:
		m := &yaml.Node{Kind: yaml.MappingNode}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, key := range keys {
			val, err := commentedNode(v.MapIndex(key), withComments)
			if err != nil {
				return nil, err
			}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint(key)}, val)
		}
		return m, nil
	default:
		return scalar(v.Interface()), nil
	}
}

func scalar(x any) *yaml.Node {
	if f, ok := x.(float64); ok {
		// keep floats recognisable as floats: 1 is written 1.0
		v := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(v, ".eEnN") {
			v += ".0"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: v}
	}
	n := &yaml.Node{}
	if err := n.Encode(x); err != nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint(x)}
	}
	return n
}
