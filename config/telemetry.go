package config

import (
	"fmt"
	"net/url"
)

// Telemetry configures metric collection during runs.
type Telemetry struct {
	Enabled            bool              `yaml:"enabled" doc:"Collect engine and GPU metrics during every run."`
	Interval           Duration          `yaml:"interval" doc:"Scrape interval."`
	Targets            []ScrapeTarget    `yaml:"targets,omitempty" doc:"Extra Prometheus text endpoints (dcgm-exporter, node exporters); the engine's own metrics endpoints are added automatically."`
	Prometheus         string            `yaml:"prometheus,omitempty" doc:"Query this Prometheus server's HTTP API over the run window instead of scraping directly."`
	Queries            map[string]string `yaml:"queries,omitempty" doc:"PromQL per catalog metric name (spoc telemetry catalog), replacing the built-in query of that metric when telemetry.prometheus is used; an empty expression leaves the metric out."`
	StragglerClockDrop float64           `yaml:"straggler_clock_drop" doc:"A GPU whose SM clock is this fraction below its tensor-parallel peers' median is flagged as a straggler."`
}

// ScrapeTarget is one named metrics endpoint.
type ScrapeTarget struct {
	Name string `yaml:"name" doc:"Label for the target."`
	URL  string `yaml:"url" doc:"http(s) URL of the metrics endpoint."`
}

// DefaultTelemetry scrapes every second and flags 10 % clock drops.
func DefaultTelemetry() Telemetry {
	return Telemetry{Enabled: true, Interval: Duration(1e9), StragglerClockDrop: 0.10}
}

func (t *Telemetry) validate(p string, errs *Errors) {
	if t.Interval <= 0 {
		errs.Addf(p+".interval", "must be positive")
	}
	if t.StragglerClockDrop <= 0 || t.StragglerClockDrop >= 1 {
		errs.Addf(p+".straggler_clock_drop", "must be in (0, 1), got %v", t.StragglerClockDrop)
	}
	for i, tg := range t.Targets {
		tp := fmt.Sprintf("%s.targets[%d]", p, i)
		if tg.Name == "" {
			errs.Addf(tp+".name", "must be set")
		}
		if u, err := url.Parse(tg.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs.Addf(tp+".url", "must be an http(s) URL, got %q", tg.URL)
		}
	}
	if t.Prometheus != "" {
		if u, err := url.Parse(t.Prometheus); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs.Addf(p+".prometheus", "must be an http(s) URL, got %q", t.Prometheus)
		}
	}
}
