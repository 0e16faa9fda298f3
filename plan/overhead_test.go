package plan_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/plan"
)

// The per-run overhead of an estimate says where it comes from: measured
// on spoc sim serve, an assumption for another engine, until
// plan.run_overhead gives this engine's.
func TestEstimateLabelsRunOverhead(t *testing.T) {
	for _, tc := range []struct {
		overhead time.Duration
		secs     float64
		source   string
	}{{0, plan.RunOverhead.Seconds(), plan.RunOverheadAssumed}, {2 * time.Second, 2, "configured (plan.run_overhead)"}} {
		cfg := config.Default()
		cfg.Plan.RunOverhead = config.Duration(tc.overhead)
		s, err := cfg.Setup(config.SetupOptions{OutDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		est, err := plan.EstimateEngineTime(context.Background(), s, plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if est.RunOverheadSeconds != tc.secs || est.RunOverheadSource != tc.source {
			t.Errorf("run_overhead %v: estimate counts %.1f s (%s), want %.1f s (%s)", tc.overhead, est.RunOverheadSeconds, est.RunOverheadSource, tc.secs, tc.source)
		}
		var b bytes.Buffer
		if err := plan.WriteEstimate(&b, est); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.source) {
			t.Errorf("the printed estimate does not say where the overhead comes from:\n%s", b.String())
		}
	}
}
