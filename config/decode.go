package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// positions maps a field path to the line it was written on.
type positions map[string]int

// lookup finds the line of path or of its nearest written ancestor, so an
// error about a missing sub-field points at its parent.
func (p positions) lookup(path string) int {
	for path != "" {
		if l, ok := p[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

// Load decodes a plan from r over the defaults and validates it. name is the
// file name used in error messages.
func Load(r io.Reader, name string) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", name, err)
	}
	cfg := Default()
	if len(bytes.TrimSpace(data)) == 0 {
		return cfg, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &FieldError{File: name, Line: yamlErrLine(err), Msg: "invalid YAML: " + trimYAMLErr(err)}
	}
	if len(doc.Content) == 0 {
		return cfg, nil
	}
	root := doc.Content[0]
	pos := positions{}
	errs := &Errors{}
	checkKnown(root, reflect.TypeOf(Config{}), "", pos, errs)
	if err := errs.Err(); err != nil {
		errs.locate(name, pos)
		return nil, errs
	}
	if err := root.Decode(cfg); err != nil {
		return nil, decodeErrors(err, name, pos)
	}
	if err := cfg.Validate(); err != nil {
		var ve *Errors
		if errors.As(err, &ve) {
			ve.locate(name, pos)
			return nil, ve
		}
		return nil, err
	}
	return cfg, nil
}

// LoadFile loads a plan file; an empty path means the defaults.
func LoadFile(path string) (*Config, error) {
	if path == "" {
		return Default(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open config: %w", err)
	}
	defer f.Close()
	return Load(f, path)
}

// checkKnown walks a YAML node against the Go type it will decode into and
// records every mapping key that has no field, with its path and line. It
// also records the line of every known field for later validation messages.
func checkKnown(n *yaml.Node, t reflect.Type, path string, pos positions, errs *Errors) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" {
				continue
			}
			p := join(path, k.Value)
			f, ok := fields[k.Value]
			if !ok {
				errs.List = append(errs.List, &FieldError{Path: p, Line: k.Line, Msg: fmt.Sprintf("unknown key %q%s", k.Value, suggest(k.Value, fields))})
				pos[p] = k.Line
				continue
			}
			pos[p] = k.Line
			checkKnown(v, f.Type, p, pos, errs)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			pos[p] = item.Line
			checkKnown(item, t.Elem(), p, pos, errs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := join(path, n.Content[i].Value)
			pos[p] = n.Content[i].Line
			checkKnown(n.Content[i+1], t.Elem(), p, pos, errs)
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlFields maps YAML keys to struct fields, following inline fields.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f
	}
	return out
}

// suggest proposes the closest known key for a misspelt one: a small edit
// distance, or one key being a prefix of the other (maximum → max).
func suggest(key string, fields map[string]reflect.StructField) string {
	best, bestD := "", 1<<30
	for k := range fields {
		d := editDistance(key, k)
		if d > 2 && !strings.HasPrefix(key, k) && !strings.HasPrefix(k, key) {
			continue
		}
		if d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// decodeErrors turns a decoding failure into FieldErrors naming the field
// written on the failing line: yaml reports only "line N: cannot unmarshal
// !!str `abc` into uint64", which does not say which setting was wrong.
// Every type error of a *yaml.TypeError is kept, so all are fixed at once.
func decodeErrors(err error, file string, pos positions) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		line := yamlErrLine(err)
		return &FieldError{File: file, Line: line, Path: pos.pathAt(line), Msg: trimYAMLErr(err)}
	}
	errs := &Errors{}
	for _, msg := range te.Errors {
		e := errors.New(msg)
		line := yamlErrLine(e)
		errs.List = append(errs.List, &FieldError{File: file, Line: line, Path: pos.pathAt(line), Msg: trimYAMLErr(e)})
	}
	return errs
}

// pathAt returns the deepest field path written on line, or "" when none
// is known (line 0, or a line with no key on it).
func (p positions) pathAt(line int) string {
	best := ""
	if line <= 0 {
		return best
	}
	for path, l := range p {
		if l == line && (len(path) > len(best) || (len(path) == len(best) && path < best)) {
			best = path
		}
	}
	return best
}

func yamlErrLine(err error) int {
	var line int
	msg := err.Error()
	if i := strings.Index(msg, "line "); i >= 0 {
		fmt.Sscanf(msg[i:], "line %d", &line)
	}
	return line
}

func trimYAMLErr(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	if strings.HasPrefix(msg, "line ") {
		if i := strings.Index(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
	}
	return msg
}
