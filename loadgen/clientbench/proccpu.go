package clientbench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on every
// Linux architecture spoc builds for).
const userHZ = 100

// ProcessCPU returns the CPU time (user + system, all threads) process pid
// has used, from /proc/PID/stat; it fails where there is no /proc.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a stat line; the
// command name (field 2) may hold spaces and parentheses, so fields are
// counted after its last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("proc stat: no command field in %q", stat)
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("proc stat: %d fields after the command, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("proc stat: CPU field %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// CPUMeter samples a process's CPU use over a window that starts after a
// delay: the measured window of a level, not its ramp and warm-up.
type CPUMeter struct {
	pid   int
	start *time.Timer
	wall0 time.Time
	cpu0  time.Duration
	err0  error // reading the start failed
	cores chan float64
}

// MeterCPU starts measuring process pid from after until after+window.
func MeterCPU(pid int, after, window time.Duration) *CPUMeter {
	m := &CPUMeter{pid: pid, cores: make(chan float64, 1)}
	m.start = time.AfterFunc(after, func() {
		m.wall0 = time.Now()
		m.cpu0, m.err0 = ProcessCPU(pid)
		time.AfterFunc(window, m.sample)
	})
	return m
}

func (m *CPUMeter) sample() {
	cpu, err := ProcessCPU(m.pid)
	wall := time.Since(m.wall0)
	if err != nil || m.err0 != nil || wall <= 0 {
		m.cores <- 0
		return
	}
	m.cores <- (cpu - m.cpu0).Seconds() / wall.Seconds()
}

// Cores returns the process's CPU use in cores over the window, waiting for
// the window to end; 0 when it could not be measured or the window was not
// reached within a second of the call.
func (m *CPUMeter) Cores() float64 {
	select {
	case c := <-m.cores:
		return c
	case <-time.After(time.Second):
		m.start.Stop()
		return 0
	}
}
