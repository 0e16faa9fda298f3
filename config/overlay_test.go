package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Settings are the top layer: they replace what the file wrote, and the
// result is validated once, so a file value a setting replaces is never
// judged on its own.
func TestSettingsOverrideTheFileAndAreValidatedOnce(t *testing.T) {
	file := "run:\n  users: 0\n  duration: 2m\n"
	cfg, err := Load(strings.NewReader(file), "spoc.yaml",
		Setting{Key: "run.users", Value: "4", Source: "--users"},
		Setting{Key: "run.warmup", Value: "1m30s", Source: "--warmup"},
		Setting{Key: "run.target", Value: `"http://127.0.0.1:8000"`, Source: "--target"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Run.Users != 4 || cfg.Run.Duration.D() != 2*time.Minute || cfg.Run.Warmup.D() != 90*time.Second || cfg.Run.Target != "http://127.0.0.1:8000" {
		t.Errorf("run = %+v", cfg.Run)
	}
	if _, err := Load(strings.NewReader(file), "spoc.yaml"); err == nil {
		t.Error("the file alone loaded with run.users 0")
	}
}

// An error about a key a setting set names the setting and the key, and no
// file position (the file's line of that key is not where the value came
// from); errors about the file's own keys keep theirs.
func TestSettingErrorsNameTheSettingAndTheKey(t *testing.T) {
	file := "run:\n  users: 3\nsweep:\n  repeats: 0\n"
	for _, tc := range []struct {
		name string
		s    Setting
		want []string
	}{
		{"validation", Setting{Key: "run.users", Value: "0", Source: "--users"},
			[]string{"--users (run.users): must be at least 1, got 0", "spoc.yaml:4:3: sweep.repeats: must be at least 1, got 0"}},
		{"type", Setting{Key: "run.users", Value: "four", Source: "--users"},
			[]string{"--users (run.users): cannot unmarshal !!str `four` into int"}},
		{"duration", Setting{Key: "run.duration", Value: "1y", Source: "--duration"},
			[]string{`--duration (run.duration): invalid duration "1y" (want e.g. "30s", "10m", "150ms")`}},
		{"list item", Setting{Key: "sweep.users", Value: "[10, 5]", Source: "--users"},
			[]string{"--users (sweep.users[1]): user counts must increase, got 5 after 10", "spoc.yaml:4:3: sweep.repeats: must be at least 1, got 0"}},
		{"unknown key", Setting{Key: "run.user", Value: "1", Source: "--users"},
			[]string{`--users (run.user): unknown key "user" (did you mean "users"?)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(file), "spoc.yaml", tc.s)
			if err == nil {
				t.Fatal("loaded without error")
			}
			if got, want := err.Error(), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("errors mismatch\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

// A string setting is the string it says, whatever YAML would make of its
// text unquoted; the caller quotes it.
func TestStringSettingStaysAString(t *testing.T) {
	cfg, err := Load(strings.NewReader(""), "", Setting{Key: "engine.served_model_name", Value: `"null"`, Source: "--served-model-name"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Engine.ServedModelName != "null" {
		t.Errorf("served name %q", cfg.Engine.ServedModelName)
	}
}

// A vLLM flag under engine.params replaces the configured parameter of the
// same flag whatever its spelling, and keeps the others.
func TestParamSettingReplacesTheSameFlagInAnySpelling(t *testing.T) {
	file := "engine:\n  params: {max_num_seqs: 512, block_size: 32}\n"
	cfg, err := Load(strings.NewReader(file), "spoc.yaml",
		Setting{Key: "engine.params.max-num-seqs", Value: "64", Source: "--max-num-seqs"},
		Setting{Key: "engine.params.kv-cache-dtype", Value: `"fp8"`, Source: "--kv-cache-dtype"},
		Setting{Key: "engine.params.enable-prefix-caching", Value: "false", Source: "--enable-prefix-caching"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"max-num-seqs": 64, "block_size": 32, "kv-cache-dtype": "fp8", "enable-prefix-caching": false}
	if !reflect.DeepEqual(cfg.Engine.Params, want) {
		t.Errorf("params = %v, want %v", cfg.Engine.Params, want)
	}
}

// Append adds to a list the file wrote; errors about an added item name
// the setting.
func TestAppendSettingAddsToTheList(t *testing.T) {
	file := "engine:\n  sim:\n    throttle: [{gpu: 0, clock_factor: 0.5}]\n"
	cfg, err := Load(strings.NewReader(file), "spoc.yaml",
		Setting{Key: "engine.sim.throttle", Value: "[{gpu: 2, clock_factor: 0.8, start: 30s, end: 90s}]", Append: true, Source: "--throttle"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Throttle{{GPU: 0, ClockFactor: 0.5}, {GPU: 2, ClockFactor: 0.8, Start: Duration(30 * time.Second), End: Duration(90 * time.Second)}}
	if !reflect.DeepEqual(cfg.Engine.Sim.Throttle, want) {
		t.Errorf("throttles = %+v", cfg.Engine.Sim.Throttle)
	}
	_, err = Load(strings.NewReader(file), "spoc.yaml",
		Setting{Key: "engine.sim.throttle", Value: "[{gpu: 9, clock_factor: 0.8}]", Append: true, Source: "--throttle"})
	if err == nil || err.Error() != "--throttle (engine.sim.throttle[1].gpu): must be a GPU index in [0, 4), got 9" {
		t.Errorf("bad added throttle: %v", err)
	}
	if _, err := Load(strings.NewReader(""), "", Setting{Key: "run.users", Value: "[1]", Append: true, Source: "--users"}); err == nil {
		t.Error("appended to a number")
	}
}

// What the settings set is the user's decision, not an assumption.
func TestSettingsAreNoAssumptions(t *testing.T) {
	cfg, err := LoadFile("", Setting{Key: "search.users", Value: "40", Source: "--users"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range Assumptions(cfg) {
		if a.Path == "search.users" {
			t.Errorf("search.users set by --users listed as an assumption: %+v", a)
		}
	}
	if !slices.ContainsFunc(Assumptions(Default()), func(a Assumption) bool { return a.Path == "search.users" }) {
		t.Fatal("search.users is no assumption of the defaults: the test checks nothing")
	}
}

// A setting's consequences for keys it does not name: fewer GPUs than the
// configured tensor-parallel size lower it; a smaller trial budget than
// search.parallel lowers that, with a note.
func TestSettingsAdjustWhatFollowsFromThem(t *testing.T) {
	cfg, err := LoadFile("", Setting{Key: "engine.gpus", Value: "2", Source: "--gpus"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Engine.GPUs != 2 || cfg.Engine.TensorParallelSize != 2 {
		t.Errorf("--gpus 2: %d GPUs, TP %d; want TP lowered to 2", cfg.Engine.GPUs, cfg.Engine.TensorParallelSize)
	}
	if _, err := LoadFile("", Setting{Key: "engine.gpus", Value: "2", Source: "--gpus"},
		Setting{Key: "engine.tensor_parallel_size", Value: "4", Source: "--tensor-parallel-size"}); err == nil {
		t.Error("an explicit TP above the GPUs was lowered instead of rejected")
	}
	cfg, err = Load(strings.NewReader("search:\n  parallel: 4\n"), "spoc.yaml", Setting{Key: "search.trials", Value: "2", Source: "--trials"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"search.parallel 4 lowered to 2: --trials 2 has no more trials to run at once"}
	if cfg.Search.Parallel != 2 || !reflect.DeepEqual(cfg.Notes(), want) {
		t.Errorf("parallel %d, notes %q", cfg.Search.Parallel, cfg.Notes())
	}
}

// Apply decodes strictly but leaves validation to the caller.
func TestApplyDoesNotValidate(t *testing.T) {
	cfg := Default()
	if err := cfg.Apply(Setting{Key: "engine.max_model_len", Value: "128", Source: "--max-model-len"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Engine.MaxModelLen != 128 {
		t.Errorf("max_model_len %d", cfg.Engine.MaxModelLen)
	}
	if err := cfg.Validate(); err == nil {
		t.Error("max_model_len 128 validates: the test checks nothing")
	}
	if err := cfg.Apply(Setting{Key: "engine.max_model_len", Value: "x", Source: "--max-model-len"}); err == nil || !strings.Contains(err.Error(), "--max-model-len (engine.max_model_len): cannot unmarshal") {
		t.Errorf("type error: %v", err)
	}
}

// spoc run's rules are config's: run.target must be an http(s) base URL,
// and a run needs one.
func TestRunTargetRules(t *testing.T) {
	for _, target := range []string{"localhost:8000", "ftp://localhost:8000", "http://"} {
		_, err := LoadFile("", Setting{Key: "run.target", Value: `"` + target + `"`, Source: "--target"})
		if err == nil || !strings.HasPrefix(err.Error(), "--target (run.target): want an http:// or https:// base URL") {
			t.Errorf("--target %s: %v", target, err)
		}
	}
	cfg := Default()
	if err := cfg.UseRunTarget(); err == nil || !strings.Contains(err.Error(), "run.target: spoc run needs the server's base URL") {
		t.Errorf("no target: %v", err)
	}
	ext := Default() // an external engine's URL is the target
	ext.Engine.Kind, ext.Engine.External.URL = EngineExternal, "http://127.0.0.1:8001"
	if err := ext.UseRunTarget(); err != nil || ext.Run.Target != "http://127.0.0.1:8001" {
		t.Errorf("engine.external.url: %v, target %q", err, ext.Run.Target)
	}
	cfg.Run.Target = "http://127.0.0.1:8000"
	if err := cfg.UseRunTarget(); err != nil || cfg.Engine.Kind != EngineExternal || cfg.Engine.External.URL != cfg.Run.Target {
		t.Errorf("target: %v, engine %s at %q", err, cfg.Engine.Kind, cfg.Engine.External.URL)
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
	if w := (Run{Ramp: Duration(time.Minute), Warmup: Duration(time.Second)}).Warning(); !strings.Contains(w, "ramp (1m0s) is longer than warm-up (1s)") {
		t.Errorf("warning %q", w)
	}
	if w := DefaultRun().Warning(); w != "" {
		t.Errorf("the defaults warn: %q", w)
	}
}

// One key given twice by two sources (vllm serve's positional MODEL and
// --model) must agree.
func TestKeyGivenTwiceMustAgree(t *testing.T) {
	model := Setting{Key: "engine.model", Value: `"gpt-oss-20b"`, Source: "--model"}
	if _, err := LoadFile("", model, Setting{Key: "engine.model", Value: `"gpt-oss-20b"`, Source: "MODEL"}); err != nil {
		t.Errorf("the same model twice: %v", err)
	}
	_, err := LoadFile("", model, Setting{Key: "engine.model", Value: `"gpt-oss-120b"`, Source: "MODEL"})
	if err == nil || err.Error() != `MODEL (engine.model): given twice: --model "gpt-oss-20b" and MODEL "gpt-oss-120b"` {
		t.Errorf("two models: %v", err)
	}
}
