package nsys

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// TestAggregateMatchesSQLite3Shell checks ReadSQLite's streamed aggregation
// against the real sqlite3 shell running KernelAggregateQuery on the fixture.
func TestAggregateMatchesSQLite3Shell(t *testing.T) {
	sqlite3 := testtool.Find(t, "apt-get install -y sqlite3", "sqlite3")
	path := gptOSSFixture(t)
	out, err := exec.Command(sqlite3, "-separator", "\t", path, KernelAggregateQuery).Output()
	if err != nil {
		t.Fatalf("sqlite3: %v", err)
	}
	type key struct {
		dev  int
		name string
	}
	want := map[key][2]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 8 {
			t.Fatalf("sqlite3 line %q: %d fields", line, len(f))
		}
		dev, _ := strconv.Atoi(f[0])
		name := f[1]
		if name == "" {
			name = f[2]
		}
		n, _ := strconv.ParseInt(f[3], 10, 64)
		ns, _ := strconv.ParseInt(f[4], 10, 64)
		want[key{dev, name}] = [2]int64{n, ns}
	}
	p, err := ReadSQLite(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[key][2]int64{}
	for _, d := range p.Devices {
		for _, k := range d.Kernels {
			if strings.HasPrefix(k.Name, "[CUDA mem") {
				continue // not in the kernel table
			}
			got[key{d.Device, k.Name}] = [2]int64{k.Count, k.TimeNS}
		}
	}
	if len(got) != len(want) || len(want) != 4*16 {
		t.Fatalf("%d groups, sqlite3 has %d (want 64)", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("GPU %d %.40s: count/time %v, sqlite3 says %v", k.dev, k.name, got[k], w)
		}
	}
}
