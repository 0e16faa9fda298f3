package tune_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/study"
	"github.com/spoc-project/spoc/tune"
	"github.com/spoc-project/spoc/vllm"
)

// The default study on the simulator, as spoc tune runs it (20 trials at a
// fixed load, to keep the test short): trial 0 is the configured
// engine.params, no two evaluated trials are canonical duplicates, and
// enable-chunked-prefill, which the reference context makes a dead
// dimension, is not searched.
func TestDefaultStudyWastesNoTrial(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 20 simulated trials")
	}
	cfg := config.Default()
	cfg.Search.Trials = 20
	cfg.Search.Users = 150
	out := t.TempDir()
	s, err := cfg.Setup(config.SetupOptions{OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	s.Search.Storage = "sqlite:" + filepath.Join(out, "study.db")
	var notes []string
	res, err := capacity.Tune(context.Background(), s.Setup, capacity.TuneOptions{Notify: func(l string) { notes = append(notes, l) }})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := tune.NewPlan(s.Search)
	if err != nil {
		t.Fatal(err)
	}

	// The dead dimension is gone, and the study said why.
	if _, ok := plan.Space.Param("enable-chunked-prefill"); ok {
		t.Error("enable-chunked-prefill is still searched")
	}
	for _, tr := range res.Trials {
		if _, ok := tr.Params["enable-chunked-prefill"]; ok {
			t.Fatalf("trial %d searched enable-chunked-prefill: %v", tr.Number, tr.Params)
		}
	}
	if !strings.Contains(strings.Join(notes, "\n"), "enable-chunked-prefill dropped") {
		t.Errorf("no reason printed for the dropped dimension; notes:\n%s", strings.Join(notes, "\n"))
	}

	// Trial 0 is engine.params (vLLM's defaults for searched flags it
	// does not set), and it ran.
	t0 := res.Trials[0]
	for _, sp := range plan.Space.Params {
		want, ok := cfg.Engine.Params[sp.Name]
		if !ok {
			want = vllm.Defaults()[sp.Name]
		}
		if got := t0.Params[sp.Name]; !sameValue(got, want) {
			t.Errorf("trial 0 %s = %v, want the configured %v", sp.Name, got, want)
		}
	}
	if t0.State != search.StateComplete {
		t.Errorf("trial 0 is %s", t0.State)
	}

	// No two evaluated trials are canonical duplicates.
	seen := map[string]int{}
	for _, tr := range res.Trials {
		if _, reused := tr.SystemAttrs[study.AttrDuplicateOf]; reused {
			continue
		}
		k := plan.Space.CanonicalKey(tr.Params)
		if prev, dup := seen[k]; dup {
			t.Errorf("trials %d and %d were both evaluated at canonically equal flags %s", prev, tr.Number, k)
		}
		seen[k] = tr.Number
	}
	if len(res.Trials) != 20 {
		t.Errorf("%d trials, want 20", len(res.Trials))
	}
}

func sameValue(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
