package config

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// position is where a key or list item was written: 1-based line and
// column in the file (columns matter in flow style, {a: 1, b: 2}, where one
// line holds many keys), or the Source of the Setting that set it.
type position struct {
	Line, Column int
	Source       string
}

// positions maps a field path to where it was written.
type positions map[string]position

// lookup finds the position of path or of its nearest written ancestor, so
// an error about a missing sub-field points at its parent.
func (p positions) lookup(path string) position {
	for path != "" {
		if at, ok := p[path]; ok {
			return at
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return position{}
}

// Load decodes a plan from r over the defaults, then settings over it (the
// command line's layer), and validates the result once. name is the file
// name used in error messages; an error about a key a setting set names
// the setting's Source instead.
func Load(r io.Reader, name string, settings ...Setting) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", name, err)
	}
	cfg, pos, err := decodeFile(data, name)
	if err != nil {
		return nil, err
	}
	if err := cfg.apply(settings, pos); err != nil {
		return nil, err
	}
	cfg.dropVLLMDefaults()
	if len(settings) == 0 && len(pos) == 0 {
		return cfg, nil // the defaults, valid by construction
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

// decodeFile decodes data over the defaults with strict checks and returns
// where each key was written; it does not validate.
func decodeFile(data []byte, name string) (*Config, positions, error) {
	cfg := Default()
	pos := positions{}
	if len(bytes.TrimSpace(data)) == 0 {
		return cfg, pos, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		fe := &FieldError{File: name, Line: yamlErrLine(err), Msg: "invalid YAML: " + trimYAMLErr(err)}
		if strings.Contains(fe.Msg, "tab character") {
			// yaml names the line before the tab's; the tab is what to fix
			if l, c := firstIndentTab(data); l > 0 {
				fe.Line, fe.Column = l, c
			}
		}
		return nil, nil, fe
	}
	if len(doc.Content) == 0 {
		return cfg, pos, nil
	}
	root := doc.Content[0]
	errs := &Errors{}
	checkKnown(root, reflect.TypeOf(Config{}), "", pos, errs)
	if err := errs.Err(); err != nil {
		errs.locate(name, pos)
		return nil, nil, errs
	}
	if hasKey(root, "engine", "params") {
		// engine.params replaces the default flags as a whole (yaml would
		// merge into the default map): {} means vLLM's own defaults.
		cfg.Engine.Params = nil
	}
	if err := root.Decode(cfg); err != nil {
		return nil, nil, decodeErrors(err, name, pos)
	}
	cfg.written = make(map[string]bool, len(pos))
	for path := range pos {
		cfg.written[path] = true
	}
	return cfg, pos, nil
}

// LoadFile loads a plan file (an empty path means the defaults) with
// settings over it, as Load does.
func LoadFile(path string, settings ...Setting) (*Config, error) {
	if path == "" {
		return Load(strings.NewReader(""), "", settings...)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open config: %w", err)
	}
	defer f.Close()
	return Load(f, path, settings...)
}

// checkKnown walks a YAML node against the Go type it will decode into and
// records every mapping key that has no field and every value that does not
// decode into its field's type, each with its path, line and column. It
// also records the position of every known field for later validation
// messages. Checking each value on its own is what lets an error name the
// exact key: yaml reports type errors by line only, and a custom
// unmarshaler's error (Duration) stops decoding at the first one.
func checkKnown(n *yaml.Node, t reflect.Type, path string, pos positions, errs *Errors) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if parsesItself(t, n) {
		checkValue(n, t, path, errs)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		fields := yamlFields(t)
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
			return // an empty value keeps the defaults, as yaml decodes it
		}
		if n.Kind != yaml.MappingNode {
			// yaml's own message names the Go type (config.LatencyClause)
			names := fieldNames(fields)
			slices.Sort(names)
			got := "a list"
			if n.Kind == yaml.ScalarNode {
				got = "`" + n.Value + "`"
			}
			errs.List = append(errs.List, &FieldError{Path: path, Line: n.Line, Column: n.Column,
				Msg: fmt.Sprintf("want a mapping of %s, got %s", strings.Join(names, ", "), got)})
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" {
				continue
			}
			p := join(path, k.Value)
			if checkDuplicate(k, p, pos, errs) {
				continue
			}
			f, ok := fields[k.Value]
			if !ok {
				errs.List = append(errs.List, &FieldError{Path: p, Line: k.Line, Column: k.Column,
					Msg: fmt.Sprintf("unknown key %q%s", k.Value, suggest(k.Value, fieldNames(fields)))})
				continue
			}
			checkKnown(v, f.Type, p, pos, errs)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			checkValue(n, t, path, errs)
			return
		}
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			pos[p] = position{Line: item.Line, Column: item.Column}
			checkKnown(item, t.Elem(), p, pos, errs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			checkValue(n, t, path, errs)
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			p := join(path, k.Value)
			if checkDuplicate(k, p, pos, errs) {
				continue
			}
			checkKnown(n.Content[i+1], t.Elem(), p, pos, errs)
		}
	case reflect.Interface:
		// any value decodes (engine.params); its consumer checks it.
	default:
		checkValue(n, t, path, errs)
	}
}

var (
	yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// parsesItself reports whether yaml decodes n into a t by t's own method
// (Duration, search.Direction) rather than field by field; as in yaml, a
// TextUnmarshaler only parses scalars.
func parsesItself(t reflect.Type, n *yaml.Node) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(yamlUnmarshaler) || (n.Kind == yaml.ScalarNode && pt.Implements(textUnmarshaler))
}

// checkDuplicate records the position of key k at path p, or reports k as a
// duplicate when its mapping already set p: yaml rejects duplicates too,
// but by line only, which is ambiguous in flow style.
func checkDuplicate(k *yaml.Node, p string, pos positions, errs *Errors) bool {
	if first, dup := pos[p]; dup {
		errs.List = append(errs.List, &FieldError{Path: p, Line: k.Line, Column: k.Column,
			Msg: fmt.Sprintf("key %q already set at line %d, column %d", k.Value, first.Line, first.Column)})
		return true
	}
	pos[p] = position{Line: k.Line, Column: k.Column}
	return false
}

// checkValue decodes n into a fresh value of type t and records a failure
// at path, positioned at the value itself.
func checkValue(n *yaml.Node, t reflect.Type, path string, errs *Errors) {
	err := n.Decode(reflect.New(t).Interface())
	if err == nil {
		return
	}
	var te *yaml.TypeError
	msgs := []string{err.Error()}
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msgs = te.Errors
	}
	for _, m := range msgs {
		errs.List = append(errs.List, &FieldError{Path: path, Line: n.Line, Column: n.Column, Msg: trimYAMLErr(errors.New(m))})
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

func fieldNames(fields map[string]reflect.StructField) []string {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	return names
}

// suggest proposes the closest known name for a misspelt one, formatted
// for an error message, or "" when none is close.
func suggest(name string, known []string) string {
	best := closest(name, known)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// closest returns the known name nearest to name, ignoring case: a small
// edit distance, or one name being a prefix of the other (maximum → max).
// Ties go to the alphabetically first name; "" means none is close.
func closest(name string, known []string) string {
	key := strings.ToLower(name)
	best, bestD := "", 1<<30
	for _, k := range known {
		lk := strings.ToLower(k)
		d := editDistance(key, lk)
		if d > 2 && !strings.HasPrefix(key, lk) && !strings.HasPrefix(lk, key) {
			continue
		}
		if d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	return best
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

// decodeErrors turns a decoding failure that checkKnown did not foresee
// into FieldErrors. yaml reports only "line N: cannot unmarshal ...", so the
// path is the field written on that line, or on a flow-style line with
// several keys, their nearest common parent: naming a parent is honest,
// guessing one of the keys is not. Every type error of a *yaml.TypeError is
// kept, so all are fixed at once.
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

// pathAt returns the deepest path that contains every field path written
// on line: the field itself when the line holds one key, their common
// parent when it holds several (flow style), "" when none is known.
func (p positions) pathAt(line int) string {
	var paths []string
	if line > 0 {
		for path, at := range p {
			if at.Line == line {
				paths = append(paths, path)
			}
		}
	}
	if len(paths) == 0 {
		return ""
	}
	common := paths[0]
	for _, path := range paths[1:] {
		for !within(path, common) {
			i := strings.LastIndexAny(common, ".[")
			if i < 0 {
				return ""
			}
			common = common[:i]
		}
	}
	return common
}

// within reports whether path is ancestor itself or lies under it: a.b is
// within a and a.b, a[0].c within a[0], but a.bc is not within a.b.
func within(path, ancestor string) bool {
	rest, ok := strings.CutPrefix(path, ancestor)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}

func yamlErrLine(err error) int {
	var line int
	msg := err.Error()
	if i := strings.Index(msg, "line "); i >= 0 {
		fmt.Sscanf(msg[i:], "line %d", &line)
	}
	return line
}

// firstIndentTab is the line and column (1-based) of the first tab in a
// line's indentation, or 0, 0: YAML indents with spaces only.
func firstIndentTab(data []byte) (line, col int) {
	for i, l := range strings.Split(string(data), "\n") {
		for j, r := range l {
			if r == '\t' {
				return i + 1, j + 1
			}
			if r != ' ' {
				break
			}
		}
	}
	return 0, 0
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

// hasKey reports whether the mapping n holds the key path (each element a
// key of the mapping under the previous one).
func hasKey(n *yaml.Node, path ...string) bool {
	for _, key := range path {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return false
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return false
		}
		n = next
	}
	return true
}
