package flagcatalog

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Kind is the type of a flag's value.
type Kind string

// Flag kinds. A Bool is a switch: given, it is on; NegationPrefix turns it
// off only where the flag is Negatable (vLLM's BooleanOptionalAction).
// List and JSON flags take text spoc passes through as written.
const (
	Bool   Kind = "bool"
	Int    Kind = "int"
	Float  Kind = "float"
	String Kind = "string"
	List   Kind = "list"
	JSON   Kind = "json"
)

// NegationPrefix is the "no-" of a negated switch (--no-enable-prefix-caching).
const NegationPrefix = "no-"

// Name returns the command-line spelling of a parameter name without the
// leading dashes: "max_num_seqs" and "--max-num-seqs" both become
// "max-num-seqs". It is spoc's one normalisation of parameter names
// (vllm.FlagName): two names are the same flag exactly when their Names
// are equal.
func Name(name string) string {
	return strings.ReplaceAll(strings.TrimLeft(strings.TrimSpace(name), "-"), "_", "-")
}

// Flag is one server flag of a catalogue.
type Flag struct {
	// Name is the flag without dashes (tensor-parallel-size).
	Name string
	Kind Kind
	// Default is the engine's value when the flag is not given; nil where
	// the engine derives it at start-up (from the GPU's memory, the model).
	Default any
	// Aliases are other spellings the engine accepts (tp for
	// tensor-parallel-size).
	Aliases []string
	// Choices are the accepted values of a String flag; empty: any.
	Choices []string
	// Negatable switches also take the no- form.
	Negatable bool
	// Deprecated says the engine warns on the flag (and will drop it).
	Deprecated bool
	// Help says what the flag does, in the engine's terms.
	Help string
}

// Catalogue is one engine's flags at one version.
type Catalogue struct {
	// Engine names the engine ("vLLM"); Source says where the flags were
	// read (repository, files, commit, version).
	Engine, Source string
	flags          []Flag
	byName         map[string]int
}

// New returns the catalogue of flags. A name or alias given twice is a
// programming error and panics: catalogues are package data.
func New(engine, source string, flags []Flag) *Catalogue {
	c := &Catalogue{Engine: engine, Source: source, flags: slices.Clone(flags), byName: make(map[string]int, 2*len(flags))}
	for i, f := range c.flags {
		for _, n := range append([]string{f.Name}, f.Aliases...) {
			if _, dup := c.byName[n]; dup {
				panic(fmt.Sprintf("flagcatalog: %s flag %q declared twice", engine, n))
			}
			c.byName[n] = i
		}
	}
	return c
}

// Lookup finds the flag a parameter name spells: any spelling Name
// accepts, an alias, or the no- form of a negatable switch.
func (c *Catalogue) Lookup(name string) (Flag, bool) {
	n := Name(name)
	if i, ok := c.byName[n]; ok {
		return c.flags[i], true
	}
	if rest, ok := strings.CutPrefix(n, NegationPrefix); ok {
		if i, ok := c.byName[rest]; ok && c.flags[i].Negatable {
			return c.flags[i], true
		}
	}
	return Flag{}, false
}

// Names returns every flag name of the catalogue, aliases included,
// sorted: the candidates of a "did you mean".
func (c *Catalogue) Names() []string {
	names := make([]string, 0, len(c.byName))
	for n := range c.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Flags returns the flags, sorted by name.
func (c *Catalogue) Flags() []Flag {
	out := slices.Clone(c.flags)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Defaults returns the flags with a fixed default, keyed by name, less
// those named in except.
func (c *Catalogue) Defaults(except ...string) map[string]any {
	out := map[string]any{}
	for _, f := range c.flags {
		if f.Default != nil && !slices.Contains(except, f.Name) {
			out[f.Name] = f.Default
		}
	}
	return out
}

// Check reports whether value suits flag f: its kind, and one of its
// choices.
func (f Flag) Check(value any) error {
	switch f.Kind {
	case Bool:
		if _, ok := value.(bool); !ok {
			return fmt.Errorf("--%s is a switch: want true or false, got %v", f.Name, value)
		}
	case Int:
		if _, ok := IntValue(value); !ok {
			return fmt.Errorf("--%s takes an integer, got %v", f.Name, value)
		}
	case Float:
		switch value.(type) {
		case float64, int, int64:
		default:
			return fmt.Errorf("--%s takes a number, got %v", f.Name, value)
		}
	case String:
		s, ok := value.(string)
		if !ok {
			return fmt.Errorf("--%s takes a string, got %v", f.Name, value)
		}
		if len(f.Choices) > 0 && !slices.Contains(f.Choices, s) {
			return fmt.Errorf("--%s %q is not one of %v", f.Name, s, f.Choices)
		}
	}
	return nil
}

// IntValue reads an integer-valued parameter: YAML and the samplers give int,
// int64 or an integral float64.
func IntValue(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		if n == math.Trunc(n) && !math.IsInf(n, 0) {
			return int(n), true
		}
	}
	return 0, false
}
