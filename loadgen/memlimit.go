package loadgen

import (
	"bufio"
	"bytes"
	"os"
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
// the machine's total and the cgroup's limit (v2 or v1), or 0 when neither
// can be read.
func memoryBudget() int64 {
	budget := int64(0)
	consider := func(n int64) {
		if n > 0 && (budget == 0 || n < budget) {
			budget = n
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		consider(parseMemTotal(b))
	}
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(p); err == nil {
			consider(parseCgroupLimit(b))
		}
	}
	return budget
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
