package sim

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/workload"
)

// Issue 32's acceptance properties of the fleet model, and the reference
// table of docs/fleet.md.

// soloWorkload shares no prefix between any two requests: every session is
// one turn (the growth never fits the context limit) and the prefix
// geometry is none, so a prompt is a document of its own.
func soloWorkload(t testing.TB) workload.Workload {
	t.Helper()
	s := workload.DefaultSpec()
	s.Geometry = workload.Geometry{Kind: workload.GeometryNone}
	s.Profiles = []workload.Profile{{
		Name: "solo", Weight: 1,
		ContextStart: workload.Lognormal(4000, 0.3).Clip(1000, 8000), MaxContext: 8000,
		Growth:       workload.Constant(9000),
		OutputTokens: workload.Lognormal(300, 0.5).Clip(16, 2048),
		ThinkTime:    workload.DistSpec{Kind: workload.DistExponential, Mean: 5},
		AtMax:        "new-session",
	}}
	w, err := workload.OpenForRun(s, 131072, true)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Without shared prefixes a least-loaded fleet of R replicas serves R times
// what one replica serves, within 5 % (R ≤ 4): the fleet model adds no
// capacity and loses none that a router could not win back.
func TestPropertyFleetScalesWithoutSharedPrefixes(t *testing.T) {
	testtool.Long(t, "four capacity searches of fleets: about 12 s")
	src := soloWorkload(t)
	load := fleetLoad{ramp: 30 * time.Second, warmup: time.Minute, window: 5 * time.Minute}
	pass := func(r int) func(int) bool {
		return func(users int) bool {
			l := load
			l.users = users
			f := runFleet(t, issueDeployment(t, r, Fleet{}), src, issueSLA(), l)
			return f.res.SLA.Pass
		}
	}
	one := ceiling(40, 1, pass(1))
	if one < 20 {
		t.Fatalf("one replica serves %d users; the test needs a meaningful ceiling", one)
	}
	for r := 2; r <= 4; r++ {
		want := r * one
		step := max(1, want/100)
		got := ceiling(want, step, pass(r))
		ratio := float64(got) / float64(want)
		t.Logf("R=%d: %d users, R × one replica = %d (%.3f×)", r, got, want, ratio)
		if math.Abs(ratio-1) > 0.05 {
			t.Errorf("R=%d: ceiling %d users, %.1f %% from R × one replica (%d)", r, got, 100*(ratio-1), want)
		}
	}
}

// Under session affinity each replica of a fleet keeps the prefix-cache
// hit rate of a single server at the same load per replica, within 5
// points, on the reference workload and deployment.
func TestPropertyFleetAffinityKeepsHitRate(t *testing.T) {
	testtool.Long(t, "reference fleet runs of up to 600 users: about 10 s")
	const perReplica = 150
	load := fleetLoad{users: perReplica, ramp: time.Minute, warmup: time.Minute, window: propDuration}
	ref := func(r int, f Fleet) fleetRun {
		d := referenceDeployment(t)
		d.GPUs, d.Fleet = 4*r, f
		l := load
		l.users = perReplica * r
		return runFleet(t, d, defaultSource(t), result.DefaultSLA(), l)
	}
	single := ref(1, Fleet{}).st.Fleet.HitRate
	t.Logf("one replica, %d users: hit rate %.1f %%", perReplica, 100*single)
	for _, r := range []int{2, 4} {
		for _, f := range []Fleet{{Router: RouterSessionAffinity}, {Router: RouterLeastLoaded}} {
			run := ref(r, f)
			var rates []string
			worst := 0.0
			for _, rs := range run.st.Fleet.Replicas {
				rates = append(rates, fmt.Sprintf("%.1f", 100*rs.HitRate))
				worst = max(worst, math.Abs(rs.HitRate-single))
			}
			t.Logf("R=%d %s, %d users: per-replica hit rates %s %%, imbalance %.2f", r, f.Policy(), perReplica*r, strings.Join(rates, " "), run.st.Fleet.Imbalance)
			if f.Router == RouterSessionAffinity && worst > 0.05 {
				t.Errorf("R=%d session affinity: a replica's hit rate is %.1f points from a single server's %.1f %%", r, 100*worst, 100*single)
			}
		}
	}
}

// TestFleetReferenceTable prints docs/fleet.md's reference table: the
// reference deployment (gpt-oss-120b on 4× H100 per replica) and workload,
// users at the SLA for R = 1, 2, 4, 8 under every policy, with the fleet's
// hit rate and load imbalance at that ceiling. It takes several minutes:
//
//	SPOC_FLEET_TABLE=1 go test -run TestFleetReferenceTable -v -timeout 2h ./sim/
func TestFleetReferenceTable(t *testing.T) {
	if os.Getenv("SPOC_FLEET_TABLE") == "" {
		t.Skip("set SPOC_FLEET_TABLE=1 to print the reference table (minutes)")
	}
	// the plan's sweep: the default workload joined mid-session and the run
	// section's windows, a 1-minute ramp, 3 minutes of warm-up, 10 measured
	load := fleetLoad{ramp: time.Minute, warmup: 3 * time.Minute, window: 10 * time.Minute}
	src, err := workload.OpenForRun(workload.DefaultSpec(), ReferenceDeploymentSpec().MaxModelLen, true)
	if err != nil {
		t.Fatal(err)
	}
	replicas := []int{1, 2, 4, 8}
	if s := os.Getenv("SPOC_FLEET_TABLE_R"); s != "" {
		replicas = nil
		for _, f := range strings.Split(s, ",") {
			var r int
			fmt.Sscan(f, &r)
			replicas = append(replicas, r)
		}
	}
	run := func(r, users int, f Fleet) fleetRun {
		d := referenceDeployment(t)
		d.GPUs, d.Fleet = 4*r, f
		l := load
		l.users = users
		return runFleet(t, d, src, result.DefaultSLA(), l)
	}
	fleets := []Fleet{{Router: RouterLeastLoaded}, {Router: RouterRoundRobin}, {Router: RouterSessionAffinity},
		{Router: RouterSessionAffinity, HashBalanceFactor: 150}, {Router: RouterPrefixAware, Seed: 1},
		{Router: RouterVLLMDataParallel}, {Router: RouterKubernetesService, Seed: 1}}
	var one int
	fmt.Println("| router | R | users at SLA | scaling | first failing | at R × 100 users: P2 TTFT p95 | verdict | hit rate | imbalance (load) | imbalance (requests) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, f := range fleets {
		name := f.Policy()
		if f.HashBalanceFactor > 0 {
			name += fmt.Sprintf(" (balance %d)", f.HashBalanceFactor)
		}
		for _, r := range replicas {
			if r == 1 && f.Router != RouterLeastLoaded && one > 0 {
				continue // one replica: every router is the same
			}
			guess := 165 * r
			if one > 0 {
				guess = one * r
			}
			if r > 1 && f.Router == RouterLeastLoaded || f.Router == RouterRoundRobin || f.Router == RouterKubernetesService {
				guess /= 2 // these lose sessions' prefixes
			}
			step := max(5, guess/50)
			runs := map[int]fleetRun{}
			got := ceiling(guess, step, func(users int) bool {
				runs[users] = run(r, users, f)
				return runs[users].res.SLA.Pass
			})
			if r == 1 {
				one = got
			}
			first, firstAt := "every load tried fails", math.MaxInt
			for u, fr := range runs {
				if u > got && u < firstAt && got > 0 && !fr.res.SLA.Pass {
					first, firstAt = fmt.Sprintf("%d: %s", u, fr.res.SLA.First()), u
				}
			}
			at := run(r, 100*r, f)
			var p2 float64
			for _, p := range at.res.Profiles {
				if p.Name == "P2" {
					p2 = p.TTFT.P95
				}
			}
			scaling := "—"
			if one > 0 {
				scaling = fmt.Sprintf("%.2f", float64(got)/float64(r*one))
			}
			fmt.Printf("| %s | %d | %d | %s | %s | %.2f s | %s | %.1f %% | %.2f | %.2f |\n", name, r, got, scaling, first,
				p2/1000, at.res.SLA.State, 100*at.st.Fleet.HitRate, at.st.Fleet.Imbalance, at.st.Fleet.RequestImbalance)
		}
	}
}

// BenchmarkFleet8x1300 is issue 32's speed target: 8 replicas of the
// reference deployment (32 H100s), 1,300 users, a 1-minute ramp and
// warm-up, then 10 simulated minutes, per router.
func BenchmarkFleet8x1300(b *testing.B) {
	for _, f := range []Fleet{{}, {Router: RouterSessionAffinity}, {Router: RouterPrefixAware, Seed: 1},
		{Router: RouterKubernetesService, Seed: 1}} {
		b.Run(f.Policy(), func(b *testing.B) {
			d := referenceDeployment(b)
			d.GPUs, d.Fleet = 32, f
			o := Options{Deployment: d, Users: 1300, Ramp: time.Minute, Warmup: time.Minute, Duration: 10 * time.Minute, ThinkTimeScale: 1}
			src := defaultSource(b)
			sink := result.SinkFunc(func(*result.Record) error { return nil })
			var st *RunStats
			for b.Loop() {
				var err error
				if st, err = RunVirtual(context.Background(), o, src, sink); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(st.OK), "requests")
			b.ReportMetric(float64(st.Engine.Steps), "steps")
			b.ReportMetric(st.Fleet.HitRate, "hit_rate")
		})
	}
}
