package nsys

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/trace"
)

func approx(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("%s = %.15g, want %.15g", what, got, want)
	}
}

func analyze(t *testing.T, p *trace.Profile) *trace.Breakdown {
	t.Helper()
	b, err := trace.Analyze(p, trace.DefaultRules(), trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadSQLiteShares checks the whole-trace breakdown of the gpt-oss fixture
// against values computed by hand from its geometry (fixture_test.go):
//
//	per layer, healthy GPU: elementwise 2+1+2, gemm 6+4+1, kv 1, attention 20,
//	  communication (3+4)+(5+4), routing 1+1, moe gemm 12+8  = 75 µs (straggler 67)
//	per step: 2 layers + LM head 10 + argmax 2 + unknown 1 + memcpy 0.5 + memset 0.5
//	  = 164 µs (straggler 148); 3 steps: 492 µs per healthy GPU, 444 µs on GPU 2
//	all GPUs: 3·492 + 444 = 1920 µs.
func TestReadSQLiteShares(t *testing.T) {
	p, err := ReadSQLite(context.Background(), gptOSSFixture(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := analyze(t, p)
	if b.KernelTimeNS != 1_920_000 {
		t.Fatalf("kernel time %d, want 1920000", b.KernelTimeNS)
	}
	want := map[trace.Category]int64{
		trace.Attention:     480_000, // 4 GPUs · 3 steps · 2 layers · 20 µs
		trace.MoEGEMM:       480_000, // 4·3·2·20
		trace.GEMM:          384_000, // 4·3·(2·11 + 10)
		trace.Communication: 336_000, // 3 GPUs · 3·2·16 + 3·2·8
		trace.Elementwise:   120_000, // 4·3·2·5
		trace.MoERouting:    48_000,  // 4·3·2·2
		trace.KVCache:       24_000,  // 4·3·2·1
		trace.Sampling:      24_000,  // 4·3·2
		trace.Memory:        12_000,  // 4·3·1
		trace.Other:         12_000,  // 4·3·1
	}
	shares := map[trace.Category]float64{
		trace.Attention: 0.25, trace.MoEGEMM: 0.25, trace.GEMM: 0.2, trace.Communication: 0.175,
		trace.Elementwise: 0.0625, trace.MoERouting: 0.025, trace.KVCache: 0.0125, trace.Sampling: 0.0125,
		trace.Memory: 0.00625, trace.Other: 0.00625,
	}
	for _, c := range b.Categories {
		if c.TimeNS != want[c.Name] {
			t.Errorf("%s time %d, want %d", c.Name, c.TimeNS, want[c.Name])
		}
		approx(t, string(c.Name)+" share", c.Share, shares[c.Name])
	}

	if len(b.GPUs) != 4 {
		t.Fatalf("%d GPUs, want 4", len(b.GPUs))
	}
	// Window: first kernel at t0, last end on a healthy GPU in step 2 at
	// t0 + 400 + 164 + 32 gaps = t0 + 596 µs.
	if b.Window.StartNS != fixtureT0 || b.Window.EndNS != fixtureT0+596_000 {
		t.Errorf("window %+v, want [%d, %d)", b.Window, fixtureT0, fixtureT0+596_000)
	}
	for _, g := range b.GPUs {
		if g.Name != "NVIDIA H100 80GB HBM3" {
			t.Errorf("GPU %d name %q", g.Device, g.Name)
		}
		total, busy := int64(492_000), int64(492_000)
		if g.Device == fixtureStraggler {
			total, busy = 444_000, 444_000
		}
		if g.Device == 0 {
			busy -= 3 * 500 // the memset overlaps the LM head
		}
		if g.KernelTimeNS != total || g.BusyNS != busy {
			t.Errorf("GPU %d kernel time %d busy %d, want %d and %d", g.Device, g.KernelTimeNS, g.BusyNS, total, busy)
		}
		approx(t, "idle fraction", g.IdleFraction, 1-float64(busy)/596_000)
		comm := 96_000.0
		if g.Device == fixtureStraggler {
			comm = 48_000
		}
		approx(t, "communication share", g.Categories[5].Share, comm/float64(total))
	}

	if len(b.UnknownKernels) != 1 || b.UnknownKernels[0].Name != "custom_lookahead_kernel" ||
		b.UnknownKernels[0].TimeNS != 12_000 || b.UnknownKernels[0].Count != 12 {
		t.Errorf("unknown kernels %+v", b.UnknownKernels)
	}
	if im := b.Imbalance; im == nil || im.Straggler == nil || *im.Straggler != fixtureStraggler {
		t.Errorf("imbalance %+v, want straggler GPU %d", b.Imbalance, fixtureStraggler)
	}
	moe := b.Category(trace.MoEGEMM)
	if len(moe.TopKernels) != 2 || moe.TopKernels[0].Name != kGateUp.demangled {
		t.Errorf("moe_gemm top kernels %+v", moe.TopKernels)
	}
	approx(t, "gate_up share of moe_gemm", moe.TopKernels[0].Share, 0.6)

	// Graph node kernels: 28 layer kernels per step and GPU.
	var graph int64
	for _, d := range p.Devices {
		for _, k := range d.Kernels {
			graph += k.GraphCount
		}
	}
	if graph != 4*3*28 {
		t.Errorf("graph node kernels %d, want %d", graph, 4*3*28)
	}
	if b.GPUs[1].GraphKernels != 3*28 {
		t.Errorf("GPU 1 graph kernels %d, want %d", b.GPUs[1].GraphKernels, 3*28)
	}
}

// TestReadSQLiteMatchesAggregate cross-checks the SQL aggregation and busy-time
// union against the in-memory trace.Aggregate on the same intervals.
func TestReadSQLiteMatchesAggregate(t *testing.T) {
	path := gptOSSFixture(t)
	for _, w := range []trace.Window{{}, {StartNS: fixtureT0 + 150_000, EndNS: fixtureT0 + 420_000}, {StartNS: fixtureT0 + 1234}} {
		got, err := ReadSQLite(context.Background(), path, Options{Window: w})
		if err != nil {
			t.Fatal(err)
		}
		want := trace.Aggregate(path, intervals(gptOSSTimeline()), w)
		for i := range got.Devices {
			got.Devices[i].Name = ""
			for j := range got.Devices[i].Kernels {
				got.Devices[i].Kernels[j].GraphCount = 0
			}
		}
		if !reflect.DeepEqual(got.Devices, want.Devices) {
			t.Errorf("window %+v: SQL and in-memory aggregation differ:\n got %+v\nwant %+v", w, got.Devices, want.Devices)
		}
		if got.Window != want.Window {
			t.Errorf("window %+v: got %+v, want %+v", w, got.Window, want.Window)
		}
	}
}

// TestReadSQLiteUnsortedRows stores the activities in shuffled order, so
// the streamed busy-time union must notice and fall back to SQL.
func TestReadSQLiteUnsortedRows(t *testing.T) {
	acts := gptOSSTimeline()
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(acts), func(i, j int) { acts[i], acts[j] = acts[j], acts[i] })
	path := filepath.Join(t.TempDir(), "shuffled.sqlite")
	writeFixture(t, path, acts, fixtureNVTX, "3.15.1")
	for _, w := range []trace.Window{{}, {StartNS: fixtureT0 + 150_000, EndNS: fixtureT0 + 420_000}} {
		got, err := ReadSQLite(context.Background(), path, Options{Window: w})
		if err != nil {
			t.Fatal(err)
		}
		want := trace.Aggregate(path, intervals(acts), w)
		for i, d := range got.Devices {
			if d.BusyNS != want.Devices[i].BusyNS {
				t.Errorf("window %+v GPU %d: busy %d, want %d", w, d.Device, d.BusyNS, want.Devices[i].BusyNS)
			}
		}
	}
}

func TestReadSQLiteTimeWindowClips(t *testing.T) {
	// [t0+0.5 µs, t0+5 µs): the first RMSNorm [t0, t0+2) keeps 1.5 µs, the QKV
	// GEMM [t0+3, t0+9) keeps 2 µs, on each of the 4 GPUs.
	p, err := ReadSQLite(context.Background(), gptOSSFixture(t), Options{Window: trace.Window{StartNS: fixtureT0 + 500, EndNS: fixtureT0 + 5000}})
	if err != nil {
		t.Fatal(err)
	}
	b := analyze(t, p)
	if got := b.Category(trace.Elementwise).TimeNS; got != 6000 {
		t.Errorf("elementwise %d, want 6000", got)
	}
	if got := b.Category(trace.GEMM).TimeNS; got != 8000 {
		t.Errorf("gemm %d, want 8000", got)
	}
	approx(t, "gemm share", b.Category(trace.GEMM).Share, 8.0/14)
	approx(t, "idle", b.GPUs[0].IdleFraction, 1-3500.0/4500)
}

func TestReadSQLiteNVTXWindow(t *testing.T) {
	p, err := ReadSQLite(context.Background(), gptOSSFixture(t), Options{NVTX: "decode_step"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Window.StartNS != fixtureT0+200_000 || p.Window.EndNS != fixtureT0+597_000 || p.Window.NVTX != "decode_step" {
		t.Fatalf("window %+v", p.Window)
	}
	b := analyze(t, p)
	// Steps 1 and 2 only: two thirds of the whole-trace times, same shares.
	if b.KernelTimeNS != 1_280_000 {
		t.Errorf("kernel time %d, want 1280000", b.KernelTimeNS)
	}
	approx(t, "attention share", b.Category(trace.Attention).Share, 0.25)
	approx(t, "GPU 1 idle", b.GPUs[1].IdleFraction, 1-328_000.0/397_000)

	_, err = ReadSQLite(context.Background(), gptOSSFixture(t), Options{NVTX: "prefill"})
	if err == nil || !strings.Contains(err.Error(), `"decode_step"`) || !strings.Contains(err.Error(), `"run"`) {
		t.Errorf("missing NVTX range: error %v should list the ranges present", err)
	}
}

func TestReadSQLiteErrors(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.sqlite")
	good, err := os.ReadFile(gptOSSFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good[:4096]...)
	for i := 100; i < len(bad); i++ {
		bad[i] = 0xA5
	}
	if err := os.WriteFile(corrupt, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "report.nsys-rep")
	if err := os.WriteFile(text, []byte("not sqlite at all, a binary nsys report"), 0o644); err != nil {
		t.Fatal(err)
	}
	newSchema := filepath.Join(dir, "v4.sqlite")
	writeFixture(t, newSchema, gptOSSTimeline()[:3], nil, "4.0.0")
	plain := filepath.Join(dir, "plain.sqlite")
	writeFixture(t, plain, nil, nil, "3.15.1")
	if err := execSQL(plain, `DROP TABLE META_DATA_EXPORT`); err != nil {
		t.Fatal(err)
	}
	noKernels := filepath.Join(dir, "nokernels.sqlite")
	writeFixture(t, noKernels, nil, nil, "3.15.1")
	if err := execSQL(noKernels, `DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		opt        Options
		want       string
		sentinel   error
	}{
		{"missing file", filepath.Join(dir, "nope.sqlite"), Options{}, "no such file", nil},
		{"nsys-rep", text, Options{}, "nsys export --type sqlite", ErrNotExport},
		{"corrupt", corrupt, Options{}, "corrupt.sqlite", nil},
		{"schema version", newSchema, Options{}, "unsupported export schema version 4.0.0", nil},
		{"no meta table", plain, Options{}, "META_DATA_EXPORT is missing", ErrNotExport},
		{"no kernel table", noKernels, Options{}, "--trace=cuda", nil},
		{"window and nvtx", plain, Options{NVTX: "x", Window: trace.Window{StartNS: 1}}, "exclude each other", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadSQLite(context.Background(), tc.path, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
			if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
				t.Errorf("error %v is not %v", err, tc.sentinel)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.sqlite")); !os.IsNotExist(err) {
		t.Error("reading a missing file created it")
	}
}

func TestReadSQLiteWholeGraphWarning(t *testing.T) {
	path := gptOSSFixture(t)
	if err := execSQL(path, `CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER NOT NULL, end INTEGER NOT NULL,
		deviceId INTEGER NOT NULL, contextId INTEGER, streamId INTEGER, correlationId INTEGER, graphId INTEGER);
		INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (2000000, 2100000, 1, 1, 7, 1, 5)`); err != nil {
		t.Fatal(err)
	}
	p, err := ReadSQLite(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) == 0 || !strings.Contains(p.Warnings[0], "--cuda-graph-trace=node") {
		t.Errorf("warnings %q", p.Warnings)
	}
	b := analyze(t, p)
	if b.UnknownKernels[0].Name != wholeGraphName || b.UnknownKernels[0].TimeNS != 100_000 {
		t.Errorf("whole-graph time not reported as unknown: %+v", b.UnknownKernels)
	}
}

func execSQL(path, q string) error {
	db, err := openWritable(path)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(q)
	return err
}
