package study

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/nsga2"
	"github.com/spoc-project/spoc/search/random"
)

func testSpace() search.Space {
	s := search.Space{Params: []search.Param{
		search.Float("x", 0, 1),
		search.IntLog("n", 1, 64),
		search.Categorical("mode", "a", "b"),
	}}
	return s.WithRule("n_small_when_b", func(p search.Params) error {
		if p.String("mode") == "b" && p.Int("n") > 32 {
			return fmt.Errorf("n %d > 32 with mode b", p.Int("n"))
		}
		return nil
	})
}

var twoMin = []search.Direction{search.Minimize, search.Minimize}

func testConfig(name string) Config {
	return Config{Name: name, Directions: twoMin, Space: testSpace(), Sampler: "random", Seed: 1}
}

// objective is a cheap two-objective function of testSpace.
func objective(_ context.Context, tc *search.TrialContext) ([]float64, []float64, error) {
	p := tc.Params
	x := p.Float("x")
	g := 1 + float64(p.Int("n"))/64
	if p.String("mode") == "b" {
		g += 0.5
	}
	return []float64{x, g * (1 - x*x)}, []float64{0.2 - x}, nil
}

func openSQLite(t testing.TB) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "study.db")
	db, err := Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func fastOptions(st *Study, n int) Options {
	return Options{Study: st, Sampler: random.New(st.Seed), Objective: objective, Trials: n,
		HeartbeatInterval: 20 * time.Millisecond, StaleAfter: 200 * time.Millisecond, PollInterval: 10 * time.Millisecond}
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		in      string
		dialect dialect
		prefix  string
		bad     bool
	}{
		{"sqlite:/tmp/a.db", sqliteDialect, "file:/tmp/a.db?", false},
		{"sqlite:rel/a.db", sqliteDialect, "file:rel/a.db?", false},
		{"sqlite:///tmp/a.db", sqliteDialect, "file:/tmp/a.db?", false},
		{"study.db", sqliteDialect, "file:study.db?", false},
		{"postgres://u:p@localhost:5432/db?sslmode=disable", postgresDialect, "postgres://", false},
		{"postgresql://localhost/db", postgresDialect, "postgresql://", false},
		{"mysql://x", 0, "", true},
		{"", 0, "", true},
		{"sqlite:", 0, "", true},
		{"sqlite:a.db?mode=ro", 0, "", true},
	}
	for _, tt := range tests {
		d, dsn, err := parseURL(tt.in)
		if (err != nil) != tt.bad {
			t.Errorf("%q: err %v", tt.in, err)
			continue
		}
		if !tt.bad && (d != tt.dialect || !strings.HasPrefix(dsn, tt.prefix)) {
			t.Errorf("%q: got %v %q", tt.in, d, dsn)
		}
	}
	if got := redact("postgres://bob:secret@h/db"); strings.Contains(got, "secret") {
		t.Errorf("password not redacted: %s", got)
	}
}

func TestRebind(t *testing.T) {
	db := &DB{dialect: postgresDialect}
	if got := db.rebind("a = ? AND b IN (?, ?)"); got != "a = $1 AND b IN ($2, $3)" {
		t.Fatal(got)
	}
}

func TestOpenTwiceMigratesOnce(t *testing.T) {
	db, path := openSQLite(t)
	if _, err := db.CreateOrLoad(context.Background(), testConfig("s")); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	var n int
	if err := db2.sql.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("schema_migrations rows = %d (%v)", n, err)
	}
	var mode string
	if err := db2.sql.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal mode %q (%v)", mode, err)
	}
}

func TestCreateOrLoadChecksCompatibility(t *testing.T) {
	db, _ := openSQLite(t)
	ctx := context.Background()
	st, err := db.CreateOrLoad(ctx, testConfig("s"))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Space.Rules) != 1 || st.Space.Rules[0].Check == nil {
		t.Fatal("rules of cfg.Space lost")
	}
	again, err := db.CreateOrLoad(ctx, testConfig("s"))
	if err != nil || again.id != st.id {
		t.Fatalf("reload: %v", err)
	}
	for field, mod := range map[string]func(*Config){
		"directions": func(c *Config) { c.Directions = []search.Direction{search.Maximize, search.Minimize} },
		"space":      func(c *Config) { c.Space.Params[0] = search.Float("x", 0, 2) },
		"sampler":    func(c *Config) { c.Sampler = "nsga2" },
		"seed":       func(c *Config) { c.Seed = 2 },
	} {
		c := testConfig("s")
		mod(&c)
		if _, err := db.CreateOrLoad(ctx, c); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s mismatch: %v", field, err)
		}
	}
	if _, err := db.Load(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing study: %v", err)
	}
}

func TestOptimizeAndResume(t *testing.T) {
	db, _ := openSQLite(t)
	ctx := context.Background()
	st, _ := db.CreateOrLoad(ctx, testConfig("s"))
	var progress []Progress
	opt := fastOptions(st, 6)
	opt.Progress = func(p Progress) { progress = append(progress, p) }
	opt.ArtifactsRoot = t.TempDir()
	res, err := Optimize(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ran != 6 || res.Complete != 6 {
		t.Fatalf("result %+v", res)
	}
	if len(progress) != 6 || progress[5].Finished != 6 || progress[5].Total != 6 {
		t.Fatalf("progress %+v", progress)
	}
	// Same command with a larger budget continues; with the same budget it
	// does nothing.
	opt.Trials = 10
	if res, err = Optimize(ctx, opt); err != nil || res.Ran != 4 {
		t.Fatalf("resume: %+v %v", res, err)
	}
	if res, err = Optimize(ctx, opt); err != nil || res.Ran != 0 {
		t.Fatalf("rerun at budget: %+v %v", res, err)
	}
	trials, err := st.Trials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != 10 {
		t.Fatalf("%d trials", len(trials))
	}
	for i, tr := range trials {
		if tr.Number != i || tr.State != search.StateComplete || len(tr.Values) != 2 || len(tr.Constraints) != 1 {
			t.Fatalf("trial %d: %+v", i, tr)
		}
		if _, err := st.Space.Check(tr.Params); err != nil {
			t.Fatalf("trial %d params %v: %v", i, tr.Params, err)
		}
		if _, ok := tr.Params["n"].(int); !ok {
			t.Fatalf("trial %d: n decoded as %T", i, tr.Params["n"])
		}
		if tr.Start.IsZero() || tr.Complete.Before(tr.Start) || tr.SystemAttrs["worker"] == nil {
			t.Fatalf("trial %d bookkeeping: %+v", i, tr)
		}
		if !strings.HasSuffix(tr.Artifacts, fmt.Sprintf("trial-%05d", i)) {
			t.Fatalf("trial %d artifacts %q", i, tr.Artifacts)
		}
	}
}

func TestObjectiveOutcomes(t *testing.T) {
	db, _ := openSQLite(t)
	ctx := context.Background()
	st, _ := db.CreateOrLoad(ctx, testConfig("s"))
	calls := 0
	opt := fastOptions(st, 5)
	opt.Objective = func(ctx context.Context, tc *search.TrialContext) ([]float64, []float64, error) {
		calls++
		tc.SetUserAttr("call", calls)
		switch calls {
		case 1:
			return nil, nil, fmt.Errorf("server OOM: %w", search.ErrInfeasible)
		case 2:
			return nil, nil, errors.New("boom")
		case 3:
			return []float64{1}, nil, nil // wrong arity
		case 4:
			return []float64{1, 1}, []float64{nanValue()}, nil
		}
		return objective(ctx, tc)
	}
	res, err := Optimize(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Infeasible != 1 || res.Failed != 3 || res.Complete != 1 {
		t.Fatalf("result %+v", res)
	}
	trials, _ := st.Trials(ctx)
	want := []search.TrialState{search.StateInfeasible, search.StateFail, search.StateFail, search.StateFail, search.StateComplete}
	for i, tr := range trials {
		if tr.State != want[i] {
			t.Errorf("trial %d: state %s, want %s", i, tr.State, want[i])
		}
		if tr.UserAttrs["call"] != float64(i+1) {
			t.Errorf("trial %d: user attrs %v", i, tr.UserAttrs)
		}
		if tr.State != search.StateComplete && tr.SystemAttrs["fail_reason"] == nil {
			t.Errorf("trial %d: no fail reason", i)
		}
	}
	if r := trials[1].SystemAttrs["fail_reason"]; r != "boom" {
		t.Errorf("fail reason %v", r)
	}
}

func nanValue() float64 { var z float64; return z / z }

func TestStaleTrialRequeued(t *testing.T) {
	db, _ := openSQLite(t)
	ctx := context.Background()
	st, _ := db.CreateOrLoad(ctx, testConfig("s"))
	// A worker that claims a trial and dies.
	dead := &worker{opt: fastOptions(st, 3), id: "dead", log: discard()}
	dead.opt.Space = st.Space
	c, err := dead.claimTrial(ctx)
	if err != nil || c.trial == nil {
		t.Fatalf("claim: %+v %v", c, err)
	}
	deadParams := c.trial.Params
	res, err := Optimize(ctx, fastOptions(st, 3))
	if err != nil {
		t.Fatal(err)
	}
	if res.Complete != 3 {
		t.Fatalf("result %+v", res)
	}
	trials, _ := st.Trials(ctx)
	if len(trials) != 4 {
		t.Fatalf("%d trials, want 4 (3 complete + the dead one)", len(trials))
	}
	if trials[0].State != search.StateFail || !strings.HasPrefix(fmt.Sprint(trials[0].SystemAttrs["fail_reason"]), "stale") {
		t.Fatalf("dead trial: %+v", trials[0])
	}
	rerun := int(trials[0].SystemAttrs["requeued_as"].(float64))
	if trials[rerun].State != search.StateComplete || trials[rerun].Params.Key() != deadParams.Key() || trials[rerun].SystemAttrs["retry_of"] != float64(0) {
		t.Fatalf("re-run trial %d: %+v (dead params %v)", rerun, trials[rerun], deadParams)
	}
}

func TestInterruptRequeues(t *testing.T) {
	db, _ := openSQLite(t)
	st, _ := db.CreateOrLoad(context.Background(), testConfig("s"))
	ctx, cancel := context.WithCancel(context.Background())
	opt := fastOptions(st, 3)
	opt.Objective = func(ctx context.Context, tc *search.TrialContext) ([]float64, []float64, error) {
		cancel()
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	res, err := Optimize(ctx, opt)
	if !errors.Is(err, context.Canceled) || !res.Interrupted {
		t.Fatalf("%+v %v", res, err)
	}
	trials, _ := st.Trials(context.Background())
	if len(trials) != 2 || trials[0].State != search.StateFail || trials[1].State != search.StateWaiting {
		t.Fatalf("after interrupt: %+v", trials)
	}
	// Resuming runs the queued slot first and reaches 3 finished trials.
	res, err = Optimize(context.Background(), fastOptions(st, 3))
	if err != nil || res.Complete != 3 {
		t.Fatalf("resume %+v %v", res, err)
	}
	trials, _ = st.Trials(context.Background())
	if trials[1].State != search.StateComplete || trials[1].Params.Key() != trials[0].Params.Key() {
		t.Fatalf("queued slot not re-run first: %+v", trials[1])
	}
}

func TestEnqueue(t *testing.T) {
	db, _ := openSQLite(t)
	ctx := context.Background()
	st, _ := db.CreateOrLoad(ctx, testConfig("s"))
	if _, err := st.Enqueue(ctx, search.Params{"x": 0.5, "n": 40, "mode": "b"}); err == nil {
		t.Fatal("rule-breaking params enqueued")
	}
	n, err := st.Enqueue(ctx, search.Params{"x": 0.5, "n": 4, "mode": "b"})
	if err != nil || n != 0 {
		t.Fatal(n, err)
	}
	if _, err := Optimize(ctx, fastOptions(st, 2)); err != nil {
		t.Fatal(err)
	}
	trials, _ := st.Trials(ctx)
	if trials[0].Params.Int("n") != 4 || trials[0].State != search.StateComplete {
		t.Fatalf("enqueued trial %+v", trials[0])
	}
}

func TestConcurrentWorkersSQLite(t *testing.T) {
	db, _ := openSQLite(t)
	ctx := context.Background()
	cfg := testConfig("s")
	cfg.Sampler = "nsga2"
	st, _ := db.CreateOrLoad(ctx, cfg)
	sampler, err := nsga2.New(nsga2.Options{PopulationSize: 6, Directions: twoMin, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opt := fastOptions(st, 40)
			opt.StaleAfter = time.Minute // no dead workers here; lock waits must not look like deaths
			opt.Sampler = sampler
			opt.Worker = fmt.Sprintf("w%d", i)
			_, errs[i] = Optimize(ctx, opt)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	trials, _ := st.Trials(ctx)
	checkExactlyComplete(t, trials, 40, false)
	checkGenerations(t, trials, 6)
}

// checkExactlyComplete asserts n COMPLETE trials with consecutive numbers; with
// distinctParams also that no parameter set ran twice (true for random
// sampling of a continuous parameter, where a duplicate means a slot ran
// twice).
func checkExactlyComplete(t *testing.T, trials []search.Trial, n int, distinctParams bool) {
	t.Helper()
	seen := map[string]int{}
	for i, tr := range trials {
		if tr.Number != trials[0].Number+i {
			t.Fatalf("trial at %d has number %d", i, tr.Number)
		}
		if tr.State != search.StateComplete {
			t.Fatalf("trial %d is %s: %v", tr.Number, tr.State, tr.SystemAttrs)
		}
		if j, dup := seen[tr.Params.Key()]; dup && distinctParams {
			t.Fatalf("trials %d and %d have the same parameters", j, tr.Number)
		}
		seen[tr.Params.Key()] = tr.Number
	}
	if len(trials) != n {
		t.Fatalf("%d trials, want %d", len(trials), n)
	}
}

// checkGenerations asserts NSGA-II bookkeeping: generations start at 0 and
// never skip, and a trial of generation g > 0 started only after pop
// trials of generation g-1 had completed.
func checkGenerations(t *testing.T, trials []search.Trial, pop int) {
	t.Helper()
	maxGen := 0
	for _, tr := range trials {
		if tr.Generation > maxGen+1 {
			t.Fatalf("trial %d jumps to generation %d", tr.Number, tr.Generation)
		}
		maxGen = max(maxGen, tr.Generation)
		if tr.Generation == 0 {
			continue
		}
		done := 0
		for _, p := range trials {
			if p.Generation == tr.Generation-1 && p.State == search.StateComplete && !p.Complete.After(tr.Start) {
				done++
			}
		}
		if done < pop {
			t.Fatalf("trial %d (generation %d) started when only %d trials of generation %d were complete", tr.Number, tr.Generation, done, tr.Generation-1)
		}
	}
	if maxGen == 0 {
		t.Fatal("no generation after 0")
	}
}

// TestRequeueFinishedTrialIsNoop: a reaper racing a worker that has just
// finished must not queue a re-run of a trial that completed.
func TestRequeueFinishedTrialIsNoop(t *testing.T) {
	db, _ := openSQLite(t)
	ctx := context.Background()
	st, _ := db.CreateOrLoad(ctx, testConfig("s"))
	if _, err := Optimize(ctx, fastOptions(st, 1)); err != nil {
		t.Fatal(err)
	}
	w := &worker{opt: fastOptions(st, 1), id: "reaper", log: discard()}
	trials, err := w.refresh(ctx, db.sql)
	if err != nil || len(trials) != 1 {
		t.Fatal(trials, err)
	}
	err = db.inStudyTx(ctx, st, func(tx *sql.Tx) error {
		n, err := st.requeue(ctx, tx, trials[0], "test")
		if n != -1 {
			t.Errorf("requeue of a COMPLETE trial returned %d", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := st.Trials(ctx)
	if len(after) != 1 || after[0].State != search.StateComplete {
		t.Fatalf("trials after no-op requeue: %+v", after)
	}
}
