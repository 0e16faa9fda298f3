package config

import (
	"reflect"
	"testing"
	"time"

	"github.com/spoc-project/spoc/search"
)

func TestTuneSpecFromConfig(t *testing.T) {
	cfg := Default()
	cfg.Search.Users = 120
	cfg.Search.Storage = "sqlite:out/study.db"
	cfg.Engine.Params = map[string]any{"max-num-seqs": 64}
	cfg.SLA.Scope = SLAScopeOverall
	spec := cfg.TuneSpec()
	if spec.Users != 120 || spec.Storage != "sqlite:out/study.db" || spec.Study != "default" || spec.Trials != 60 ||
		spec.Population != 12 || spec.Sampler != "auto" || spec.Seed != 1 || spec.MaxModelLen != 131072 {
		t.Errorf("search settings lost: %+v", spec)
	}
	if len(spec.Space) != len(cfg.Search.Space) || len(spec.Objectives) != 3 {
		t.Errorf("space %d params, %d objectives", len(spec.Space), len(spec.Objectives))
	}
	if want := (search.Params{"tensor-parallel-size": 4, "max-model-len": 131072, "max-num-seqs": 64}); !reflect.DeepEqual(spec.BaseParams, want) {
		t.Errorf("BaseParams = %v, want %v", spec.BaseParams, want)
	}
	if spec.SLA != cfg.SLA.Result() {
		t.Errorf("SLA = %+v, want %+v", spec.SLA, cfg.SLA.Result())
	}
}

// TestApplyQuickNeverLengthens: --quick shortens long windows to its own and
// keeps the ones the configuration already set shorter.
func TestApplyQuickNeverLengthens(t *testing.T) {
	const s = Duration(time.Second)
	long := Default()
	long.Search.Warmup, long.Search.Duration = 600*s, 900*s
	long.Run.Ramp, long.Run.Warmup, long.Run.Duration = 300*s, 600*s, 1200*s
	long.Sweep.Warmup, long.Sweep.Duration = 0, 0
	long.ApplyQuick()
	if got, want := [5]Duration{long.Search.Warmup, long.Search.Duration, long.Run.Ramp, long.Run.Warmup, long.Run.Duration}, [5]Duration{90 * s, 120 * s, 60 * s, 90 * s, 180 * s}; got != want {
		t.Errorf("long windows after ApplyQuick = %v, want the quick ones %v", got, want)
	}
	if long.Sweep.Warmup != 0 || long.Sweep.Duration != 0 {
		t.Errorf("sweep windows of 0 (use the run's) became %v/%v", long.Sweep.Warmup, long.Sweep.Duration)
	}

	short := Default()
	short.Search.Warmup, short.Search.Duration = 10*s, 20*s
	short.Run.Ramp, short.Run.Warmup, short.Run.Duration = 5*s, 15*s, 30*s
	short.Sweep.Warmup, short.Sweep.Duration = 8*s, 25*s
	short.ApplyQuick()
	if got, want := [7]Duration{short.Search.Warmup, short.Search.Duration, short.Run.Ramp, short.Run.Warmup, short.Run.Duration, short.Sweep.Warmup, short.Sweep.Duration}, [7]Duration{10 * s, 20 * s, 5 * s, 15 * s, 30 * s, 8 * s, 25 * s}; got != want {
		t.Errorf("short windows after ApplyQuick = %v, want them unchanged %v", got, want)
	}

	mixed := Default()
	mixed.Run.Warmup, mixed.Run.Duration = 600*s, 1200*s
	mixed.Sweep.Warmup, mixed.Sweep.Duration = 300*s, 600*s
	mixed.ApplyQuick()
	if mixed.Sweep.Warmup != 90*s || mixed.Sweep.Duration != 180*s {
		t.Errorf("sweep windows longer than the quick run's = %v/%v, want 1m30s/3m0s", mixed.Sweep.Warmup, mixed.Sweep.Duration)
	}
}

// TestFingerprintSLAIsFrozen: a study's fingerprint holds the SLA in the
// form studies stored before summary.json went snake_case. Changing it would
// make `spoc tune` refuse to resume every existing study, so the default
// configuration's SLA string is pinned here.
func TestFingerprintSLAIsFrozen(t *testing.T) {
	const want = `{"TTFT":{"Percentile":95,"Max":"2s"},"ITL":{"Percentile":95,"Max":"100ms"},` +
		`"TPOT":{"Percentile":95,"Max":"0s"},"E2E":{"Percentile":95,"Max":"0s"},"MaxErrorRate":0.01,"Scope":"per-profile"}`
	cfg := Default()
	if got := cfg.TuneSpec().Fingerprint["sla"]; got != want {
		t.Errorf("fingerprint sla\n got: %s\nwant: %s", got, want)
	}
}
