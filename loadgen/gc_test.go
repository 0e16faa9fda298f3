package loadgen

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestApplyGC(t *testing.T) {
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC") // t.Setenv restores the original value afterwards
	t.Setenv("GOMEMLIMIT", "")
	os.Unsetenv("GOMEMLIMIT")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	limitBefore := debug.SetMemoryLimit(-1)

	r1 := applyGC(0)
	if got := debug.SetGCPercent(DefaultGCPercent); got != DefaultGCPercent {
		t.Fatalf("GC percent during a run = %d, want %d", got, DefaultGCPercent)
	}
	if budget := memoryBudget(); budget > 0 {
		if got, want := debug.SetMemoryLimit(-1), int64(float64(budget)*memoryShare); got != want {
			t.Fatalf("memory limit during a run = %d, want half of %d", got, budget)
		}
	}
	r2 := applyGC(0) // a second, overlapping run
	r1()
	if got := debug.SetGCPercent(DefaultGCPercent); got != DefaultGCPercent {
		t.Fatalf("first run's end restored the target while another run holds it: %d", got)
	}
	r2()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent after the runs = %d, want 100 restored", got)
	}
	if got := debug.SetMemoryLimit(-1); got != limitBefore {
		t.Fatalf("memory limit after the runs = %d, want %d restored", got, limitBefore)
	}

	// GOMEMLIMIT in the environment keeps the limit as it is.
	t.Setenv("GOMEMLIMIT", "1GiB")
	r3 := applyGC(0)
	if got := debug.SetMemoryLimit(-1); got != limitBefore {
		t.Fatalf("GOMEMLIMIT set: run changed the memory limit to %d", got)
	}
	r3()
	os.Unsetenv("GOMEMLIMIT")

	// An explicit GCPercent wins; a negative one leaves the setting alone.
	restore := applyGC(250)
	if got := debug.SetGCPercent(250); got != 250 {
		t.Fatalf("explicit GCPercent: got %d, want 250", got)
	}
	restore()
	applyGC(-1)()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("negative GCPercent changed the setting to %d", got)
	}

	// GOGC in the environment wins over the default.
	t.Setenv("GOGC", "100")
	applyGC(0)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC set: run changed the GC percent to %d", got)
	}
}

func TestMemoryBudgetParsing(t *testing.T) {
	meminfo := []byte("MemFree:         1000 kB\nMemTotal:       24684136 kB\nBuffers: 1 kB\n")
	if got := parseMemTotal(meminfo); got != 24684136<<10 {
		t.Errorf("parseMemTotal = %d", got)
	}
	if got := parseMemTotal([]byte("MemFree: 1 kB\n")); got != 0 {
		t.Errorf("parseMemTotal without MemTotal = %d", got)
	}
	for in, want := range map[string]int64{"4294967296\n": 4 << 30, "max\n": 0, "9223372036854771712\n": 0, "": 0, "junk": 0} {
		if got := parseCgroupLimit([]byte(in)); got != want {
			t.Errorf("parseCgroupLimit(%q) = %d, want %d", in, got, want)
		}
	}
	if _, err := os.Stat("/proc/meminfo"); err == nil && memoryBudget() <= 0 {
		t.Error("memoryBudget found nothing on a machine with /proc/meminfo")
	}
}

func TestMemoryBudgetFollowsOwnCgroup(t *testing.T) {
	write := func(root, name, content string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const meminfo = "MemTotal: 16777216 kB\n" // 16 GiB
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"v1: the limit sits on the process's own group, not the root", map[string]string{
			"proc/self/cgroup":                                     "5:cpu,cpuacct:/\n4:memory:/jobs/job7\n0::/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":           "9223372036854771712\n",
			"sys/fs/cgroup/memory/jobs/memory.limit_in_bytes":      "8589934592\n",
			"sys/fs/cgroup/memory/jobs/job7/memory.limit_in_bytes": "2147483648\n",
		}, 2 << 30},
		{"v2: a parent's memory.max binds when the leaf has none", map[string]string{
			"proc/self/cgroup":                                    "0::/system.slice/bench.service\n",
			"sys/fs/cgroup/system.slice/memory.max":               "3221225472\n",
			"sys/fs/cgroup/system.slice/bench.service/memory.max": "max\n",
		}, 3 << 30},
		{"no limits anywhere: the machine's memory", map[string]string{"proc/self/cgroup": "0::/\n"}, 16 << 30},
	} {
		root := t.TempDir()
		write(root, "proc/meminfo", meminfo)
		for name, content := range tc.files {
			write(root, name, content)
		}
		if got := memoryBudgetAt(root); got != tc.want {
			t.Errorf("%s: budget %d, want %d", tc.name, got, tc.want)
		}
	}
}
