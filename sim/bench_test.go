package sim

import (
	"context"
	"testing"
	"time"

	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/workload"
)

// BenchmarkRunVirtualReference is the target: 300 users, 10 simulated
// minutes (after a 1-minute ramp and warm-up), gpt-oss-120b on 4× H100.
func BenchmarkRunVirtualReference(b *testing.B) {
	o := Options{Deployment: referenceDeployment(b), Users: 300, Ramp: time.Minute, Warmup: time.Minute,
		Duration: 10 * time.Minute, ThinkTimeScale: 1}
	sink := result.SinkFunc(func(*result.Record) error { return nil })
	var st *RunStats
	for b.Loop() {
		var err error
		if st, err = RunVirtual(context.Background(), o, synthSource{}, sink); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Engine.Steps), "steps")
	b.ReportMetric(float64(st.OK), "requests")
	b.ReportMetric(st.MeanKVUsage, "kv_usage")
}

func BenchmarkEngineStep(b *testing.B) {
	d := referenceDeployment(b)
	c, err := d.Build()
	if err != nil {
		b.Fatal(err)
	}
	e := c.engines[0]
	for i := range 200 {
		r := NewRequest()
		r.ID, r.Tag, r.PromptTokens, r.OutputTokens = uint64(i), i, 2000, 1<<20
		h := NewBlockHasher(16)
		h.AppendRun(uint64(i)+1, 0, 2000)
		r.BlockHashes = h.Hashes()
		e.maxModelLen = 1 << 30
		if err := e.Add(r); err != nil {
			b.Fatal(err)
		}
	}
	now := 0.0
	b.ReportAllocs()
	for b.Loop() {
		d, ok := e.Schedule(now)
		if !ok {
			b.Fatal("nothing scheduled")
		}
		now += d
		e.Complete(now)
	}
}

// BenchmarkRunVirtualDefaultWorkload is the same target on the workload
// package's default (reference) workload.
func BenchmarkRunVirtualDefaultWorkload(b *testing.B) {
	src, err := workload.New(workload.DefaultSpec(), ReferenceDeploymentSpec().MaxModelLen)
	if err != nil {
		b.Fatal(err)
	}
	o := Options{Deployment: referenceDeployment(b), Users: 300, Ramp: time.Minute, Warmup: time.Minute,
		Duration: 10 * time.Minute, ThinkTimeScale: 1, SeriesInterval: time.Second}
	sink := result.SinkFunc(func(*result.Record) error { return nil })
	var st *RunStats
	b.ReportAllocs()
	for b.Loop() {
		if st, err = RunVirtual(context.Background(), o, src, sink); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Engine.Steps), "steps")
	b.ReportMetric(float64(st.OK), "requests")
}
