package corpus

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// writeBigFixture writes about mb megabytes of CoderForge-shaped parquet,
// streaming (a few distinct trajectories repeated under new ids), and
// returns its path and size.
func writeBigFixture(b *testing.B, mb int) (string, int64) {
	b.Helper()
	trajs, err := Synthesize(9, 8, DefaultSyntheticSpec, testTokenizer(b))
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]CoderForgeRow, len(trajs))
	for i := range trajs {
		if rows[i], err = CoderForgeRowOf(&trajs[i]); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(b.TempDir(), "big.parquet")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := parquet.NewGenericWriter[CoderForgeRow](f, parquet.MaxRowsPerRowGroup(64))
	var written int64
	for i := 0; written < int64(mb)<<20; i++ {
		r := rows[i%len(rows)]
		r.TrajectoryID = "t" + strconv.Itoa(i)
		if _, err := w.Write([]CoderForgeRow{r}); err != nil {
			b.Fatal(err)
		}
		written += int64(len(r.Messages))
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(path)
	return path, fi.Size()
}

// cpuSeconds is the process's user plus system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// peakRSSMB reads the process's peak resident set size (Linux).
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}

// BenchmarkBuildParquet streams a generated CoderForge parquet file through
// Build. SPOC_CORPUS_BENCH_MB sets its size (default 64; the check
// is 1000). Reports throughput and the process's peak RSS.
func BenchmarkBuildParquet(b *testing.B) {
	mb := 64
	if v, err := strconv.Atoi(os.Getenv("SPOC_CORPUS_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	path, size := writeBigFixture(b, mb)
	b.SetBytes(size)
	// Measure Build's memory, not the generator's: return freed memory to
	// the OS and reset the peak (Linux: clear_refs 5).
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for b.Loop() {
		st, err := Build(context.Background(), []Source{{DatasetCoderForge, path}}, io.Discard, BuildOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if st.Malformed != 0 || st.Rows == 0 {
			b.Fatalf("stats %+v", st)
		}
	}
	// The shared development machine is oversubscribed; throughput per CPU
	// second says what an idle core would do.
	b.ReportMetric(float64(size)/(1<<20)*float64(b.N)/(cpuSeconds()-cpu0), "MB/cpu-s")
	b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
	b.ReportMetric(float64(size)/(1<<20), "input-MB")
}
