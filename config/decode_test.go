package config

import (
	"strings"
	"testing"
)

// In flow style one line holds many keys: every error is reported, each at
// its own key's column, in reading order.
func TestFlowStyleErrorsEachAtTheirKey(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{
			name: "two bad durations on one line",
			in:   "sla: {ttft: {percentile: 95, max: 2x}, itl: {percentile: 95, max: 1y}}\n",
			want: []string{
				`flow.yaml:1:35: sla.ttft.max: invalid duration "2x" (want e.g. "30s", "10m", "150ms")`,
				`flow.yaml:1:67: sla.itl.max: invalid duration "1y" (want e.g. "30s", "10m", "150ms")`,
			},
		},
		{
			name: "unknown keys and a type error together",
			in:   "run: {users: four, user: 8}\nsla: {ttft: {percentil: 95}}\n",
			want: []string{
				"flow.yaml:1:14: run.users: cannot unmarshal !!str `four` into int",
				`flow.yaml:1:20: run.user: unknown key "user" (did you mean "users"?)`,
				`flow.yaml:2:14: sla.ttft.percentil: unknown key "percentil" (did you mean "percentile"?)`,
			},
		},
		{
			name: "validation errors inside a list item",
			in:   "sweep: {users: [10, 5]}\nengine: {gpus: 4, tensor_parallel_size: 3, weight_format: int3}\n",
			want: []string{
				"flow.yaml:1:21: sweep.users[1]: user counts must increase, got 5 after 10",
				"flow.yaml:2:19: engine.tensor_parallel_size: must divide gpus (4), got 3",
				`flow.yaml:2:44: engine.weight_format: unknown weight format "int3" (one of "w4a16", "fp4", "bf16", "fp8")`,
			},
		},
		{
			name: "gpus set, tensor parallel size left at the reference's",
			in:   "engine: {model: gpt-oss-20b, gpus: 1}\n",
			want: []string{"flow.yaml:1:1: engine.tensor_parallel_size: must divide gpus (1), got 4 (the reference case's default when the key is not set: set it to 1 for one GPU)"},
		},
		{
			name: "a mapping where a scalar belongs",
			in:   "engine: {gpus: {count: 4}}\n",
			want: []string{"flow.yaml:1:16: engine.gpus: cannot unmarshal !!map into int"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tc.in), "flow.yaml")
			if err == nil {
				t.Fatal("loaded without error")
			}
			if got, want := err.Error(), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("errors mismatch\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

// The line-only fallback (an error yaml reports that checkKnown did not
// foresee) names the key on that line, or the common parent of several,
// never one of them by guess.
func TestPathAtNamesTheCommonParent(t *testing.T) {
	pos := positions{
		"sla":                {Line: 1, Column: 1},
		"sla.ttft":           {Line: 2, Column: 3},
		"sla.ttft.max":       {Line: 2, Column: 10},
		"sla.ttft.maximum":   {Line: 2, Column: 20},
		"run":                {Line: 3, Column: 1},
		"run.users":          {Line: 4, Column: 3},
		"sweep.users[0]":     {Line: 5, Column: 10},
		"sweep.users[1]":     {Line: 5, Column: 14},
		"workload.profiles":  {Line: 6, Column: 3},
		"workload.profilesX": {Line: 6, Column: 30},
	}
	for line, want := range map[int]string{0: "", 1: "sla", 2: "sla.ttft", 4: "run.users", 5: "sweep.users", 6: "workload", 9: ""} {
		if got := pos.pathAt(line); got != want {
			t.Errorf("pathAt(%d) = %q, want %q", line, got, want)
		}
	}
}

func TestFieldErrorFormats(t *testing.T) {
	for _, tc := range []struct {
		e    FieldError
		want string
	}{
		{FieldError{File: "p.yaml", Line: 2, Column: 7, Path: "run.users", Msg: "bad"}, "p.yaml:2:7: run.users: bad"},
		{FieldError{File: "p.yaml", Line: 2, Msg: "invalid YAML"}, "p.yaml:2: invalid YAML"},
		{FieldError{File: "p.yaml", Path: "run.users", Msg: "bad"}, "p.yaml: run.users: bad"},
		{FieldError{Line: 2, Column: 7, Path: "run.users", Msg: "bad"}, "line 2, column 7: run.users: bad"},
		{FieldError{Path: "run.users", Msg: "bad"}, "run.users: bad"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v.Error() = %q, want %q", tc.e, got, tc.want)
		}
	}
}

// A misspelt router or engine kind names the nearest one, as a misspelt key
// does, at the key.
func TestMisspeltRouterAndKindSuggestTheName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"fleet:\n  router: session-afinity\n", `k.yaml:2:3: fleet.router: unknown router "session-afinity" (did you mean "session-affinity"?)`},
		{"engine:\n  kind: proces\n", `k.yaml:2:3: engine.kind: unknown engine "proces" (did you mean "process"?)`},
		{"fleet:\n  router: nginx\n", `k.yaml:2:3: fleet.router: unknown router "nginx" (one of`},
	} {
		_, err := Load(strings.NewReader(tc.in), "k.yaml")
		if err == nil {
			t.Fatalf("%q loaded without error", tc.in)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got: %s\nwant: %s", tc.in, err, tc.want)
		}
		if strings.HasPrefix(tc.in, "fleet:\n  router: nginx") && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("nginx is near no router, yet: %s", err)
		}
	}
}

// A scalar where a section goes names the section's keys, not a Go type;
// a tab in the indentation is reported at the tab.
func TestSectionTypeAndTabErrorsNameTheFix(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"sla:\n  ttft: fast\n", "p.yaml:2:9: sla.ttft: want a mapping of max, percentile, got `fast`"},
		{"sla:\n  ttft: [1, 2]\n", "p.yaml:2:9: sla.ttft: want a mapping of max, percentile, got a list"},
		{"plan:\n  target_users: 100\n\tquick: true\n", "p.yaml:3:1: invalid YAML: found a tab character"},
	} {
		_, err := Load(strings.NewReader(tc.in), "p.yaml")
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := Load(strings.NewReader("sla:\n  ttft:\n"), "p.yaml"); err != nil {
		t.Errorf("an empty section: %v", err)
	}
}
