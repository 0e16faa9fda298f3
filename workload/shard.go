package workload

import (
	"fmt"
	"strconv"
)

// Shards partitions a schedule's users among client processes (run.clients),
// the rule every shard computes for itself from the same configuration, so
// that no coordinator hands users out:
//
//   - A user is the unit: every session of a closed-loop user, and every turn
//     of an open-loop session (which is its own user), runs on one shard, so
//     a conversation's history and prefix-cache locality stay in one process.
//   - Users are dealt in index order, which for an open-loop run is arrival
//     order: sessions are dealt to shards as they arrive.
//   - Profiles spread evenly: user u goes to the shard holding the fewest
//     users of u's profile so far; ties go to the shard holding the fewest
//     users, then to the lowest index. Every shard then holds each profile's
//     users within one of each other, and all users within one.
//
// A user's profile is the source's UserProfile when it has one (the
// generator), otherwise the profile named by its first session (an imported
// trace).
type Shards struct {
	// Count is the number of shards (1 or 0: no sharding).
	Count int
	// Index is this process's shard, 0 ≤ Index < Count.
	Index int
}

// Validate reports a shard outside the count.
func (s Shards) Validate() error {
	if s.Count < 0 || (s.Count > 0 && (s.Index < 0 || s.Index >= s.Count)) || (s.Count == 0 && s.Index != 0) {
		return fmt.Errorf("shard %d of %d: want 0 ≤ shard < count", s.Index, s.Count)
	}
	return nil
}

// userProfiler is a source that knows a user's profile without building a
// session (the generator).
type userProfiler interface{ UserProfile(user int) int }

// Partition returns the shard of each of users users of src by the rule of
// Shards.
func Partition(src Source, users, count int) ([]int, error) {
	shard := make([]int, users)
	if count <= 1 {
		return shard, nil
	}
	if m, ok := src.(*midSession); ok {
		src = m.Workload // a mid-session start keeps the user's profile
	}
	profileOf := func(u int) (string, error) {
		if p, ok := src.(userProfiler); ok {
			return strconv.Itoa(p.UserProfile(u)), nil
		}
		sc, err := src.Session(u, 0)
		if err != nil {
			return "", fmt.Errorf("user %d: %w", u, err)
		}
		return sc.Profile, nil
	}
	total := make([]int, count)
	byProfile := map[string][]int{}
	for u := range users {
		p, err := profileOf(u)
		if err != nil {
			return nil, fmt.Errorf("partition users: %w", err)
		}
		held := byProfile[p]
		if held == nil {
			held = make([]int, count)
			byProfile[p] = held
		}
		best := 0
		for s := 1; s < count; s++ {
			if held[s] < held[best] || (held[s] == held[best] && total[s] < total[best]) {
				best = s
			}
		}
		shard[u] = best
		held[best]++
		total[best]++
	}
	return shard, nil
}
