package loadgen

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// cpuLimit is the CPU quota, in cores, of this process's cgroup and its
// ancestors (the smallest), or 0 when none is set or readable. A client
// throttled by a quota below its GOMAXPROCS would otherwise count its CPU
// against cores it cannot use, and never look saturated.
func cpuLimit() float64 { return cpuLimitAt("/") }

// cpuLimitAt reads the limits under root (a test's fake filesystem): cgroup
// v2 cpu.max ("QUOTA PERIOD" or "max PERIOD"), v1 cpu.cfs_quota_us over
// cpu.cfs_period_us (-1: none).
func cpuLimitAt(root string) float64 {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0
	}
	best := 0.0
	take := func(cores float64) {
		if cores > 0 && (best == 0 || cores < best) {
			best = cores
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), ":", 3) // hierarchy-ID:controllers:path
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			continue
		}
		v2 := f[0] == "0" && f[1] == ""
		if !v2 && !slices.Contains(strings.Split(f[1], ","), "cpu") {
			continue
		}
		for p := path.Clean(f[2]); ; p = path.Dir(p) {
			if v2 {
				if v, err := os.ReadFile(filepath.Join(root, "sys/fs/cgroup", p, "cpu.max")); err == nil {
					if q := strings.Fields(string(v)); len(q) == 2 {
						quota, e1 := strconv.ParseFloat(q[0], 64)
						period, e2 := strconv.ParseFloat(q[1], 64)
						if e1 == nil && e2 == nil && period > 0 {
							take(quota / period)
						}
					}
				}
			} else {
				dir := filepath.Join(root, "sys/fs/cgroup/cpu", p)
				q, e1 := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
				per, e2 := os.ReadFile(filepath.Join(dir, "cpu.cfs_period_us"))
				if e1 == nil && e2 == nil {
					quota, e1 := strconv.ParseFloat(strings.TrimSpace(string(q)), 64)
					period, e2 := strconv.ParseFloat(strings.TrimSpace(string(per)), 64)
					if e1 == nil && e2 == nil && period > 0 {
						take(quota / period)
					}
				}
			}
			if p == "/" {
				break
			}
		}
	}
	return best
}
