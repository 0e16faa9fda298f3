package config

import (
	"reflect"
	"testing"

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
		spec.Population != 12 || spec.Sampler != "nsga2" || spec.Seed != 1 || spec.MaxModelLen != 131072 {
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
