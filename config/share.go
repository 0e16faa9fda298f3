package config

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Share is a fraction written in YAML as a percentage ("10%") or a
// number (0.10).
type Share float64

// MarshalYAML writes the share as a percentage.
func (s Share) MarshalYAML() (any, error) {
	return strconv.FormatFloat(100*float64(s), 'g', -1, 64) + "%", nil
}

// UnmarshalYAML accepts "10%", "10 %" or 0.10.
func (s *Share) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a share such as 10%% or 0.10", n.Line)
	}
	v, err := ParseShare(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*s = Share(v)
	return nil
}

// ParseShare reads "10%", "10 %" or "0.10" as 0.10.
func ParseShare(text string) (float64, error) {
	t := strings.TrimSpace(text)
	scale := 1.0
	if rest, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = strings.TrimSpace(rest), 0.01
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid share %q (want e.g. 10%% or 0.10)", text)
	}
	return v * scale, nil
}
