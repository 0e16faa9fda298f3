package sim

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/workload"
)

var updateDigests = flag.Bool("update", false, "rewrite testdata/digests.golden from this run")

// digestRuns are fixed-seed runs whose records and stats the simulator's
// speed-ups must leave byte for byte the same: a closed-loop reference
// run, one whose KV cache is small enough to evict and preempt, and
// autoscaled open-loop days under each policy and router.
func digestRuns(t testing.TB) map[string]func() (Options, workload.Source) {
	small := func(replicas int, gmu float64, f Fleet) Deployment {
		spec := ReferenceDeploymentSpec()
		spec.GPUs = 4 * replicas
		spec.Fleet = f
		spec.Params["gpu-memory-utilization"] = gmu
		d, err := NewDeployment(spec)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	def, err := workload.OpenForRun(workload.DefaultSpec(), 131072, false)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]func() (Options, workload.Source){
		"reference-closed-loop": func() (Options, workload.Source) {
			return Options{Deployment: referenceDeployment(t), Users: 300, Ramp: 30 * time.Second, Warmup: 30 * time.Second,
				Duration: 2 * time.Minute, ThinkTimeScale: 1, Seed: 1, SeriesInterval: 10 * time.Second}, def
		},
		"evicting-fleet-affinity": func() (Options, workload.Source) {
			return Options{Deployment: small(2, 0.25, Fleet{Router: RouterSessionAffinity}), Users: 400, Ramp: 30 * time.Second,
				Warmup: 30 * time.Second, Duration: 3 * time.Minute, ThinkTimeScale: 1, Seed: 2, SeriesInterval: -1}, def
		},
		"evicting-fleet-least-loaded": func() (Options, workload.Source) {
			return Options{Deployment: small(2, 0.25, Fleet{}), Users: 300, Ramp: 30 * time.Second,
				Warmup: 30 * time.Second, Duration: 2 * time.Minute, ThinkTimeScale: 1, Seed: 3, SeriesInterval: -1}, def
		},
		"day-target-tracking": func() (Options, workload.Source) {
			return Options{Deployment: issueDeployment(t, 4, Fleet{Router: RouterSessionAffinity}), Arrivals: rampDay(2), Duration: 12 * time.Minute,
				ThinkTimeScale: 1, Seed: 1, SeriesInterval: -1, Autoscale: &Autoscale{Policy: &TargetTracking{UsersPerReplica: 20}, MinReplicas: 1, Startup: time.Minute}}, dayWorkload(t)
		},
		"day-hpa-kv": func() (Options, workload.Source) {
			return Options{Deployment: small(3, 0.3, Fleet{Router: RouterSessionAffinity}), Arrivals: &workload.Arrivals{Seed: 4, Rate: []workload.RatePoint{{PerSecond: 0.2}, {At: 5 * time.Minute, PerSecond: 0.8}}},
				Duration: 10 * time.Minute, ThinkTimeScale: 1, Seed: 1, SeriesInterval: -1, Autoscale: &Autoscale{Policy: &HPA{Metric: MetricKVCacheUsage, Target: 0.3}, MinReplicas: 1, Startup: time.Minute}}, def
		},
	}
}

// runDigest runs o and hashes every record and the run's stats.
func runDigest(t testing.TB, o Options, src workload.Source) (string, *RunStats) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	st, err := RunVirtual(context.Background(), o, src, digestSink{enc})
	if err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(st); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil)), st
}

// digestSink encodes each record as it is written and keeps nothing: a
// result.Borrower, so the run reuses its records and their gaps.
type digestSink struct{ enc *json.Encoder }

func (s digestSink) Write(r *result.Record) error { return s.enc.Encode(r) }

func (digestSink) BorrowsRecords() {}

// A sink that keeps its records gets records nothing reuses: kept to the
// end and encoded then, they are the records a borrowing sink encoded as
// they came (runDigest). Were a kept record or its gaps reused, a later
// request's values would overwrite it.
func TestKeptRecordsAreNotReused(t *testing.T) {
	runs := digestRuns(t)
	for _, name := range []string{"evicting-fleet-affinity", "day-target-tracking"} {
		mk, ok := runs[name]
		if !ok {
			t.Fatalf("no digest run %q", name)
		}
		o, src := mk()
		want, _ := runDigest(t, o, src)
		o, src = mk()
		var kept []*result.Record
		st, err := RunVirtual(context.Background(), o, src, result.SinkFunc(func(r *result.Record) error {
			kept = append(kept, r)
			return nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		enc := json.NewEncoder(h)
		for _, r := range kept {
			if err := enc.Encode(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := enc.Encode(st); err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != want {
			t.Errorf("%s: kept records digest %s, records as written %s", name, got[:16], want[:16])
		}
	}
}

// The simulator's records and stats for fixed seeds are those recorded in
// testdata/digests.golden: a change meant to make the simulator faster
// changes none of them. A change of the model itself rewrites the file
// (go test ./sim -run TestRecordsDigest -update) and says why.
//
// The digests are amd64's: other architectures fuse multiply-adds, and
// their floating point rounds differently.
func TestRecordsDigest(t *testing.T) {
	if runtime.GOARCH != "amd64" && !*updateDigests {
		t.Skipf("the recorded digests are amd64's, this is %s", runtime.GOARCH)
	}
	golden := filepath.Join("testdata", "digests.golden")
	want := map[string]string{}
	if f, err := os.Open(golden); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if name, sum, ok := strings.Cut(sc.Text(), " "); ok {
				want[name] = sum
			}
		}
		f.Close()
	} else if !*updateDigests {
		t.Fatalf("%s: %v (go test ./sim -run TestRecordsDigest -update writes it)", golden, err)
	}
	runs := digestRuns(t)
	got := map[string]string{}
	var names []string
	for name := range runs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		o, src := runs[name]()
		sum, st := runDigest(t, o, src)
		got[name] = sum
		t.Logf("%s: %s (%d requests, %d evictions, %d preemptions, hits %d of %d prompt tokens)", name, sum[:16], st.Scheduled,
			st.Engine.Evictions, st.Engine.Preemptions, st.Engine.PrefixHits, st.Engine.PrefixQueries)
		if !*updateDigests && want[name] != sum {
			t.Errorf("%s: records digest %s, recorded %s", name, sum, want[name])
		}
	}
	if *updateDigests {
		var b strings.Builder
		for _, name := range names {
			fmt.Fprintf(&b, "%s %s\n", name, got[name])
		}
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
