package sim

import (
	"testing"
)

// Parked runs change no record: the digest runs (an evicting fleet,
// autoscaled days) give the same records and stats with every turn's blocks
// released one by one, and with parked runs, which they do use — parked,
// taken back by the next turn, and unparked by evictions and other
// sessions' lookups.
func TestParkedRunsChangeNoRecord(t *testing.T) {
	runs := digestRuns(t)
	var all parkStats
	for _, name := range []string{"evicting-fleet-affinity", "day-hpa-kv", "day-target-tracking"} {
		o, src := runs[name]()
		o.blockByBlock = true
		var parkedOff int64
		o.afterRun = func(c *Cluster) {
			for _, e := range c.engines {
				parkedOff += e.pool.parkStats.Parked
			}
		}
		off, _ := runDigest(t, o, src)
		if parkedOff != 0 {
			t.Fatalf("%s: %d runs parked with blockByBlock set", name, parkedOff)
		}
		var stats parkStats
		o, src = runs[name]()
		o.afterRun = func(c *Cluster) {
			for _, e := range c.engines {
				s := e.pool.parkStats
				stats.Parked += s.Parked
				stats.Taken += s.Taken
				stats.TakenBlocks += s.TakenBlocks
				stats.Unparked += s.Unparked
			}
		}
		on, _ := runDigest(t, o, src)
		if on != off {
			t.Errorf("%s: records digest %s with parked runs, %s without", name, on[:16], off[:16])
		}
		t.Logf("%s: %+v", name, stats)
		all.Parked += stats.Parked
		all.Taken += stats.Taken
		all.Unparked += stats.Unparked
	}
	if all.Parked == 0 || all.Taken == 0 || all.Unparked == 0 {
		t.Errorf("parked runs were not all used: %+v", all)
	}
}
