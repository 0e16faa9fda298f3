package sim

import (
	"strings"
	"testing"
)

func TestParseThrottle(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Throttle
		err  string
	}{
		{"1:0.6", Throttle{GPU: 1, ClockFactor: 0.6}, ""},
		{"0:0.5@30s-90s", Throttle{GPU: 0, ClockFactor: 0.5, Start: 30, End: 90}, ""},
		{"3:1@2m-", Throttle{GPU: 3, ClockFactor: 1, Start: 120}, ""},
		{"1", Throttle{}, "want GPU:FACTOR"},
		{"-1:0.5", Throttle{}, "GPU must be"},
		{"1:0", Throttle{}, "clock factor"},
		{"1:1.5", Throttle{}, "clock factor"},
		{"1:0.5@30s", Throttle{}, "window must be"},
		{"1:0.5@30s-10s", Throttle{}, "end must be"},
		{"1:0.5@x-", Throttle{}, "start must be"},
	} {
		got, err := ParseThrottle(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseThrottle(f *testing.F) {
	for _, s := range []string{"1:0.6", "0:0.5@30s-90s", "3:1@2m-", "::@-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		th, err := ParseThrottle(s)
		if err != nil {
			return
		}
		if th.GPU < 0 || !(th.ClockFactor > 0 && th.ClockFactor <= 1) || th.Start < 0 || (th.End != 0 && th.End <= th.Start) {
			t.Fatalf("%q parsed to invalid %+v", s, th)
		}
	})
}
