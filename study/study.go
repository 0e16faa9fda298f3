package study

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spoc-project/spoc/search"
)

// ErrNotFound is returned when a named study does not exist.
var ErrNotFound = errors.New("study not found")

// Config declares a study. Name, Directions and Space are required.
type Config struct {
	Name       string
	Directions []search.Direction
	// Space is the searched space; its rules stay in memory (only their
	// names are stored).
	Space search.Space
	// Sampler names the sampler ("nsga2", "random", "grid"); SamplerConfig
	// is its JSON-encodable configuration, stored for display and reuse.
	Sampler       string
	SamplerConfig any
	Seed          uint64
}

// Study is a stored study.
type Study struct {
	db            *DB
	id            int64
	Name          string
	Directions    []search.Direction
	Space         search.Space
	Sampler       string
	SamplerConfig json.RawMessage
	Seed          uint64
	Created       time.Time
}

// DB returns the database holding the study.
func (s *Study) DB() *DB { return s.db }

// CreateOrLoad creates the study cfg describes, or loads it when a study of
// that name exists. Loading checks that the stored directions, parameter
// declarations, sampler and seed match cfg, so that the same command run
// again resumes the same search; a mismatch is an error naming the field.
// The returned Study carries cfg.Space, rules included.
func (db *DB) CreateOrLoad(ctx context.Context, cfg Config) (*Study, error) {
	if cfg.Name == "" {
		return nil, errors.New("create study: empty name")
	}
	if len(cfg.Directions) == 0 {
		return nil, fmt.Errorf("create study %q: no objective directions", cfg.Name)
	}
	if err := cfg.Space.Validate(); err != nil {
		return nil, fmt.Errorf("create study %q: %w", cfg.Name, err)
	}
	dirs, err := json.Marshal(cfg.Directions)
	if err != nil {
		return nil, fmt.Errorf("create study %q: %w", cfg.Name, err)
	}
	space, err := json.Marshal(cfg.Space)
	if err != nil {
		return nil, fmt.Errorf("create study %q: encode space: %w", cfg.Name, err)
	}
	scfg := []byte("{}")
	if cfg.SamplerConfig != nil {
		if scfg, err = json.Marshal(cfg.SamplerConfig); err != nil {
			return nil, fmt.Errorf("create study %q: encode sampler config: %w", cfg.Name, err)
		}
	}
	_, err = db.sql.ExecContext(ctx, db.rebind(`INSERT INTO studies (name, directions, space, sampler, sampler_config, seed, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`),
		cfg.Name, string(dirs), string(space), cfg.Sampler, string(scfg), int64(cfg.Seed), time.Now().UnixNano())
	if err != nil {
		return nil, fmt.Errorf("create study %q: %w", cfg.Name, err)
	}
	st, err := db.Load(ctx, cfg.Name)
	if err != nil {
		return nil, err
	}
	stored, _ := json.Marshal(st.Space.Params)
	want, _ := json.Marshal(cfg.Space.Params)
	switch {
	case !equalDirections(st.Directions, cfg.Directions):
		return nil, fmt.Errorf("study %q exists with directions %v, not %v; use another study name", cfg.Name, st.Directions, cfg.Directions)
	case !bytes.Equal(stored, want):
		return nil, fmt.Errorf("study %q exists with a different parameter space (stored %s); use another study name", cfg.Name, stored)
	case st.Sampler != cfg.Sampler:
		return nil, fmt.Errorf("study %q exists with sampler %q, not %q; use another study name", cfg.Name, st.Sampler, cfg.Sampler)
	case st.Seed != cfg.Seed:
		return nil, fmt.Errorf("study %q exists with seed %d, not %d; use another study name", cfg.Name, st.Seed, cfg.Seed)
	}
	st.Space = cfg.Space
	return st, nil
}

func equalDirections(a, b []search.Direction) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Load returns the named study (ErrNotFound if absent). Its Space holds the
// stored parameter declarations; rules are known by name only and always
// pass, so pass the original Space to Optimize to enforce them.
func (db *DB) Load(ctx context.Context, name string) (*Study, error) {
	row := db.sql.QueryRowContext(ctx, db.rebind(`SELECT id, name, directions, space, sampler, sampler_config, seed, created_at FROM studies WHERE name = ?`), name)
	st, err := db.scanStudy(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("load study %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load study %q: %w", name, err)
	}
	return st, nil
}

type scanner interface{ Scan(dest ...any) error }

func (db *DB) scanStudy(row scanner) (*Study, error) {
	var (
		st                 = &Study{db: db}
		dirs, space, scfg  string
		seed, createdNanos int64
	)
	if err := row.Scan(&st.id, &st.Name, &dirs, &space, &st.Sampler, &scfg, &seed, &createdNanos); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(dirs), &st.Directions); err != nil {
		return nil, fmt.Errorf("decode directions of study %q: %w", st.Name, err)
	}
	if err := json.Unmarshal([]byte(space), &st.Space); err != nil {
		return nil, fmt.Errorf("decode space of study %q: %w", st.Name, err)
	}
	st.SamplerConfig = json.RawMessage(scfg)
	st.Seed = uint64(seed)
	st.Created = time.Unix(0, createdNanos).UTC()
	return st, nil
}

// Summary describes a study for listings.
type Summary struct {
	Name       string                    `json:"name"`
	Directions []search.Direction        `json:"directions"`
	Sampler    string                    `json:"sampler"`
	Seed       uint64                    `json:"seed"`
	Created    time.Time                 `json:"created"`
	Trials     int                       `json:"trials"`
	States     map[search.TrialState]int `json:"states"`
}

// Studies lists every study with trial counts per state, by name.
func (db *DB) Studies(ctx context.Context) ([]Summary, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT id, name, directions, space, sampler, sampler_config, seed, created_at FROM studies ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list studies: %w", err)
	}
	var out []Summary
	ids := map[int64]int{}
	for rows.Next() {
		st, err := db.scanStudy(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("list studies: %w", err)
		}
		ids[st.id] = len(out)
		out = append(out, Summary{Name: st.Name, Directions: st.Directions, Sampler: st.Sampler, Seed: st.Seed, Created: st.Created, States: map[search.TrialState]int{}})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list studies: %w", err)
	}
	rows, err = db.sql.QueryContext(ctx, `SELECT study_id, state, COUNT(*) FROM trials GROUP BY study_id, state`)
	if err != nil {
		return nil, fmt.Errorf("list studies: count trials: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var state string
		var n int
		if err := rows.Scan(&id, &state, &n); err != nil {
			return nil, fmt.Errorf("list studies: count trials: %w", err)
		}
		if i, ok := ids[id]; ok {
			out[i].States[search.TrialState(state)] = n
			out[i].Trials += n
		}
	}
	return out, rows.Err()
}

// Trials returns every trial of the study in number order. Parameters are
// normalised to the study's Space when they fit it (ints as int, …).
func (s *Study) Trials(ctx context.Context) ([]search.Trial, error) {
	return s.trials(ctx, s.db.sql)
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *Study) trials(ctx context.Context, q querier) ([]search.Trial, error) {
	rows, err := q.QueryContext(ctx, s.db.rebind(`SELECT `+trialColumns+` FROM trials WHERE study_id = ? ORDER BY number`), s.id)
	if err != nil {
		return nil, fmt.Errorf("read trials of study %q: %w", s.Name, err)
	}
	defer rows.Close()
	var out []search.Trial
	for rows.Next() {
		t, err := s.scanTrial(rows)
		if err != nil {
			return nil, fmt.Errorf("read trials of study %q: %w", s.Name, err)
		}
		out = append(out, t.Trial)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read trials of study %q: %w", s.Name, err)
	}
	return out, nil
}

// Enqueue queues a WAITING trial with fixed parameters (checked against the
// space and its rules), to be evaluated by the next worker before any
// sampled trial — for example a known-good baseline configuration. It
// returns the trial number.
func (s *Study) Enqueue(ctx context.Context, p search.Params) (int, error) {
	np, err := s.Space.Check(p)
	if err != nil {
		return 0, fmt.Errorf("enqueue trial in study %q: %w", s.Name, err)
	}
	var number int
	err = s.db.inStudyTx(ctx, s, func(tx *sql.Tx) error {
		var err error
		_, number, err = s.insertTrial(ctx, tx, search.Trial{Params: np, State: search.StateWaiting}, "", false)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("enqueue trial in study %q: %w", s.Name, err)
	}
	return number, nil
}

// EnqueueFirst queues ps, in order, as the study's first trials (numbers
// 0, 1, …) when the study has no trial yet, and does nothing otherwise: so
// every worker of a shared study may call it at start-up and the seeds are
// queued exactly once. Each parameter set is checked against the space and
// its rules (an error names the one that fails); one canonically equal to
// an earlier one in ps is skipped. It returns the numbers of the queued
// trials (nil when the study already had trials).
func (s *Study) EnqueueFirst(ctx context.Context, ps []search.Params) ([]int, error) {
	checked := make([]search.Params, 0, len(ps))
	seen := make(map[string]bool, len(ps))
	for i, p := range ps {
		np, err := s.Space.Check(p)
		if err != nil {
			return nil, fmt.Errorf("enqueue first trials of study %q: parameter set %d: %w", s.Name, i, err)
		}
		if k := s.Space.CanonicalKey(np); !seen[k] {
			seen[k] = true
			checked = append(checked, np)
		}
	}
	var numbers []int
	err := s.db.inStudyTx(ctx, s, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, s.db.rebind(`SELECT COUNT(*) FROM trials WHERE study_id = ?`), s.id).Scan(&n); err != nil {
			return fmt.Errorf("count trials: %w", err)
		}
		if n > 0 {
			return nil
		}
		for _, p := range checked {
			_, number, err := s.insertTrial(ctx, tx, search.Trial{Params: p, State: search.StateWaiting}, "", false)
			if err != nil {
				return err
			}
			numbers = append(numbers, number)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue first trials of study %q: %w", s.Name, err)
	}
	return numbers, nil
}
