package config

import (
	"strings"
	"testing"
	"time"
)

func TestDayExampleResolves(t *testing.T) {
	c, err := LoadFile("../examples/day.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Day.resolve(c.Plan.EngineStartup)
	if err != nil {
		t.Fatal(err)
	}
	if d == nil || len(d.Users) != 5 || d.Users[2].Users != 400 || d.Startup != 5*time.Minute || len(d.Policies) != 3 || d.Length != 2*time.Hour {
		t.Fatalf("examples/day.yaml resolves to %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestDayStartupFallsBackToEngineStartup(t *testing.T) {
	c, err := Load(strings.NewReader("plan: {engine_startup: 7m}\nday:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: 3}]\n  policies: [{kind: static}]\n"), "spoc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := c.Day.resolve(c.Plan.EngineStartup); err != nil || d.Startup != 7*time.Minute || d.Rate[0].PerSecond != 0.05 {
		t.Fatalf("day %+v: want plan.engine_startup's 7m and 3/min = 0.05/s", d)
	}
}

func TestDayBadInput(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"day:\n  length: 1h\n  users:\n    - {at: 0s, users: 50}\n    - {at: 2h, users: 100}\n    - {at: 1h, users: 10}\n  policies: [{kind: static}]\n",
			"spoc.yaml:6:8: day.users[2].at: must be after users[1].at (2h0m0s), got 1h0m0s"},
		{"day:\n  length: 2h\n  users:\n    - {at: 0s, users: 50}\n    - {at: 3h, users: 100}\n  policies: [{kind: static}]\n",
			"spoc.yaml:5:8: day.users[1].at: 3h0m0s is past the day's length (2h0m0s): the day ends before it"},
		{"day:\n  length: 1h\n  users:\n    - {at: -5m, users: 50}\n  policies: [{kind: static}]\n", "spoc.yaml:4:8: day.users[0].at: must not be negative"},
		{"day:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: -1}]\n  policies: [{kind: static}]\n", "day.rate[0].sessions_per_minute: must be a non-negative number"},
		{"day:\n  length: 1h\n  policies: [{kind: static}]\n", "day: needs rate"},
		{"day:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: 1}]\n  users: [{at: 0s, users: 1}]\n  policies: [{kind: static}]\n", "day: give one of rate, users or trace, not several"},
		{"day:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: 1}]\n  min_replicas: 4\n  max_replicas: 2\n  policies: [{kind: static}]\n", "spoc.yaml:5:3: day.max_replicas: must be 0 (the static fleet) or at least min_replicas (4), got 2"},
		{"day:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: 1}]\n  policies:\n    - {kind: target-tracking, headroom: 1.5}\n", "spoc.yaml:5:31: day.policies[0].headroom: must be in (0, 1], got 1.5"},
		{"day:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: 1}]\n  policies:\n    - {kind: hpa, metric: gpu_util, target: 1}\n", "day.policies[0].metric: want one of"},
		{"day:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: 1}]\n  policies:\n    - {kind: hpa, metric: kv_cache_usage, target: 80}\n", "day.policies[0].target: must be positive (at most 1 for kv_cache_usage), got 80"},
		{"day:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: 1}]\n  policies:\n    - {kind: predictive}\n", "day.policies[0].kind: unknown policy \"predictive\""},
		{"day:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: 1}]\n  policies: []\n", "day.policies: needs at least one policy"},
		{"day:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: 1}]\n  policies:\n    - {kind: target-tracking, headroom: 0.8, down_stabilization: -1m}\n", "spoc.yaml:5:46: day.policies[0].down_stabilization: must not be negative"},
		{"day:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: 1}]\n  policies:\n    - {kind: static, down_stabilization: 1m}\n", "day.policies[0].down_stabilization: applies to hpa and target-tracking, not static"},
		{"day:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: 1}]\n  policy: [{kind: static}]\n", "policy"},
		{"day:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: 1}]\n  policies: [{kind: static}]\n  startup_sensitivity: [0s, 5m]\n", "spoc.yaml:5:3: day.startup_sensitivity: needs a target-tracking policy in day.policies"},
		{"day:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: 1}]\n  policies: [{kind: target-tracking, headroom: 0.8}]\n  startup_sensitivity: [5m]\n", "day.startup_sensitivity: needs at least two start-up times to compare, got 1"},
		{"day:\n  length: 1h\n  rate: [{at: 0s, sessions_per_minute: 1}]\n  policies: [{kind: target-tracking, headroom: 0.8}]\n  startup_sensitivity: [0s, -2m]\n", "spoc.yaml:5:29: day.startup_sensitivity[1]: must not be negative, got -2m0s"},
	} {
		_, err := Load(strings.NewReader(tc.yaml), "spoc.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %q", tc.yaml, err, tc.want)
		}
	}
}
