package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A CSV day trace becomes the day's rate or users curve.
func TestDayTraceReadsACurve(t *testing.T) {
	rate, users, err := readDayTrace(strings.NewReader("timestamp_s,sessions_per_minute\n0,6\n3600, 60\n7200,6\n"), "day.csv")
	if err != nil || users != nil || len(rate) != 3 || rate[1].At != time.Hour || rate[1].PerSecond != 1 {
		t.Fatalf("rate %+v users %+v: %v", rate, users, err)
	}
	rate, users, err = readDayTrace(strings.NewReader("users,timestamp_s\n50,0\n1000,36000\n"), "day.csv")
	if err != nil || rate != nil || len(users) != 2 || users[1].At != 10*time.Hour || users[1].Users != 1000 {
		t.Fatalf("rate %+v users %+v: %v", rate, users, err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "day.csv")
	if err := os.WriteFile(path, []byte("timestamp_s,users\n0,50\n1800,400\n3600,50\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(strings.NewReader("day:\n  length: 1h\n  trace: "+path+"\n  policies: [{kind: static}]\n"), "spoc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Day.resolve(c.Plan.EngineStartup)
	if err != nil || len(d.Users) != 3 || d.Users[1].Users != 400 {
		t.Fatalf("day %+v: %v", d, err)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
}

// Bad traces name the file, the line and the column.
func TestDayTraceBadInput(t *testing.T) {
	for _, tc := range []struct{ csv, want string }{
		{"", "day.trace day.csv: empty; want a header line timestamp_s,sessions_per_minute (or users)"},
		{"time,users\n0,5\n", `day.trace day.csv:1: no column "timestamp_s" in the header "time,users"`},
		{"timestamp_s,sessions\n0,5\n", `day.trace day.csv:1: no column "sessions_per_minute" or "users" in the header "timestamp_s,sessions"`},
		{"timestamp_s,users,sessions_per_minute\n0,5,1\n", `day.trace day.csv:1: columns "sessions_per_minute" and "users": give one, not both`},
		{"timestamp_s,users\n0,5\n60\n", `day.trace day.csv:3: column "users" missing (1 fields)`},
		{"timestamp_s,users\n0,5\n60,many\n", `day.trace day.csv:3: column "users": want a non-negative number, got "many"`},
		{"timestamp_s,users\n0,5\n60,-3\n", `day.trace day.csv:3: column "users": want a non-negative number, got "-3"`},
		{"timestamp_s,users\n-60,5\n", `day.trace day.csv:2: column "timestamp_s": want a non-negative number, got "-60"`},
		{"timestamp_s,users\n60,5\n", `day.trace day.csv:2: column "timestamp_s": the day starts at 0, got 60`},
		{"timestamp_s,users\n0,5\n120,6\n60,7\n", `day.trace day.csv:4: column "timestamp_s": 60 is not after the previous line's 120: times must increase`},
		{"timestamp_s,users\n", "day.trace day.csv: a header and no points"},
		{"timestamp_s,users\n0,\"5\n", "day.trace day.csv:2:"},
	} {
		_, _, err := readDayTrace(strings.NewReader(tc.csv), "day.csv")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %q", tc.csv, err, tc.want)
		}
	}
	// a missing file fails the setup, naming the key
	c, err := Load(strings.NewReader("day:\n  length: 1h\n  trace: /nonexistent/day.csv\n  policies: [{kind: static}]\n"), "spoc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Setup(SetupOptions{}); err == nil || !strings.Contains(err.Error(), "day.trace: open /nonexistent/day.csv") {
		t.Errorf("a missing trace: %v", err)
	}
	// a trace and a curve
	_, err = Load(strings.NewReader("day:\n  length: 1h\n  trace: day.csv\n  users: [{at: 0s, users: 1}]\n  policies: [{kind: static}]\n"), "spoc.yaml")
	if err == nil || !strings.Contains(err.Error(), "give one of rate, users or trace") {
		t.Errorf("trace and users: %v", err)
	}
}
