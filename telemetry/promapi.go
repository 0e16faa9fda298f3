package telemetry

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Queries maps catalog metric names (histograms by their base name) to the
// PromQL expression that fetches their raw series from Prometheus. Edit an
// expression to add label matchers (a namespace, a job) or to read a
// recording rule; the result must keep the series' labels (and "le" for
// histogram buckets), because signals are derived in spoc, the same way for
// Prometheus data as for direct scrapes.
type Queries map[string]string

// DefaultQueries returns one selector per catalog metric, matching its current
// and older names (and, for histograms, the _bucket, _sum and _count series).
func DefaultQueries() Queries { return SelectorQueries("") }

// SelectorQueries is DefaultQueries with extra label matchers in every
// selector, such as `job=~"vllm|dcgm"` or `namespace="llm"` (without
// braces), to read one deployment out of a shared Prometheus.
func SelectorQueries(matchers string) Queries {
	q := make(Queries, len(catalog))
	for _, m := range catalog {
		q[m.Name] = defaultQuery(m, strings.TrimSpace(matchers))
	}
	return q
}

func defaultQuery(m Metric, matchers string) string {
	names := append([]string{m.Name}, m.Aliases...)
	extra := ""
	if matchers != "" {
		extra = "," + matchers
	}
	if m.Kind == Histogram {
		return fmt.Sprintf(`{__name__=~"(%s)_(bucket|sum|count)"%s}`, strings.Join(names, "|"), extra)
	}
	if len(names) == 1 {
		if matchers != "" {
			return m.Name + "{" + matchers + "}"
		}
		return m.Name
	}
	return fmt.Sprintf(`{__name__=~"%s"%s}`, strings.Join(names, "|"), extra)
}

// Validate checks that every key names a catalog metric (by its current
// name). An empty expression is valid: it leaves the metric out.
func (q Queries) Validate() error {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		m, suffix, alias, ok := Lookup(k)
		if !ok || suffix != "" || alias || m.Name != k {
			return fmt.Errorf("query %q: not a catalog metric name (see Catalog)", k)
		}
	}
	return nil
}

// MaxPointsPerQuery is Prometheus's limit of points per series in one
// query_range answer; the step is widened to stay under it.
const MaxPointsPerQuery = 11000

// QueryOptions configure QueryRange.
type QueryOptions struct {
	// Step is the resolution of the answer; it defaults to DefaultInterval
	// and widens to keep under MaxPointsPerQuery.
	Step time.Duration
	// Selector adds label matchers (without braces) to every default query;
	// see SelectorQueries.
	Selector string
	// Queries replaces the default queries entry by entry; an empty
	// expression leaves the metric out.
	Queries Queries
	// Store bounds the returned store.
	Store StoreOptions
	// Client defaults to http.DefaultClient.
	Client *http.Client
}

// QueryRange asks the Prometheus server at baseURL for every catalog metric
// over [start, end] with query_range and returns the series in a Store, whose
// Window derives the same signals as a direct scrape would. Each series'
// target is its "job" label (or "instance"). Errors name the metric and the
// server.
func QueryRange(ctx context.Context, baseURL string, start, end time.Time, opts QueryOptions) (*Store, error) {
	if !end.After(start) {
		return nil, fmt.Errorf("query Prometheus %s: end %s is not after start %s", baseURL, end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	queries := SelectorQueries(opts.Selector)
	for k, v := range opts.Queries {
		queries[k] = v
	}
	if err := queries.Validate(); err != nil {
		return nil, fmt.Errorf("query Prometheus %s: %w", baseURL, err)
	}
	client, err := api.NewClient(api.Config{Address: baseURL, Client: opts.Client})
	if err != nil {
		return nil, fmt.Errorf("query Prometheus %s: %w", baseURL, err)
	}
	papi := promv1.NewAPI(client)
	step := opts.Step
	if step <= 0 {
		step = DefaultInterval
	}
	if span := end.Sub(start); span/step > MaxPointsPerQuery {
		step = time.Duration(math.Ceil(float64(span)/MaxPointsPerQuery/float64(time.Second))) * time.Second
	}
	st := NewStore(opts.Store)
	names := make([]string, 0, len(queries))
	for k := range queries {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		expr := queries[name]
		if strings.TrimSpace(expr) == "" {
			continue
		}
		v, _, _, err := papi.QueryRange(ctx, expr, promv1.Range{Start: start, End: end, Step: step})
		if err != nil {
			return nil, fmt.Errorf("query Prometheus %s for %s (%s): %w", baseURL, name, expr, err)
		}
		matrix, ok := v.(model.Matrix)
		if !ok {
			return nil, fmt.Errorf("query Prometheus %s for %s (%s): want a range vector, got %s", baseURL, name, expr, v.Type())
		}
		addMatrix(st, name, matrix)
	}
	return st, nil
}

// addMatrix stores a query_range answer for catalog metric key. A series keeps
// its own __name__ when it belongs to key's metric; an expression that dropped
// __name__ is stored under key (a histogram's series with "le" as buckets).
// Older-name series are dropped when the current name is present.
func addMatrix(st *Store, key string, matrix model.Matrix) {
	want, _, _, _ := Lookup(key)
	hasCurrent := false
	for _, ss := range matrix {
		if _, _, alias, ok := Lookup(string(ss.Metric[model.MetricNameLabel])); ok && !alias {
			hasCurrent = true
		}
	}
	for _, ss := range matrix {
		name := string(ss.Metric[model.MetricNameLabel])
		m, suffix, alias, ok := Lookup(name)
		switch {
		case ok && m.Name == want.Name:
			if alias && hasCurrent {
				continue
			}
			name = m.Name + suffix
		case want.Kind == Histogram:
			if _, isBucket := ss.Metric["le"]; !isBucket {
				continue
			}
			name = want.Name + SuffixBucket
		default:
			name = want.Name
		}
		labels := make(map[string]string, len(ss.Metric))
		for k, v := range ss.Metric {
			if k != model.MetricNameLabel {
				labels[string(k)] = string(v)
			}
		}
		target := labels["job"]
		if target == "" {
			target = labels["instance"]
		}
		if target == "" {
			target = "prometheus"
		}
		for _, p := range ss.Values {
			st.Add(target, p.Timestamp.Time(), []Sample{{Name: name, Labels: labels, Value: float64(p.Value)}})
		}
	}
}
