package report_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/plan"
)

// regenFixture reruns today's default plan and rewrites testdata/plan.json:
//
//	go test ./report -run TestFixture -fixture
//
// then `go test ./report -run TestDocScreenshots -update` redraws the
// README's pictures from it (look at them before committing).
var regenFixture = flag.Bool("fixture", false, "rerun the default plan (spoc plan --compare with the cost example) and rewrite testdata/plan.json")

// fixtureConfig is the plan the fixture is: the default configuration,
// spoc plan --compare, and the cost section of docs/configuration.md's
// example (1000 users at peak, example GPU prices).
func fixtureConfig(t testing.TB, out string) plan.Setup {
	t.Helper()
	cfg := config.Default()
	cfg.Plan.TargetUsers = 1000
	cfg.Plan.GPUPricePerHour = map[string]float64{"H100-SXM": 2.5, "H200-SXM": 3.5}
	s, err := cfg.Setup(config.SetupOptions{OutDir: out, Compare: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fixtureThinning keeps one telemetry chart point in this many: the charts
// look the same and the fixture stays a few hundred kilobytes.
const fixtureThinning = 5

// TestFixture checks testdata/plan.json is a plan of today's shape (every
// number with its provenance, the cost section, the comparison) and, with
// -fixture, first regenerates it from a fresh default plan (about two
// minutes on 2 cores).
func TestFixture(t *testing.T) {
	if *regenFixture {
		start := time.Now()
		d, err := plan.Run(context.Background(), fixtureConfig(t, t.TempDir()), plan.Options{Version: "dev"})
		if err != nil {
			t.Fatalf("default plan: %v", err)
		}
		if d.Telemetry != nil {
			for i := range d.Telemetry.Charts {
				c := &d.Telemetry.Charts[i]
				thin := c.Points[:0]
				for j, p := range c.Points {
					if j%fixtureThinning == 0 || j == len(c.Points)-1 {
						thin = append(thin, p)
					}
				}
				c.Points = thin
			}
		}
		b, err := json.MarshalIndent(d, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("testdata/plan.json", append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote testdata/plan.json (%d bytes) from a plan of %s", len(b)+1, time.Since(start).Round(time.Second))
	}
	raw, err := os.ReadFile("testdata/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	var d plan.Summary
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	stale := func(what string) {
		t.Errorf("testdata/plan.json %s: regenerate it with go test ./report -run TestFixture -fixture", what)
	}
	if d.Capacity.Provenance.Source == "" {
		stale("records no provenance for the capacity")
	}
	for _, p := range d.Sweep {
		if p.Provenance.Source == "" {
			stale("has a sweep level without provenance")
			break
		}
	}
	if d.Cost == nil || d.Cost.TargetUsers != 1000 || len(d.Compare) != 2 {
		stale("lacks the cost section for 1000 users or the two compare rows")
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	var sla map[string]json.RawMessage
	if err := json.Unmarshal(keys["sla"], &sla); err != nil || sla["max_error_rate"] == nil {
		stale("spells the SLA in the old form")
	}
}
