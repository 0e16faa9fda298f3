package workload_test

import (
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/spoc-project/spoc/workload"
)

// ksExp is the one-sample Kolmogorov–Smirnov statistic of xs against the
// unit exponential distribution.
func ksExp(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := float64(len(s))
	d := 0.0
	for i, x := range s {
		f := 1 - math.Exp(-x)
		d = math.Max(d, math.Max(float64(i+1)/n-f, f-float64(i)/n))
	}
	return d
}

// ksCritical01 is the KS statistic's 1 % critical value for n samples
// (the asymptotic 1.628/√n; n is in the thousands here).
func ksCritical01(n int) float64 { return 1.628 / math.Sqrt(float64(n)) }

func arrivalTimes(t *testing.T, a workload.Arrivals, end float64) []float64 {
	t.Helper()
	ts, err := a.Times(nil, end)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// A constant rate is a homogeneous Poisson process: inter-arrival times
// times the rate are unit exponentials.
func TestPoissonArrivalsConstantRateKS(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		a := workload.Arrivals{Rate: []workload.RatePoint{{At: 0, PerSecond: 2.5}}, Seed: seed}
		ts := arrivalTimes(t, a, 4000)
		gaps := make([]float64, len(ts))
		prev := 0.0
		for i, x := range ts {
			gaps[i] = (x - prev) * 2.5
			prev = x
		}
		if d, c := ksExp(gaps), ksCritical01(len(gaps)); d > c {
			t.Errorf("seed %d: KS D = %.4f over %d gaps exceeds the 1%% critical value %.4f", seed, d, len(gaps), c)
		}
		// the mean count is the rate × time, within 4 standard deviations
		if want := 2.5 * 4000; math.Abs(float64(len(ts))-want) > 4*math.Sqrt(want) {
			t.Errorf("seed %d: %d arrivals in 4000 s at 2.5/s, want %v ± %v", seed, len(ts), want, 4*math.Sqrt(want))
		}
	}
}

// dayCurve rises from 0.2 to 3 sessions a second, holds, falls and
// stops: every segment kind (rising, flat, falling, zero tail).
var dayCurve = []workload.RatePoint{
	{At: 0, PerSecond: 0.2}, {At: 600 * time.Second, PerSecond: 3}, {At: 1800 * time.Second, PerSecond: 3},
	{At: 2400 * time.Second, PerSecond: 0.5}, {At: 3000 * time.Second, PerSecond: 0},
}

// A time-varying rate: by the time-rescaling theorem the increments of the
// integrated rate between arrivals are unit exponentials, and the counts
// per minute follow the curve (Pearson's χ² against the expected counts).
func TestPoissonArrivalsVaryingRate(t *testing.T) {
	for _, compression := range []float64{1, 4} {
		a := workload.Arrivals{Rate: dayCurve, Seed: 7, Compression: compression}
		end := 3600 / compression
		ts := arrivalTimes(t, a, end)
		incs := make([]float64, len(ts))
		prev := 0.0
		for i, x := range ts {
			incs[i] = a.Expected(prev, x)
			prev = x
			if i > 0 && x <= ts[i-1] {
				t.Fatalf("arrivals not increasing at %d: %v after %v", i, x, ts[i-1])
			}
		}
		if d, c := ksExp(incs), ksCritical01(len(incs)); d > c {
			t.Errorf("compression %v: KS D = %.4f over %d arrivals exceeds %.4f", compression, d, len(incs), c)
		}
		if last := ts[len(ts)-1]; last >= 3000/compression {
			t.Errorf("compression %v: an arrival at %v, after the rate fell to 0 at %v", compression, last, 3000/compression)
		}
		bin := 60 / compression
		bins := int(3000 / 60)
		counts := make([]float64, bins)
		for _, x := range ts {
			counts[int(x/bin)]++
		}
		chi2, dof := 0.0, 0
		for i, n := range counts {
			mu := a.Expected(float64(i)*bin, float64(i+1)*bin)
			chi2 += (n - mu) * (n - mu) / mu
			dof++
		}
		if q := (distuv.ChiSquared{K: float64(dof)}).Quantile(0.999); chi2 > q {
			t.Errorf("compression %v: χ² = %.1f over %d minute bins exceeds the 0.1%% critical value %.1f", compression, chi2, dof, q)
		}
		// compression shrinks the clock and raises the rate by the factor
		if got, want := a.RateAt(900/compression), 3*compression; math.Abs(got-want) > 1e-9 {
			t.Errorf("compression %v: rate at the plateau %v, want %v", compression, got, want)
		}
	}
}

// The counting test above fails a wrong process: the curve's arrivals
// judged against a flat rate of the same mean are rejected.
func TestPoissonArrivalsTestRejectsWrongRate(t *testing.T) {
	a := workload.Arrivals{Rate: dayCurve, Seed: 7}
	ts := arrivalTimes(t, a, 3600)
	flat := a.Expected(0, 3000) / 3000
	incs := make([]float64, len(ts))
	prev := 0.0
	for i, x := range ts {
		incs[i] = (x - prev) * flat
		prev = x
	}
	if d, c := ksExp(incs), ksCritical01(len(incs)); d <= c {
		t.Fatalf("KS D = %.4f did not reject a flat rate (critical %.4f): the test cannot fail", d, c)
	}
}

func TestArrivalsSameSeedSameTimes(t *testing.T) {
	a := workload.Arrivals{Rate: dayCurve, Seed: 11}
	x, y := arrivalTimes(t, a, 3600), arrivalTimes(t, a, 3600)
	if len(x) != len(y) {
		t.Fatalf("%d vs %d arrivals", len(x), len(y))
	}
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("arrival %d: %v vs %v", i, x[i], y[i])
		}
	}
	a.Seed = 12
	if z := arrivalTimes(t, a, 3600); len(z) > 0 && z[0] == x[0] {
		t.Fatal("another seed gave the same first arrival")
	}
}

func TestArrivalsValidate(t *testing.T) {
	for _, tc := range []struct {
		a    workload.Arrivals
		want string
	}{
		{workload.Arrivals{}, "need a rate curve"},
		{workload.Arrivals{Trace: true, Rate: dayCurve}, "not both"},
		{workload.Arrivals{Rate: []workload.RatePoint{{At: time.Second, PerSecond: 1}}}, "point 0 must be at 0"},
		{workload.Arrivals{Rate: []workload.RatePoint{{At: 0, PerSecond: 1}, {At: 0, PerSecond: 2}}}, "is not after point 0"},
		{workload.Arrivals{Rate: []workload.RatePoint{{At: 0, PerSecond: -1}}}, "non-negative"},
		{workload.Arrivals{Rate: dayCurve, Compression: -2}, "compression"},
	} {
		err := tc.a.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to say %q", tc.a, err, tc.want)
		}
	}
}

// An open-loop schedule starts session k at arrival k, runs its turns
// closed-loop and stops the user after the session; the meter measures
// how many were in progress.
func TestOpenLoopSchedule(t *testing.T) {
	a := &workload.Arrivals{Rate: []workload.RatePoint{{At: 0, PerSecond: 0.5}}, Seed: 3}
	src := turnsSource{Turns: 3, Think: time.Second}
	s := newSchedule(t, src, workload.ScheduleOptions{Warmup: 10 * time.Second, Duration: 200 * time.Second, ThinkTimeScale: 1, Arrivals: a, Users: 99, Ramp: time.Hour})
	want := arrivalTimes(t, *a, 210)
	if !s.OpenLoop() || s.Users() != len(want) {
		t.Fatalf("open loop %v with %d users, want %d arrivals", s.OpenLoop(), s.Users(), len(want))
	}
	const service = 2.0 // every reply takes 2 s
	for u := range s.Users() {
		if got := s.Start(u); got != want[u] {
			t.Fatalf("user %d starts at %v, want arrival %v", u, got, want[u])
		}
		cur := s.User(u)
		turns := 0
		for {
			st, ok, err := cur.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if st.Session != 0 {
				t.Fatalf("user %d ran session %d: an open-loop user runs one", u, st.Session)
			}
			if turns == 0 && (st.At != want[u] || !st.NewSession) {
				t.Fatalf("user %d's first turn at %v (new %v), want %v", u, st.At, st.NewSession, want[u])
			}
			turns++
			cur.Done(st.At+service, true)
		}
		if turns != 3 && want[u]+3*service+1+2 < 210 {
			t.Fatalf("user %d sent %d turns, want the session's 3", u, turns)
		}
	}
	// each session lasts 3 replies and 2 think times: 6 + 1 + 2 = 9 s, at
	// 0.5 arrivals a second that is 4.5 in progress on average (Little)
	st := s.Sessions()
	if st == nil || st.Arrived != len(want) {
		t.Fatalf("sessions %+v, want %d arrived", st, len(want))
	}
	if math.Abs(st.MeanActive-4.5) > 1.2 {
		t.Errorf("mean sessions in progress %.2f, want about 4.5 (Little's law)", st.MeanActive)
	}
	if st.PeakActive < 5 {
		t.Errorf("peak %d sessions in progress, want at least the mean", st.PeakActive)
	}
}

// A failed turn ends an open-loop session: its user stops.
func TestOpenLoopFailedTurnEndsSession(t *testing.T) {
	a := &workload.Arrivals{Rate: []workload.RatePoint{{At: 0, PerSecond: 1}}, Seed: 1}
	s := newSchedule(t, turnsSource{Turns: 4, Think: time.Second}, workload.ScheduleOptions{Duration: time.Minute, ThinkTimeScale: 1, Arrivals: a})
	cur := s.User(0)
	st, ok, err := cur.Next()
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	cur.Done(st.At+1, false)
	if _, ok, _ := cur.Next(); ok {
		t.Fatal("a user sent again after its open-loop session failed")
	}
}

// traceSource is a trace of sessions with recorded start times.
type traceSource struct{ starts []time.Duration }

func (s traceSource) Len() int { return len(s.starts) }
func (s traceSource) Session(user, n int) (*workload.Script, error) {
	return &workload.Script{User: user, Profile: "P0", Start: s.starts[user%len(s.starts)],
		Turns: []workload.Turn{{Index: 0, ThinkTime: time.Second}, {Index: 1}}}, nil
}

func TestTraceArrivalsCompressed(t *testing.T) {
	src := traceSource{starts: []time.Duration{0, 10 * time.Second, 30 * time.Second, 90 * time.Second}}
	a := &workload.Arrivals{Trace: true, Compression: 10}
	s := newSchedule(t, src, workload.ScheduleOptions{Duration: 8 * time.Second, ThinkTimeScale: 1, Arrivals: a})
	for u, want := range []float64{0, 1, 3, 9} {
		if got := s.Start(u); math.Abs(got-want) > 1e-12 {
			t.Errorf("session %d starts at %v, want %v (recorded / 10)", u, got, want)
		}
	}
	// compression shrinks arrivals, never think times
	cur := s.User(1)
	st, _, _ := cur.Next()
	cur.Done(st.At+0.5, true)
	if due, _ := cur.Due(); math.Abs(due-(1+0.5+1)) > 1e-12 {
		t.Errorf("second turn due at %v, want 2.5: the think time is not compressed", due)
	}
	// the session at 9 s is after the window: never started
	if late := s.User(3); func() bool { _, ok := late.Due(); return ok }() {
		t.Error("a session recorded after the window's end starts")
	}
	if _, err := workload.NewSchedule(traceSource{starts: []time.Duration{0, 0}}, workload.ScheduleOptions{Duration: time.Second, Arrivals: a}); err == nil || !strings.Contains(err.Error(), "no timestamps") {
		t.Errorf("a trace without timestamps: %v", err)
	}
	if _, err := workload.NewSchedule(turnsSource{Turns: 1}, workload.ScheduleOptions{Duration: time.Second, Arrivals: a}); err == nil || !strings.Contains(err.Error(), "imported trace") {
		t.Errorf("trace arrivals from generated sessions: %v", err)
	}
}
