package clientbench_test

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/spoc-project/spoc/loadgen/clientbench"
	"github.com/spoc-project/spoc/loadgen/testserver"
	"github.com/spoc-project/spoc/result"
)

func TestRunGoAgainstTestServer(t *testing.T) {
	srv := testserver.Start(testserver.Config{FirstTokenDelay: 10 * time.Millisecond, TokenInterval: 10 * time.Millisecond, KeepLog: true})
	defer srv.Close()
	lv, err := clientbench.RunGo(context.Background(), srv.URL, clientbench.Workload{
		Streams: 20, Warmup: 100 * time.Millisecond, Duration: 500 * time.Millisecond, PromptTokens: 20, MaxTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", lv)
	if lv.Timed == 0 || lv.Unmatched*10 > lv.Timed || lv.TokensPerSecond <= 0 || lv.ITLErrP99Ms <= 0 {
		t.Fatalf("level %+v", lv)
	}
}

func TestCompareErrors(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	em := []time.Time{t0.Add(100 * time.Millisecond), t0.Add(120 * time.Millisecond), t0.Add(140 * time.Millisecond)}
	rec := &result.Record{RequestID: "a", Scheduled: t0, Sent: t0.Add(time.Millisecond), Status: result.StatusOK,
		FirstToken: em[0].Add(500 * time.Microsecond), TokenGapsUS: []int64{23000, 17000}, OutputTokens: 3}
	lv := clientbench.Compare("x", 1, []*result.Record{rec}, []testserver.Request{{ID: "a", Emitted: em}},
		result.Window{Start: t0, End: t0.Add(time.Second)})
	if lv.TTFTErrP99Ms != 0.5 || lv.ITLErrP99Ms != 3 || lv.DispatchLagP99Ms != 1 || lv.Accurate || lv.TokensPerSecond != 3 {
		t.Fatalf("%+v", lv)
	}
	// Arrivals: first at +0.5 ms, second 23 ms later (emitted 20 ms later:
	// +3.5 ms), third 17 ms after that (+0.5 ms).
	if lv.ArrivalOffsetP01Ms != 0.5 || lv.ArrivalOffsetP50Ms != 0.5 || lv.ArrivalOffsetP99Ms != 3.5 {
		t.Fatalf("arrival offsets %+v", lv)
	}
	// The server recording a chunk after the client read it shows as a
	// negative offset.
	rec.FirstToken = em[0].Add(-2 * time.Millisecond)
	rec.TokenGapsUS = []int64{20000, 20000}
	lv = clientbench.Compare("x", 1, []*result.Record{rec}, []testserver.Request{{ID: "a", Emitted: em}},
		result.Window{Start: t0, End: t0.Add(time.Second)})
	if lv.ArrivalOffsetP01Ms != -2 || lv.ArrivalOffsetP99Ms != -2 || lv.ITLErrP99Ms != 0 {
		t.Fatalf("negative offsets %+v", lv)
	}
}

func TestCeilingsNeedEveryLowerLevelAccurate(t *testing.T) {
	lv := func(c string, n int, ok bool) *clientbench.Level {
		return &clientbench.Level{Client: c, Streams: n, Accurate: ok}
	}
	got := clientbench.Ceilings([]*clientbench.Level{
		lv("a", 1500, false), lv("a", 1000, true), lv("a", 2000, true), // 2000 passing above a failure is not the ceiling
		lv("b", 100, false), lv("b", 200, true),
		lv("c", 10, true), lv("c", 20, true),
		lv("d", 10, true), {Client: "d", Streams: 20, Accurate: true, ServerCores: 0.95}, lv("d", 30, true),
	})
	if got["a"] != 1000 || got["b"] != 0 || got["c"] != 20 || got["d"] != 10 || len(got) != 4 {
		t.Fatalf("ceilings %v, want a 1000, b 0, c 20, d 10 (server-bound at 20)", got)
	}
}

func TestParseStatCPU(t *testing.T) {
	// pid (comm with ") (" inside) state ppid ... utime=250 stime=50 ...
	stat := "4242 (spoc ) (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 100 1000 200"
	got, err := clientbench.ParseStatCPU(stat)
	if err != nil || got != 3*time.Second {
		t.Fatalf("ParseStatCPU = %v, %v; want 3s (300 ticks)", got, err)
	}
	if _, err := clientbench.ParseStatCPU("4242 (x) S 1 2"); err == nil {
		t.Fatal("short stat line accepted")
	}
}

func TestMeterCPUOwnProcess(t *testing.T) {
	if _, err := clientbench.ProcessCPU(os.Getpid()); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	m := clientbench.MeterCPU(os.Getpid(), 10*time.Millisecond, 300*time.Millisecond)
	deadline := time.Now().Add(320 * time.Millisecond)
	for time.Now().Before(deadline) { // keep one core busy through the window
	}
	// Plumbing, not timing: a busy loop must measure as some CPU (a loaded
	// machine may give it little), never more than the machine has.
	if c := m.Cores(); c <= 0.05 || c > float64(runtime.NumCPU())+0.5 {
		t.Fatalf("busy loop measured at %.2f cores", c)
	}
}

func TestServerBoundScalesWithServerCPUs(t *testing.T) {
	for _, tc := range []struct {
		cores float64
		cpus  int
		want  bool
	}{{0.85, 1, false}, {0.95, 1, true}, {0.95, 0, true}, {1.2, 4, false}, {3.7, 4, true}} {
		l := clientbench.Level{ServerCores: tc.cores, ServerCPUs: tc.cpus}
		if got := l.ServerBound(); got != tc.want {
			t.Errorf("%.2f cores of %d CPUs: server-bound %v, want %v", tc.cores, tc.cpus, got, tc.want)
		}
	}
	for list, want := range map[string]int{"0": 1, "0-3": 4, "0,2-3": 3, " 1 , 5": 2} {
		if n, err := clientbench.CountCPUs(list); err != nil || n != want {
			t.Errorf("CountCPUs(%q) = %d, %v; want %d", list, n, err, want)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "1-x"} {
		if _, err := clientbench.CountCPUs(bad); err == nil {
			t.Errorf("CountCPUs(%q) accepted", bad)
		}
	}
}
