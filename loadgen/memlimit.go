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

// memoryShare is the part of the machine's (or container's) memory the
// client's soft memory limit allows during a run. The relaxed GC target lets
// the heap grow to ~5× its live size; near this limit Go collects more often
// instead, so a very large run slows down (and shows as client-bound) rather
// than being killed for memory.
const memoryShare = 0.5

// memoryBudget returns the memory available to this process: the smaller of
// the machine's total and its cgroup's limit, or 0 when neither can be read.
func memoryBudget() int64 { return memoryBudgetAt("/") }

// memoryBudgetAt is memoryBudget with /proc and /sys under root (tests).
func memoryBudgetAt(root string) int64 {
	budget := int64(0)
	consider := func(n int64) {
		if n > 0 && (budget == 0 || n < budget) {
			budget = n
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "proc/meminfo")); err == nil {
		consider(parseMemTotal(b))
	}
	for _, n := range cgroupMemoryLimits(root) {
		consider(n)
	}
	return budget
}

// cgroupMemoryLimits returns the memory limits set on this process's own
// cgroup and its ancestors: cgroup v2 memory.max, v1 memory.limit_in_bytes.
// The path comes from /proc/self/cgroup, so a limit set on a systemd unit, a
// batch job or a container without its own cgroup namespace is found too,
// not only one at the hierarchy's root.
func cgroupMemoryLimits(root string) []int64 {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return nil
	}
	var limits []int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), ":", 3) // hierarchy-ID:controllers:path
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			continue
		}
		var dir, file string
		switch {
		case f[0] == "0" && f[1] == "": // v2 unified hierarchy
			dir, file = "sys/fs/cgroup", "memory.max"
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			dir, file = "sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		for p := path.Clean(f[2]); ; p = path.Dir(p) {
			if v, err := os.ReadFile(filepath.Join(root, dir, p, file)); err == nil {
				if n := parseCgroupLimit(v); n > 0 {
					limits = append(limits, n)
				}
			}
			if p == "/" {
				break
			}
		}
	}
	return limits
}

// parseMemTotal reads MemTotal (kB) from /proc/meminfo, in bytes.
func parseMemTotal(meminfo []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb <= 0 {
			return 0
		}
		return kb << 10
	}
	return 0
}

// parseCgroupLimit reads a cgroup memory limit: bytes, or "max" (v2) / a
// huge number (v1) for none, which return 0.
func parseCgroupLimit(b []byte) int64 {
	s := strings.TrimSpace(string(b))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= 1<<60 {
		return 0
	}
	return n
}
