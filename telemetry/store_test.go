package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestStoreBoundsPointsAndKeepsSpan(t *testing.T) {
	st := NewStore(StoreOptions{MaxPoints: 8})
	const n = 100
	for i := 0; i < n; i++ {
		st.Add("vllm", t0.Add(time.Duration(i)*time.Second), []Sample{{Name: VLLMPromptTokens, Value: float64(10 * i)}})
	}
	s := st.Series()
	if len(s) != 1 {
		t.Fatalf("series = %d", len(s))
	}
	p := s[0].Points
	if len(p) > 9 { // MaxPoints plus the latest arrival
		t.Errorf("kept %d points, bound is 8 (+1 latest)", len(p))
	}
	if !p[0].T.Equal(t0) || p[0].V != 0 {
		t.Errorf("first point %+v, want the run's start", p[0])
	}
	last := p[len(p)-1]
	if !last.T.Equal(t0.Add((n-1)*time.Second)) || last.V != 10*(n-1) {
		t.Errorf("last point %+v, want the latest arrival", last)
	}
	for i := 1; i < len(p); i++ {
		if !p[i].T.After(p[i-1].T) {
			t.Fatalf("points out of order at %d: %+v", i, p)
		}
	}
	// Counter increase over the whole run stays exact after thinning.
	sig := st.Window(t0, t0.Add(n*time.Second), DeriveOptions{})
	if sig.Engine.PromptTokens != 10*(n-1) {
		t.Errorf("prompt tokens = %v, want %v", sig.Engine.PromptTokens, 10*(n-1))
	}
}

func TestStoreBoundsSeries(t *testing.T) {
	st := NewStore(StoreOptions{MaxSeries: 3})
	var samples []Sample
	for i := 0; i < 5; i++ {
		samples = append(samples, Sample{Name: VLLMRunning, Labels: map[string]string{"engine": string(rune('0' + i))}, Value: 1})
	}
	st.Add("vllm", t0, samples)
	if n := len(st.Series()); n != 3 {
		t.Errorf("series = %d, want 3", n)
	}
	if d, _ := st.Dropped(); d != 2 {
		t.Errorf("dropped = %d, want 2", d)
	}
}

func TestStoreIgnoresDuplicatesAndUnknownNames(t *testing.T) {
	st := NewStore(StoreOptions{})
	st.Add("a", t0, []Sample{{Name: VLLMRunning, Value: 1}, {Name: "unknown_metric", Value: 2}})
	st.Add("a", t0, []Sample{{Name: VLLMRunning, Value: 5}})
	st.Add("a", t0.Add(-time.Second), []Sample{{Name: VLLMRunning, Value: 6}})
	s := st.Series()
	if len(s) != 1 || len(s[0].Points) != 1 || s[0].Points[0].V != 1 {
		t.Errorf("series = %+v, want one point of value 1", s)
	}
}

func TestCounterResetIsCountedFromZero(t *testing.T) {
	st := NewStore(StoreOptions{})
	for i, v := range []float64{100, 150, 20, 50} { // engine restarted after 150
		st.Add("vllm", t0.Add(time.Duration(i)*time.Second), []Sample{{Name: VLLMPreemptions, Value: v}})
	}
	got := st.Window(t0, t0.Add(3*time.Second), DeriveOptions{}).Engine.Preemptions
	if got != 50+20+30 {
		t.Errorf("preemptions = %v, want 100", got)
	}
}

func TestJSONLRoundTrip(t *testing.T) {
	exp := newFakeExporter()
	exp.throttleGPU, exp.throttleFrom, exp.throttleTo = 1, 2, 3
	var buf bytes.Buffer
	c := collect(t, exp, Options{JSONL: &buf}, 6)
	// A failed scrape is a line too.
	c.store.AddScrape(Scrape{Time: t0.Add(6 * time.Second), Target: "vllm", Error: "boom"})
	if err := NewJSONLWriter(&buf).Write(&Scrape{Time: t0.Add(6 * time.Second), Target: "vllm", Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	st, err := ReadJSONL(&buf, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := c.Window(t0, t0.Add(6*time.Second))
	got := st.Window(t0, t0.Add(6*time.Second), DeriveOptions{})
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if !bytes.Equal(wj, gj) {
		t.Errorf("signals from telemetry.jsonl differ from the live collector's:\n got %s\nwant %s", gj, wj)
	}
	if len(got.Stragglers) != 1 || len(got.Gaps) != 1 {
		t.Errorf("stragglers %d gaps %d, want 1 and 1", len(got.Stragglers), len(got.Gaps))
	}
}

func TestReadJSONLErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"time":"2026-11-30T04:00:00Z","target":"a"}` + "\n{not json\n", "line 2"},
		{`{"time":"2026-11-30T04:00:00Z","target":"a","extra":1}`, "line 1: json: unknown field"},
		{`{"time":"2026-11-30T04:00:00Z"}`, "line 1: missing target"},
		{"\n\n" + `{"target":"a"}`, "line 3: missing time"},
	} {
		_, err := ReadJSONL(strings.NewReader(tc.in), StoreOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadJSONL(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestCollectorKeepsScrapingWhenJSONLFails(t *testing.T) {
	exp := newFakeExporter()
	c := collect(t, exp, Options{JSONL: &failWriter{n: 3}}, 4)
	if err := c.WriteErr(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteErr = %v", err)
	}
	if got := c.Window(t0, t0.Add(3*time.Second)).Engine.PromptTokens; got != 12000 {
		t.Errorf("prompt tokens = %v after JSONL failure, want 12000", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Run(ctx); err == nil {
		t.Error("Run should report the JSONL write error")
	}
}

func TestWindowChartsAndGaps(t *testing.T) {
	c := collect(t, newFakeExporter(), Options{}, 5)
	s := c.Window(t0, t0.Add(4*time.Second))
	got := map[string]int{}
	for _, ch := range s.Charts {
		got[ch.Signal]++
	}
	want := map[string]int{"running": 1, "waiting": 1, "kv_cache_usage": 1, "prefix_cache_hit_rate": 1,
		"prompt_tokens_per_second": 1, "generation_tokens_per_second": 1, "preemptions": 1,
		"sm_active": 4, "dram_active": 4, "tensor_active": 4, "sm_clock": 4, "temperature": 4, "power": 4}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("charts = %v\nwant %v", got, want)
	}
	for _, ch := range s.Charts {
		if ch.Signal == "prompt_tokens_per_second" {
			for _, p := range ch.Points {
				if p.V != 4000 {
					t.Errorf("prompt rate point %+v, want 4000/s", p)
				}
			}
		}
		if ch.Signal == "prefix_cache_hit_rate" && len(ch.Points) != 4 {
			t.Errorf("hit-rate chart has %d points, want 4", len(ch.Points))
		}
	}
}

// FuzzReadJSONL feeds arbitrary telemetry.jsonl text to the reader: an error
// or a store whose window derives without panicking.
func FuzzReadJSONL(f *testing.F) {
	f.Add(`{"time":"2026-11-30T04:00:00Z","target":"a","samples":[{"name":"vllm:num_requests_running","value":3}]}` + "\n")
	f.Add(`{"time":"2026-11-30T04:00:01Z","target":"d","samples":[{"name":"DCGM_FI_DEV_SM_CLOCK","labels":{"gpu":"0"},"value":1980}]}`)
	f.Add(`{"time":"2026-11-30T04:00:02Z","target":"a","error":"boom"}`)
	f.Fuzz(func(t *testing.T, in string) {
		st, err := ReadJSONL(strings.NewReader(in), StoreOptions{MaxPoints: 4, MaxSeries: 16})
		if err != nil {
			return
		}
		_ = st.Window(t0.Add(-time.Hour), t0.Add(time.Hour), DeriveOptions{})
	})
}

func TestChartsAreDownsampled(t *testing.T) {
	st := NewStore(StoreOptions{})
	for i := 0; i < 100; i++ {
		st.Add("vllm", t0.Add(time.Duration(i)*time.Second), []Sample{{Name: VLLMRunning, Value: float64(i % 2)}})
	}
	s := st.Window(t0, t0.Add(100*time.Second), DeriveOptions{MaxChartPoints: 10})
	if len(s.Charts) != 1 || len(s.Charts[0].Points) != 10 {
		t.Fatalf("charts %+v", s.Charts)
	}
	for _, p := range s.Charts[0].Points {
		if p.V != 0.5 {
			t.Errorf("bucket mean %v, want 0.5", p.V)
		}
	}
	if last := s.Charts[0].Points[9].T; !last.Equal(t0.Add(99 * time.Second)) {
		t.Errorf("last bucket at %s, want the last sample's time", last)
	}
	if s.Engine.Running.Samples != 100 {
		t.Errorf("aggregates must use every sample, got %d", s.Engine.Running.Samples)
	}
}
