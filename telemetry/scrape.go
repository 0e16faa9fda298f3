package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
)

// ErrNoCatalogMetrics reports an exposition without any metric spoc knows:
// most likely a URL that is not a vLLM or dcgm-exporter endpoint.
var ErrNoCatalogMetrics = errors.New("no vLLM or DCGM metric in the exposition (is this a vLLM /metrics or dcgm-exporter URL?)")

// ErrNoServerMetrics reports an exposition without any of the metric names
// a target maps (Target.Metrics): a misspelt name, or the wrong URL.
var ErrNoServerMetrics = errors.New("no mapped metric in the exposition")

// hasEngineSample reports whether samples hold an engine metric (one
// with a role), not DCGM's only.
func hasEngineSample(samples []Sample) bool {
	for _, s := range samples {
		if m, _, _, ok := Lookup(s.Name); ok && m.Role != "" {
			return true
		}
	}
	return false
}

// mappedNames lists a target's mapped metric names as role=name, sorted.
func mappedNames(metrics map[string]string) string {
	out := make([]string, 0, len(metrics))
	for r, n := range metrics {
		out = append(out, r+"="+n)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// Scraper reads one target's current samples.
type Scraper interface {
	Scrape(ctx context.Context) ([]Sample, error)
}

// acceptHeader asks for the classic text format, which every exporter serves
// and which parses fast; expfmt's OpenMetrics parser costs milliseconds per
// line, far over the scrape budget. An answer in another format is still
// parsed.
const acceptHeader = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// HTTPScraper reads a Prometheus exposition over HTTP.
type HTTPScraper struct {
	Target Target
	// Client defaults to http.DefaultClient; set a timeout through ctx.
	Client *http.Client
}

var _ Scraper = (*HTTPScraper)(nil)

// Scrape fetches and parses the target's exposition. Errors name the target
// and its URL.
func (h *HTTPScraper) Scrape(ctx context.Context) ([]Sample, error) {
	samples, err := h.scrape(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape %q (%s): %w", h.Target.Name, h.Target.URL, err)
	}
	return samples, nil
}

func (h *HTTPScraper) scrape(ctx context.Context) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.Target.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", acceptHeader)
	c := h.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("unexpected HTTP status %s", resp.Status)
	}
	format := expfmt.ResponseFormat(resp.Header)
	if format.FormatType() == expfmt.TypeUnknown {
		format = TextFormat
	}
	if h.Target.Metrics != nil {
		samples, err := ParseServer(resp.Body, format, h.Target.Metrics)
		if err == nil && !hasEngineSample(samples) {
			err = fmt.Errorf("%w: none of the server's metric names given (%s) is in the exposition", ErrNoServerMetrics, mappedNames(h.Target.Metrics))
		}
		return samples, err
	}
	samples, err := Parse(resp.Body, format)
	if err != nil {
		return nil, err
	}
	if len(samples) == 0 {
		return nil, ErrNoCatalogMetrics
	}
	return samples, nil
}
