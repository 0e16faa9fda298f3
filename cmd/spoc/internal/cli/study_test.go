package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/random"
	"github.com/spoc-project/spoc/study"
)

func studyRunCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// studyMakeDemo stores a 5-trial study "demo" and returns its storage URL.
func studyMakeDemo(t *testing.T) string {
	t.Helper()
	url := "sqlite:" + filepath.Join(t.TempDir(), "s.db")
	ctx := context.Background()
	db, err := study.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	space := search.Space{Params: []search.Param{search.IntStep("max_num_seqs", 16, 256, 16), search.Bool("enable_chunked_prefill")}}
	st, err := db.CreateOrLoad(ctx, study.Config{Name: "demo", Directions: []search.Direction{search.Maximize, search.Minimize}, Space: space, Sampler: "random", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = study.Optimize(ctx, study.Options{Study: st, Sampler: random.New(1), Trials: 5, HeartbeatInterval: time.Second, StaleAfter: time.Minute,
		Objective: func(ctx context.Context, tc *search.TrialContext) ([]float64, []float64, error) {
			p := tc.Params
			n := float64(p.Int("max_num_seqs"))
			tc.SetUserAttr("note", "ok")
			return []float64{n, n / 100}, []float64{n - 200}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return url
}

func TestStudyLsShowExport(t *testing.T) {
	url := studyMakeDemo(t)
	code, out, errs := studyRunCLI(t, "study", "ls", "--storage", url)
	if code != 0 || !strings.Contains(out, "demo") || !strings.Contains(out, "COMPLETE=5") {
		t.Fatalf("ls: %d %q %q", code, out, errs)
	}
	code, out, _ = studyRunCLI(t, "study", "ls", "--storage", url, "--json")
	var list []study.Summary
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Trials != 5 {
		t.Fatalf("ls --json: %d %s", code, out)
	}
	code, out, _ = studyRunCLI(t, "study", "show", "demo", "--storage", url)
	if code != 0 || !strings.Contains(out, "Pareto front") || !strings.Contains(out, "max_num_seqs: int in [16, 256], step 16") {
		t.Fatalf("show: %d %s", code, out)
	}
	code, out, _ = studyRunCLI(t, "study", "show", "demo", "--storage", url, "--json", "--all")
	var view map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &view) != nil || len(view["trials"].([]any)) != 5 {
		t.Fatalf("show --json: %d %s", code, out)
	}
	dst := filepath.Join(t.TempDir(), "trials.csv")
	if code, _, errs = studyRunCLI(t, "study", "export", "demo", "--storage", url, "--format", "csv", "-o", dst); code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	f, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) != 6 {
		t.Fatalf("csv: %v %d rows", err, len(recs))
	}
	if !strings.Contains(strings.Join(recs[0], ","), "values_0,values_1,datetime_start,datetime_complete,duration,params_enable_chunked_prefill,params_max_num_seqs,user_attrs_note") {
		t.Fatalf("header %v", recs[0])
	}
	code, out, _ = studyRunCLI(t, "study", "export", "demo", "--storage", url, "--format", "json")
	var rows []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 5 {
		t.Fatalf("export json: %d %s", code, out)
	}
}

func TestStudyErrors(t *testing.T) {
	url := studyMakeDemo(t)
	if code, _, errs := studyRunCLI(t, "study", "show", "nope", "--storage", url); code != ExitUsage || !strings.Contains(errs, "not found") {
		t.Fatalf("missing study: %d %q", code, errs)
	}
	if code, _, _ := studyRunCLI(t, "study", "export", "demo", "--storage", url, "--format", "xml"); code != ExitUsage {
		t.Fatalf("bad format: %d", code)
	}
	if code, _, _ := studyRunCLI(t, "study", "ls", "--storage", "mysql://x"); code != ExitFailure {
		t.Fatalf("bad storage: %d", code)
	}
	// A mistyped SQLite path is an error naming it, and no empty database
	// appears there.
	for _, storage := range []string{"typo.db", "sqlite:typo.db", "sqlite://"} {
		typo := filepath.Join(t.TempDir(), "typo.db")
		arg := strings.Replace(storage, "typo.db", typo, 1)
		if storage == "sqlite://" {
			arg = "sqlite://" + typo
		}
		for _, verb := range [][]string{{"study", "ls"}, {"study", "show", "demo"}, {"study", "export", "demo"}} {
			code, _, errs := studyRunCLI(t, append(verb, "--storage", arg)...)
			if code != ExitUsage || !strings.Contains(errs, typo) {
				t.Errorf("%v --storage %s: exit %d, stderr %q; want exit 2 naming the missing file", verb, arg, code, errs)
			}
		}
		if _, err := os.Stat(typo); !os.IsNotExist(err) {
			t.Errorf("--storage %s: a database was created (%v)", arg, err)
		}
	}
}

func TestSearchBench(t *testing.T) {
	code, out, errs := studyRunCLI(t, "search", "bench", "--problem", "zdt1", "--evaluations", "200", "--population", "20", "--seed", "3", "--json")
	if code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	var res struct {
		Problem     string      `json:"problem"`
		Front       [][]float64 `json:"front"`
		Reference   []float64   `json:"reference_point"`
		Hypervolume float64     `json:"hypervolume"`
		Evaluations int         `json:"evaluations"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Problem != "zdt1" || res.Evaluations != 200 || len(res.Front) == 0 || len(res.Reference) != 2 {
		t.Fatalf("%+v", res)
	}
	// Deterministic by seed.
	_, again, _ := studyRunCLI(t, "search", "bench", "--problem", "zdt1", "--evaluations", "200", "--population", "20", "--seed", "3", "--json")
	res2 := res
	if err := json.Unmarshal([]byte(again), &res2); err != nil {
		t.Fatal(err)
	}
	if res2.Hypervolume != res.Hypervolume || len(res2.Front) != len(res.Front) {
		t.Fatal("same seed, different result")
	}
	code, out, _ = studyRunCLI(t, "search", "bench", "--problem", "dtlz2", "--evaluations", "100", "--sampler", "random")
	if code != 0 || !strings.Contains(out, "reference point: [1.1 1.1 1.1]") {
		t.Fatalf("text: %d %s", code, out)
	}
	for _, args := range [][]string{
		{"--problem", "zdt9"}, {"--sampler", "cmaes"}, {"--evaluations", "0"}, {"--crossover", "pmx"},
	} {
		if code, _, _ := studyRunCLI(t, append([]string{"search", "bench"}, args...)...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
