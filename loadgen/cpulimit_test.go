package loadgen

import (
	"os"
	"path/filepath"
	"testing"
)

// The client's usable cores are its cgroup's CPU quota when one is set on
// it or an ancestor (v1 and v2), the smallest of them.
func TestCPULimitReadsTheCgroupQuota(t *testing.T) {
	write := func(root, name, body string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v1 := t.TempDir()
	write(v1, "proc/self/cgroup", "4:cpu,cpuacct:/helpers/c34\n3:memory:/x\n")
	write(v1, "sys/fs/cgroup/cpu/helpers/c34/cpu.cfs_quota_us", "25000\n")
	write(v1, "sys/fs/cgroup/cpu/helpers/c34/cpu.cfs_period_us", "100000\n")
	write(v1, "sys/fs/cgroup/cpu/helpers/cpu.cfs_quota_us", "-1\n")
	write(v1, "sys/fs/cgroup/cpu/helpers/cpu.cfs_period_us", "100000\n")
	if got := cpuLimitAt(v1); got != 0.25 {
		t.Errorf("v1: %v cores, want 0.25", got)
	}
	v2 := t.TempDir()
	write(v2, "proc/self/cgroup", "0::/a/b\n")
	write(v2, "sys/fs/cgroup/a/b/cpu.max", "max 100000\n")
	write(v2, "sys/fs/cgroup/a/cpu.max", "150000 100000\n")
	if got := cpuLimitAt(v2); got != 1.5 {
		t.Errorf("v2: %v cores, want 1.5", got)
	}
	if got := cpuLimitAt(t.TempDir()); got != 0 {
		t.Errorf("no cgroup file: %v cores, want 0", got)
	}
}
