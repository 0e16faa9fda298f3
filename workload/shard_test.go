package workload

import (
	"slices"
	"testing"
	"time"
)

// The partition puts every user on one shard, each profile's users and all
// users within one of each other across shards, and is the same every time
// (every shard computes it for itself).
func TestPartitionSpreadsProfilesEvenly(t *testing.T) {
	spec := DefaultSpec()
	g, err := New(spec, 131072)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ users, shards int }{{10, 3}, {97, 4}, {1000, 7}, {3, 5}} {
		shard, err := Partition(g, tc.users, tc.shards)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Partition(MidSession(g, spec.Seed), tc.users, tc.shards)
		if !slices.Equal(shard, again) {
			t.Errorf("%d users over %d shards: a mid-session workload partitions differently", tc.users, tc.shards)
		}
		total := make([]int, tc.shards)
		byProfile := map[int][]int{}
		for u, s := range shard {
			if s < 0 || s >= tc.shards {
				t.Fatalf("user %d on shard %d of %d", u, s, tc.shards)
			}
			total[s]++
			p := g.UserProfile(u)
			if byProfile[p] == nil {
				byProfile[p] = make([]int, tc.shards)
			}
			byProfile[p][s]++
		}
		if spread(total) > 1 {
			t.Errorf("%d users over %d shards: shard sizes %v", tc.users, tc.shards, total)
		}
		for p, held := range byProfile {
			if spread(held) > 1 {
				t.Errorf("%d users over %d shards: profile %d held %v", tc.users, tc.shards, p, held)
			}
		}
	}
}

func spread(xs []int) int { return slices.Max(xs) - slices.Min(xs) }

// Every user of a schedule is owned by exactly one shard's schedule, open
// loop too, where sessions are dealt as they arrive; times stay the whole
// run's.
func TestScheduleShardsOwnEachUserOnce(t *testing.T) {
	g, err := New(DefaultSpec(), 131072)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []ScheduleOptions{
		{Users: 50, Ramp: time.Second, Duration: time.Minute},
		{Duration: time.Minute, Arrivals: &Arrivals{Rate: []RatePoint{{PerSecond: 2}}, Seed: 3}},
	} {
		whole, err := NewSchedule(g, o)
		if err != nil {
			t.Fatal(err)
		}
		owners := make([]int, whole.Users())
		for i := range 3 {
			o.Shards = Shards{Count: 3, Index: i}
			s, err := NewSchedule(g, o)
			if err != nil {
				t.Fatal(err)
			}
			if s.Users() != whole.Users() {
				t.Fatalf("shard %d sees %d users, the whole run %d", i, s.Users(), whole.Users())
			}
			for u := range s.Users() {
				if s.Owns(u) {
					owners[u]++
				}
				if s.Start(u) != whole.Start(u) {
					t.Errorf("shard %d starts user %d at %v, the whole run at %v", i, u, s.Start(u), whole.Start(u))
				}
			}
		}
		for u, n := range owners {
			if n != 1 {
				t.Errorf("open loop %v: user %d owned by %d shards", o.Arrivals != nil, u, n)
			}
		}
	}
	if _, err := NewSchedule(g, ScheduleOptions{Users: 2, Duration: time.Second, Shards: Shards{Count: 2, Index: 2}}); err == nil {
		t.Error("shard 2 of 2 was accepted")
	}
}
