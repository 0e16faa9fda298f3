package trace

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Rule assigns a Category to every kernel name its regular expression matches.
type Rule struct {
	// Name identifies the rule in errors, reports and docs/trace.md.
	Name     string
	Category Category
	// Match is an RE2 regular expression searched (not anchored) in the
	// kernel's demangled name.
	Match *regexp.Regexp
	// Evidence says which library and kernel family the expression matches and
	// why that family belongs to Category.
	Evidence string
}

// RuleSet is an ordered list of rules: the first rule that matches a kernel
// name decides its category; names no rule matches are Other. A RuleSet is safe
// for concurrent use.
type RuleSet struct {
	rules []Rule

	mu    sync.Mutex
	cache map[string]classified
}

type classified struct {
	cat  Category
	rule string
}

// NewRuleSet returns a RuleSet applying rules in order.
func NewRuleSet(rules []Rule) *RuleSet {
	return &RuleSet{rules: slices.Clone(rules), cache: make(map[string]classified)}
}

// Rules returns the rules in the order they are applied.
func (s *RuleSet) Rules() []Rule { return slices.Clone(s.rules) }

// Classify returns the category of kernel name and the name of the rule that
// decided it ("" for Other).
func (s *RuleSet) Classify(name string) (Category, string) {
	s.mu.Lock()
	c, ok := s.cache[name]
	s.mu.Unlock()
	if ok {
		return c.cat, c.rule
	}
	c = classified{cat: Other}
	for i := range s.rules {
		if s.rules[i].Match.MatchString(name) {
			c = classified{cat: s.rules[i].Category, rule: s.rules[i].Name}
			break
		}
	}
	s.mu.Lock()
	s.cache[name] = c
	s.mu.Unlock()
	return c.cat, c.rule
}

//go:embed rules.yaml
var defaultRulesYAML []byte

// DefaultRulesYAML returns the built-in rules file; it is a working example of
// the format ParseRules reads.
func DefaultRulesYAML() []byte { return append([]byte(nil), defaultRulesYAML...) }

var defaultRules = sync.OnceValues(func() ([]Rule, error) {
	return parseRules(defaultRulesYAML, "built-in rules.yaml")
})

// DefaultRules returns a RuleSet with the built-in rules. It panics only if the
// embedded rules file is invalid, which the package tests rule out.
func DefaultRules() *RuleSet {
	rules, err := defaultRules()
	if err != nil {
		panic(err)
	}
	return NewRuleSet(rules)
}

// ParseRules reads a YAML rules file from r; name labels errors. The format:
//
//	include_defaults: true   # append the built-in rules after these
//	rules:
//	  - name: my-attention
//	    category: attention
//	    match: 'my_attn_kernel'
//	    evidence: why this kernel family is attention
//
// Every rule needs a unique name, a canonical category and a valid RE2
// expression; unknown keys are errors. Each error names the rule and its line.
func ParseRules(r io.Reader, name string) (*RuleSet, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read rules file %s: %w", name, err)
	}
	var includeDefaults bool
	rules, err := parseRulesFile(data, name, &includeDefaults)
	if err != nil {
		return nil, err
	}
	if includeDefaults {
		defs, err := defaultRules()
		if err != nil {
			return nil, err
		}
		seen := make(map[string]bool, len(rules))
		for _, r := range rules {
			seen[r.Name] = true
		}
		for _, d := range defs {
			if !seen[d.Name] {
				rules = append(rules, d)
			}
		}
	}
	return NewRuleSet(rules), nil
}

func parseRules(data []byte, name string) ([]Rule, error) {
	var include bool
	rules, err := parseRulesFile(data, name, &include)
	if err == nil && include {
		err = fmt.Errorf("rules file %s: include_defaults is not allowed in the built-in rules", name)
	}
	return rules, err
}

// parseRulesFile walks the YAML node tree by hand so that every error can
// name the rule and the line it is on.
func parseRulesFile(data []byte, name string, includeDefaults *bool) ([]Rule, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("rules file %s: %w", name, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("rules file %s: empty file, want a mapping with a rules list", name)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("rules file %s: line %d: want a mapping with a rules list", name, root.Line)
	}
	var rulesNode *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "rules":
			rulesNode = v
		case "include_defaults":
			b, err := strconv.ParseBool(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil {
				return nil, fmt.Errorf("rules file %s: line %d: include_defaults: want true or false, got %q", name, v.Line, v.Value)
			}
			*includeDefaults = b
		default:
			return nil, fmt.Errorf("rules file %s: line %d: unknown key %q (want rules, include_defaults)", name, k.Line, k.Value)
		}
	}
	if rulesNode == nil || rulesNode.Kind != yaml.SequenceNode || len(rulesNode.Content) == 0 {
		return nil, fmt.Errorf("rules file %s: rules: want a non-empty list of rules", name)
	}
	rules := make([]Rule, 0, len(rulesNode.Content))
	seen := make(map[string]int)
	for i, n := range rulesNode.Content {
		r, err := parseRule(n)
		label := fmt.Sprintf("rule %d", i+1)
		if r.Name != "" {
			label += fmt.Sprintf(" %q", r.Name)
		}
		if err == nil {
			if prev, dup := seen[r.Name]; dup {
				err = fmt.Errorf("duplicate name (first used by rule %d)", prev)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("rules file %s: %s (line %d): %w", name, label, n.Line, err)
		}
		seen[r.Name] = i + 1
		rules = append(rules, r)
	}
	return rules, nil
}

func parseRule(n *yaml.Node) (Rule, error) {
	var r Rule
	if n.Kind != yaml.MappingNode {
		return r, errors.New("want a mapping with name, category, match, evidence")
	}
	fields := map[string]string{}
	var fieldErr error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "name", "category", "match", "evidence":
		default:
			fieldErr = cmpOr(fieldErr, fmt.Errorf("line %d: unknown field %q (want name, category, match, evidence)", k.Line, k.Value))
			continue
		}
		if v.Kind != yaml.ScalarNode {
			fieldErr = cmpOr(fieldErr, fmt.Errorf("line %d: %s: want a string", v.Line, k.Value))
			continue
		}
		fields[k.Value] = v.Value
	}
	// The name is read first so that every later error can name the rule.
	r.Name = strings.TrimSpace(fields["name"])
	if fieldErr != nil {
		return r, fieldErr
	}
	if r.Name == "" {
		return r, errors.New("name: required")
	}
	r.Evidence = strings.TrimSpace(fields["evidence"])
	cat, err := ParseCategory(fields["category"])
	if err != nil {
		return r, fmt.Errorf("category: %w", err)
	}
	r.Category = cat
	if fields["match"] == "" {
		return r, errors.New("match: required")
	}
	re, err := regexp.Compile(fields["match"])
	if err != nil {
		return r, fmt.Errorf("match: %w", err)
	}
	if re.MatchString("") {
		return r, fmt.Errorf("match: %q matches the empty string, so it would match every kernel", fields["match"])
	}
	r.Match = re
	return r, nil
}

// cmpOr keeps the first error.
func cmpOr(first, next error) error {
	if first != nil {
		return first
	}
	return next
}
