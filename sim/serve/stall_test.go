package serve

import (
	"testing"
	"time"
)

func TestParseStall(t *testing.T) {
	if got, err := ParseStall("60s+5s"); err != nil || got != (Stall{Start: time.Minute, Duration: 5 * time.Second}) {
		t.Errorf("60s+5s: %+v %v", got, err)
	}
	for _, bad := range []string{"60s", "x+5s", "60s+0s", "-1s+1s"} {
		if _, err := ParseStall(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseStall(f *testing.F) {
	f.Add("60s+5s")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseStall(s)
		if err == nil && (st.Start < 0 || st.Duration <= 0) {
			t.Fatalf("%q parsed to invalid %+v", s, st)
		}
	})
}
