package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/spoc-project/spoc/result"
)

func referenceDeployment(t testing.TB) Deployment {
	t.Helper()
	d, err := NewDeployment(ReferenceDeploymentSpec())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func runRecords(t testing.TB, o Options) ([]*result.Record, *RunStats) {
	t.Helper()
	var recs []*result.Record
	st, err := RunVirtual(context.Background(), o, synthSource{}, result.SinkFunc(func(r *result.Record) error {
		recs = append(recs, r)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return recs, st
}

func TestRunVirtualRecords(t *testing.T) {
	o := Options{Deployment: referenceDeployment(t), Users: 40, Ramp: 10 * time.Second, Warmup: 20 * time.Second,
		Duration: 60 * time.Second, ThinkTimeScale: 1, RunID: "t"}
	recs, st := runRecords(t, o)
	if int64(len(recs)) != st.Scheduled || st.OK+st.Errors+st.Cancelled != st.Scheduled {
		t.Fatalf("%d records, scheduled %d = ok %d + errors %d + cancelled %d", len(recs), st.Scheduled, st.OK, st.Errors, st.Cancelled)
	}
	if st.OK < 50 {
		t.Fatalf("only %d requests completed", st.OK)
	}
	measured := time.Unix(20, 0)
	var cached int
	for _, r := range recs {
		if r.Warmup != r.Scheduled.Before(measured) {
			t.Fatalf("record %s: warmup flag %v for scheduled %v", r.RequestID, r.Warmup, r.Scheduled)
		}
		if r.Status != result.StatusOK {
			if r.Status != result.StatusCancelled {
				t.Fatalf("record %s: status %s", r.RequestID, r.Status)
			}
			continue
		}
		ttft, ok := r.TTFT()
		if !ok || ttft <= 0 || r.Done.Before(r.FirstToken) {
			t.Fatalf("record %s: ttft %v done %v first %v", r.RequestID, ttft, r.Done, r.FirstToken)
		}
		if r.OutputTokens != 400 || len(r.TokenGapsUS) != r.OutputTokens-1 {
			t.Fatalf("record %s: %d output tokens, %d gaps", r.RequestID, r.OutputTokens, len(r.TokenGapsUS))
		}
		var sum int64
		for _, g := range r.TokenGapsUS {
			sum += g
		}
		if d := r.Done.Sub(r.FirstToken).Microseconds() - sum; d < -400 || d > 400 {
			t.Fatalf("record %s: gaps sum %dµs but first→done %v", r.RequestID, sum, r.Done.Sub(r.FirstToken))
		}
		if r.PromptTokens != r.PromptTokensTarget {
			t.Fatalf("record %s: prompt %d, target %d", r.RequestID, r.PromptTokens, r.PromptTokensTarget)
		}
		cached += r.CachedTokens
	}
	if cached == 0 {
		t.Error("no request reported cached tokens; shared prefixes should hit")
	}
	if len(st.Series.Samples) != 80 {
		t.Errorf("%d samples, want 80 (one per simulated second)", len(st.Series.Samples))
	}
	if len(st.Series.Samples[50].GPUs) != 4 {
		t.Errorf("sample has %d GPUs, want 4", len(st.Series.Samples[50].GPUs))
	}
}

func TestRunVirtualDeterministic(t *testing.T) {
	o := Options{Deployment: referenceDeployment(t), Users: 20, Ramp: 5 * time.Second, Duration: 40 * time.Second,
		ThinkTimeScale: 1, ErrorRate: 0.1, Seed: 3}
	enc := func() []byte {
		recs, st := runRecords(t, o)
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(recs); err != nil {
			t.Fatal(err)
		}
		if st.Errors == 0 {
			t.Error("error rate 0.1 injected no errors")
		}
		return b.Bytes()
	}
	if a, b := enc(), enc(); !bytes.Equal(a, b) {
		t.Error("two runs with the same seed differ")
	}
}

func TestRunVirtualRejectsTooLong(t *testing.T) {
	d := referenceDeployment(t)
	d.MaxModelLen = 16384 // P1 and P2 sessions outgrow it
	recs, st := runRecords(t, Options{Deployment: d, Users: 10, Duration: 30 * time.Second, ThinkTimeScale: 1})
	var rejected int
	for _, r := range recs {
		if r.HTTPStatus == 400 {
			rejected++
		}
	}
	if rejected == 0 || st.Errors != int64(rejected) {
		t.Errorf("%d rejected records, %d errors; want the long prompts rejected with 400", rejected, st.Errors)
	}
}

func TestRunVirtualCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := RunVirtual(ctx, Options{Deployment: referenceDeployment(t), Users: 1, Duration: time.Minute}, synthSource{}, result.SinkFunc(func(*result.Record) error { return nil }))
	if err == nil {
		t.Error("no error from a cancelled context")
	}
}

func TestRunVirtualDataParallelAndThrottleSeries(t *testing.T) {
	d := referenceDeployment(t)
	d.GPUs = 8 // two TP-4 replicas
	d.Throttles = []Throttle{{GPU: 5, ClockFactor: 0.6, Start: 2, End: 6}}
	_, st := runRecords(t, Options{Deployment: d, Users: 30, Ramp: 5 * time.Second, Duration: 30 * time.Second, ThinkTimeScale: 1})
	if st.Replicas != 2 {
		t.Fatalf("%d replicas, want 2", st.Replicas)
	}
	s := st.Series.Samples[3] // the interval [3 s, 4 s), users' first turns
	if len(s.GPUs) != 8 {
		t.Fatalf("%d GPUs in a sample, want 8", len(s.GPUs))
	}
	for _, g := range s.GPUs {
		want := 1980.0
		if g.GPU == 5 {
			want = 1188
		}
		if g.SMClockMHz != want {
			t.Errorf("t=4s GPU %d clock %v MHz, want %v", g.GPU, g.SMClockMHz, want)
		}
		if (g.GPU == 5) != (g.ThrottleReasons&ThrottleHWSlowdown != 0) {
			t.Errorf("GPU %d throttle reasons %#x", g.GPU, g.ThrottleReasons)
		}
		if g.SMActive <= 0 {
			t.Errorf("GPU %d idle at t=4s with 30 users starting on two replicas", g.GPU)
		}
	}
	if st.Series.Samples[7].GPUs[5].SMClockMHz != 1980 {
		t.Error("GPU 5 still throttled after its window")
	}
}
