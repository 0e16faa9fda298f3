package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/spoc-project/spoc/vllm"
)

// Setting is one configuration value given besides the file — a
// command-line flag — under the key the file would write it at. Settings
// are the top layer of a configuration: defaults, then the file, then the
// settings, validated once as a whole (Load), so that a flag is checked by
// the same rule as the key it sets and its error names both.
type Setting struct {
	// Key is the configuration key as the file nests it: run.users,
	// engine.sim.time_scale, engine.params.max-num-seqs (under
	// engine.params the key is a vLLM flag in any spelling).
	Key string
	// Value is the value as YAML, as the file would write it after the
	// key: 4, 90s, "http://127.0.0.1:8000", [50, 100].
	Value string
	// Append adds Value's items to the list at Key instead of replacing it
	// (spoc sim run --throttle adds to engine.sim.throttle).
	Append bool
	// Source names where the value came from, for errors: "--users".
	Source string
}

// Apply decodes settings over c with the file's strict decoding (a value
// that does not fit its key is an error naming the key and the setting's
// Source) but does not validate c: Load does, once, after its settings.
// Apply is for a caller that checks the result otherwise (spoc sim serve
// --vllm-faithful lets the simulated deployment judge vLLM's flags, as
// vLLM would, instead of the workload's rules).
func (c *Config) Apply(settings ...Setting) error {
	return c.apply(settings, positions{})
}

// apply decodes every setting over c, records its key as written by the
// user (Assumptions leaves it out) and positions it at its Source in pos,
// replacing what the file wrote there, so that a validation error about the
// key names the setting.
func (c *Config) apply(settings []Setting, pos positions) error {
	errs := &Errors{}
	set := map[string]string{} // key → source, for the derived adjustments
	given := map[string]Setting{}
	for _, s := range settings {
		if prev, ok := given[s.Key]; ok && !s.Append && prev.Source != s.Source && prev.Value != s.Value {
			// two spellings of one key (vllm serve's positional MODEL and
			// --model) that disagree: neither wins silently
			errs.List = append(errs.List, &FieldError{Path: s.Key, Source: s.Source,
				Msg: fmt.Sprintf("given twice: %s %s and %s %s", prev.Source, prev.Value, s.Source, s.Value)})
			continue
		}
		given[s.Key] = s
		n, err := c.applySetting(s, pos)
		if err != nil {
			var fe *Errors
			if errors.As(err, &fe) {
				errs.List = append(errs.List, fe.List...)
				continue
			}
			errs.List = append(errs.List, &FieldError{Path: s.Key, Source: s.Source, Msg: err.Error()})
			continue
		}
		if c.written == nil {
			c.written = map[string]bool{}
		}
		c.written[s.Key] = true
		for i := range n {
			c.written[fmt.Sprintf("%s[%d]", s.Key, i)] = true
		}
		set[s.Key] = s.Source
	}
	if err := errs.Err(); err != nil {
		return err
	}
	c.adjust(set)
	return nil
}

// applySetting decodes one setting into its field and returns how many
// list items it appended.
func (c *Config) applySetting(s Setting, pos positions) (appended int, err error) {
	target, mapKey, err := lookupKey(reflect.ValueOf(c).Elem(), s.Key)
	if err != nil {
		return 0, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(s.Value), &doc); err != nil {
		return 0, fmt.Errorf("invalid value %q: %s", s.Value, trimYAMLErr(err))
	}
	node := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: ""}
	if len(doc.Content) > 0 {
		node = doc.Content[0]
	}
	t := target.Type()
	if mapKey != "" {
		t = t.Elem()
	}
	if s.Append && t.Kind() != reflect.Slice {
		return 0, fmt.Errorf("is not a list: a value cannot be added to it")
	}
	// The value's own positions are those of the setting's text, which
	// means nothing to the user: errors name the setting instead.
	bad := &Errors{}
	checkKnown(node, t, s.Key, positions{}, bad)
	if len(bad.List) > 0 {
		for _, fe := range bad.List {
			fe.Line, fe.Column, fe.Source = 0, 0, s.Source
		}
		return 0, bad
	}
	v := reflect.New(t)
	if mapKey == "" && !s.Append && t.Kind() == reflect.Struct {
		v.Elem().Set(target) // a partial mapping keeps the section's other fields
	}
	if err := node.Decode(v.Interface()); err != nil {
		return 0, fmt.Errorf("%s", trimYAMLErr(err))
	}
	for p := range pos {
		if within(p, s.Key) && !s.Append {
			delete(pos, p)
		}
	}
	switch {
	case mapKey != "":
		setMapEntry(target, s.Key, mapKey, v.Elem())
	case s.Append:
		from := target.Len()
		target.Set(reflect.AppendSlice(target, v.Elem()))
		appended = v.Elem().Len()
		for i := range appended {
			pos[fmt.Sprintf("%s[%d]", s.Key, from+i)] = position{Source: s.Source}
		}
		return appended, nil
	default:
		target.Set(v.Elem())
	}
	pos[s.Key] = position{Source: s.Source}
	return 0, nil
}

// setMapEntry sets m[k] = v. Under engine.params a key is a vLLM flag in
// any spelling: the setting replaces the configured parameter of the same
// flag (max_num_seqs in the file, --max-num-seqs on the command line).
func setMapEntry(m reflect.Value, key, k string, v reflect.Value) {
	if params, ok := m.Addr().Interface().(*map[string]any); ok && key == "engine.params."+k {
		*params = vllm.Merge(*params, map[string]any{k: v.Interface()})
		return
	}
	if m.IsNil() {
		m.Set(reflect.MakeMap(m.Type()))
	}
	m.SetMapIndex(reflect.ValueOf(k).Convert(m.Type().Key()), v)
}

// lookupKey finds the field a key names, walking YAML names through the
// configuration's structs. A key that reaches a map names one entry: the
// map is returned with the rest of the key as the entry's name.
func lookupKey(v reflect.Value, key string) (field reflect.Value, mapKey string, err error) {
	parts := strings.Split(key, ".")
	for i, part := range parts {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, "", fmt.Errorf("%s is not a section: no key %q under it", strings.Join(parts[:i], "."), part)
		}
		fields := yamlFields(v.Type())
		f, ok := fields[part]
		if !ok {
			return reflect.Value{}, "", fmt.Errorf("unknown key %q%s", part, suggest(part, fieldNames(fields)))
		}
		v = v.FieldByIndex(f.Index)
		if v.Kind() == reflect.Map && i+1 < len(parts) {
			return v, strings.Join(parts[i+1:], "."), nil
		}
	}
	return v, "", nil
}

// adjust applies what follows from the settings besides their own keys
// (set maps each key set to its source), and notes what it changed:
//   - engine.gpus set below the configured tensor-parallel size lowers it
//     to the GPUs, unless the settings set it too;
//   - search.trials set below search.parallel lowers search.parallel: a
//     smaller budget runs every trial at once.
func (c *Config) adjust(set map[string]string) {
	_, tpSet := set["engine.tensor_parallel_size"]
	if _, ok := set["engine.gpus"]; ok && !tpSet && c.Engine.GPUs >= 1 && c.Engine.TensorParallelSize > c.Engine.GPUs {
		c.Engine.TensorParallelSize = c.Engine.GPUs
	}
	if src, ok := set["search.trials"]; ok && c.Search.Trials >= 1 && c.Search.Parallel > c.Search.Trials {
		c.notes = append(c.notes, fmt.Sprintf("search.parallel %d lowered to %d: %s %d has no more trials to run at once",
			c.Search.Parallel, c.Search.Trials, src, c.Search.Trials))
		c.Search.Parallel = c.Search.Trials
	}
}

// Notes says what loading the settings changed besides the keys they set
// (search.parallel lowered to a smaller --trials), for the user to read.
func (c *Config) Notes() []string { return c.notes }
