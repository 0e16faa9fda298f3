package study

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/nsga2"
)

// BenchmarkTrialOverhead2000 measures the storage and sampling work per
// trial — claim (read every trial, NSGA-II sample under the study lock,
// insert) plus finish — in a SQLite study that already holds 2,000
// completed trials: the bookkeeping cost a trial pays on top of its
// objective.
func BenchmarkTrialOverhead2000(b *testing.B) {
	db, _ := openSQLite(b)
	ctx := context.Background()
	cfg := testConfig("bench")
	cfg.Sampler = "nsga2"
	st, err := db.CreateOrLoad(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	const pop = 40
	r := rand.New(rand.NewPCG(1, 1))
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour)
	for i := 0; i < 2000; i++ {
		p := search.Params{}
		for _, sp := range st.Space.Params {
			p[sp.Name] = sp.Uniform(r)
		}
		if _, err := st.Space.Check(p); err != nil {
			p["mode"] = "a"
		}
		v, c, _ := objective(ctx, &search.TrialContext{Params: p})
		pj, _ := json.Marshal(p)
		vj, _ := json.Marshal(v)
		cj, _ := json.Marshal(c)
		at := t0.Add(time.Duration(i) * time.Millisecond).UnixNano()
		if _, err := tx.Exec(`INSERT INTO trials (study_id, number, state, params, objective_values, constraint_values, generation, datetime_start, datetime_complete, heartbeat, worker)
			VALUES (?, ?, 'COMPLETE', ?, ?, ?, ?, ?, ?, ?, 'seed')`, st.id, i, string(pj), string(vj), string(cj), i/pop, at, at, at); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	sampler, _ := nsga2.New(nsga2.Options{PopulationSize: pop, Directions: twoMin, Seed: 1})
	w := &worker{opt: fastOptions(st, 1<<30), id: "bench", log: discard()}
	w.opt.Sampler, w.opt.Space = sampler, st.Space
	b.ResetTimer()
	for b.Loop() {
		c, err := w.claimTrial(ctx)
		if err != nil || c.trial == nil {
			b.Fatalf("claim: %+v %v", c, err)
		}
		c.trial.Values, c.trial.Constraints, _ = objective(ctx, &search.TrialContext{Params: c.trial.Params})
		c.trial.State, c.trial.Complete = search.StateComplete, time.Now()
		if ok, err := w.finish(ctx, c.trial); !ok || err != nil {
			b.Fatalf("finish: %v %v", ok, err)
		}
	}
}
