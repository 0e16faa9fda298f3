package telemetry

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Sample is one value from an exposition: a metric name as the exporter wrote
// it, its labels (a histogram bucket carries "le"), and the value.
type Sample struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Value  float64           `json:"value"`
}

// Target is one endpoint to scrape: a short name used in errors, series and
// the JSONL file, and the URL of its Prometheus text exposition.
type Target struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// Metrics are the server's own names of the engine metrics, by role
	// (Roles: running → the server's gauge of running requests), for a
	// server spoc knows nothing about (flavor generic's
	// engine.generic.metrics): only they and DCGM's names are read, and
	// stored under the catalog's names. Nil reads the catalog's names
	// (vLLM's, SGLang's, DCGM's).
	Metrics map[string]string `json:"metrics,omitempty"`
}

// ParseTarget parses the command-line form NAME=URL. The URL must be absolute
// http or https.
func ParseTarget(s string) (Target, error) {
	name, raw, ok := strings.Cut(s, "=")
	if !ok || name == "" || raw == "" {
		return Target{}, fmt.Errorf("target %q: want NAME=URL", s)
	}
	if err := validateTarget(Target{Name: name, URL: raw}); err != nil {
		return Target{}, err
	}
	return Target{Name: name, URL: raw}, nil
}

func validateTarget(t Target) error {
	if t.Name == "" {
		return fmt.Errorf("target with URL %q: empty name", t.URL)
	}
	u, err := url.Parse(t.URL)
	if err != nil {
		return fmt.Errorf("target %q: parse URL: %w", t.Name, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("target %q: URL %q is not an absolute http(s) URL", t.Name, t.URL)
	}
	if t.Metrics != nil {
		if err := CheckServerMetrics(t.Metrics); err != nil {
			return fmt.Errorf("target %q: %w", t.Name, err)
		}
	}
	return nil
}

// Scrape is the outcome of reading one target once: its samples, or the error
// that left a gap. It is also one line of telemetry.jsonl.
type Scrape struct {
	Time    time.Time `json:"time"`
	Target  string    `json:"target"`
	Seconds float64   `json:"duration_s,omitempty"`
	Error   string    `json:"error,omitempty"`
	Samples []Sample  `json:"samples,omitempty"`
}

// Gap is a stretch of consecutive failed scrapes of one target. The run went
// on; the target's series simply have no points between Start and End.
type Gap struct {
	Target  string    `json:"target"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Scrapes int       `json:"scrapes"`
	Error   string    `json:"error"`
}

// seriesKey is the identity of a series: target, canonical name and sorted
// labels. It is a string so it can key a map.
func seriesKey(target, name string, labels map[string]string) string {
	var b strings.Builder
	b.Grow(len(target) + len(name) + 16*len(labels))
	b.WriteString(target)
	b.WriteByte(0)
	b.WriteString(name)
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(labels[k])
	}
	return b.String()
}

// dropShadowedAliases removes samples under an older name of a metric when the
// same exposition also carries the metric's current name: vLLM versions in
// transition expose both, and counting both would double every value.
func dropShadowedAliases(samples []Sample) []Sample {
	current := make(map[string]bool)
	hasAlias := false
	for i := range samples {
		m, _, alias, ok := Lookup(samples[i].Name)
		if !ok {
			continue
		}
		if alias {
			hasAlias = true
		} else {
			current[m.Name] = true
		}
	}
	if !hasAlias {
		return samples
	}
	out := samples[:0]
	for _, s := range samples {
		m, _, alias, _ := Lookup(s.Name)
		if alias && current[m.Name] {
			continue
		}
		out = append(out, s)
	}
	return out
}
