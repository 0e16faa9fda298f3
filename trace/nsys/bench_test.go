package nsys

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/trace"
)

// benchNames are the distinct kernel names of the synthetic large export: the
// gpt-oss fixture's kernels plus tile-size variants, as a real capture shows
// dozens of GEMM and attention specialisations.
func benchNames() []string {
	base := []fixtureKernel{kRMSNorm, kQKV, kRotary, kCache, kFA3, kOProj, kCustomAR, kRouter, kTopK, kRouting, kGateUp, kDown, kNCCL, kLMHead, kArgmax}
	var names []string
	for v := range 4 {
		for _, k := range base {
			names = append(names, fmt.Sprintf("%s_v%d", k.demangled, v))
		}
	}
	return names
}

// writeLargeExport generates an export with n kernels on 4 GPUs in SQL (a
// recursive CTE), so that generating 5 million rows takes seconds, not the
// minutes of row-by-row inserts.
func writeLargeExport(tb testing.TB, path string, n int) {
	tb.Helper()
	writeFixture(tb, path, nil, nil, "3.15.1")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	names := benchNames()
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	for i, name := range names {
		if _, err := tx.Exec(`INSERT INTO StringIds VALUES (?, ?)`, 100+i, name); err != nil {
			tb.Fatal(err)
		}
	}
	// Per GPU a launch every 1.5 µs lasting 0.5–2 µs: some kernels overlap,
	// and every third one is a CUDA graph node.
	_, err = tx.Exec(`WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ?1 - 1)
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid,
  demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ,
  staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, graphNodeId)
SELECT 1000000 + (i / 4) * 1500 + (i % 4) * 7, 1000000 + (i / 4) * 1500 + (i % 4) * 7 + 500 + (i * 7919) % 1500,
  i % 4, 1, 7, i, 281474976710656, 100 + ((i / 4) * 31) % ?2, 100 + ((i / 4) * 31) % ?2,
  128, 132, 1, 1, 256, 1, 1, 0, 49152, 0, 0, i, CASE WHEN i % 3 = 0 THEN 1000 + i % 40 END FROM c`, n, len(names))
	if err != nil {
		tb.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkReadSQLite5M times the whole analysis of a 5-million-kernel export
// (read + categorise) and, when the sqlite3 shell is installed, the shell's
// time for the equivalent aggregate query (KernelAggregateQuery) on the same
// file. Metrics: sqlite3-ns/op (the shell, best of 3) and x-sqlite3 (our
// time over the shell's; the acceptance bound is 2).
//
//	go test ./trace/nsys -run XXX -bench ReadSQLite5M -benchtime 3x
func BenchmarkReadSQLite5M(b *testing.B) {
	const n = 5_000_000
	path := filepath.Join(b.TempDir(), "large.sqlite")
	start := time.Now()
	writeLargeExport(b, path, n)
	b.Logf("generated %d kernels in %s", n, time.Since(start).Round(time.Millisecond))

	var cli time.Duration
	if sqlite3, err := exec.LookPath("sqlite3"); err == nil {
		for range 3 {
			t0 := time.Now()
			out, err := exec.Command(sqlite3, path, KernelAggregateQuery).Output()
			d := time.Since(t0)
			if err != nil {
				b.Fatalf("sqlite3: %v", err)
			}
			if lines := strings.Count(string(out), "\n"); lines != 4*len(benchNames()) {
				b.Fatalf("sqlite3 returned %d groups, want %d", lines, 4*len(benchNames()))
			}
			if cli == 0 || d < cli {
				cli = d
			}
		}
	} else {
		b.Log("sqlite3 not installed (apt-get install -y sqlite3): no shell comparison")
	}

	b.ResetTimer()
	for b.Loop() {
		p, err := ReadSQLite(context.Background(), path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		bd, err := trace.Analyze(p, trace.DefaultRules(), trace.Options{})
		if err != nil {
			b.Fatal(err)
		}
		var count int64
		for _, c := range bd.Categories {
			count += c.Count
		}
		if count != n {
			b.Fatalf("analysed %d kernels, want %d", count, n)
		}
	}
	b.StopTimer()
	if cli > 0 {
		per := b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(float64(cli.Nanoseconds()), "sqlite3-ns/op")
		b.ReportMetric(float64(per)/float64(cli), "x-sqlite3")
	}
}

// BenchmarkQueries1M compares, on a 1-million-kernel export, the streamed
// aggregation ReadSQLite uses with the GROUP BY query it replaced and with the
// window-function busy-time query it falls back to for unsorted exports.
func BenchmarkQueries1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "1m.sqlite")
	writeLargeExport(b, path, 1_000_000)
	db, err := openReadOnly(path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	s, err := inspect(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("stream", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := scanActivity(ctx, db, s, trace.Window{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("groupby-sql", func(b *testing.B) {
		for b.Loop() {
			rows, err := db.QueryContext(ctx, KernelAggregateQuery)
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
			}
			if err := rows.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("busy-sql", func(b *testing.B) {
		for b.Loop() {
			if _, err := busyTime(ctx, db, s, trace.Window{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
