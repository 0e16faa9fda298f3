package workload

import "testing"

func TestIdealPrefixCache(t *testing.T) {
	seg := func(key uint64, n int) Segment { return Segment{Key: key, Tokens: n} }
	var c IdealPrefixCache
	steps := []struct {
		segs   []Segment
		insert bool
		want   int
	}{
		{[]Segment{seg(1, 100), seg(2, 50)}, false, 0},            // cold
		{[]Segment{seg(1, 100), seg(2, 50)}, false, 150},          // identical prompt
		{[]Segment{seg(1, 100), seg(3, 50)}, false, 100},          // diverges at the second segment
		{[]Segment{seg(1, 60), seg(2, 50)}, false, 60},            // shorter run of key 1, then nothing known after 60
		{[]Segment{seg(1, 200), seg(2, 50)}, false, 100},          // longer run: only the 100 seen
		{[]Segment{seg(1, 150)}, false, 150},                      // 200 was seen now
		{[]Segment{seg(1, 100), seg(2, 50), seg(4, 30)}, true, 0}, // reply cached, not counted
		{[]Segment{seg(1, 100), seg(2, 50), seg(4, 30), seg(5, 10)}, false, 180},
		{[]Segment{seg(9, 0), seg(1, 100), seg(2, 50)}, false, 150}, // empty segments are skipped
	}
	for i, st := range steps {
		if st.insert {
			c.Insert(st.segs)
			continue
		}
		if got := c.Lookup(st.segs); got != st.want {
			t.Fatalf("step %d: hit %d, want %d", i, got, st.want)
		}
	}
}
