package study

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/spoc-project/spoc/search"
)

const trialColumns = `id, number, state, params, objective_values, constraint_values, generation,
	datetime_start, datetime_complete, heartbeat, worker, user_attrs, system_attrs, artifacts, requeued`

// storedTrial is a trial with its storage bookkeeping.
type storedTrial struct {
	search.Trial
	id        int64
	worker    string
	heartbeat time.Time
	requeued  bool
}

func (s *Study) scanTrial(row scanner) (storedTrial, error) {
	var (
		t                            storedTrial
		state, params                string
		values, cons, uattrs, sattrs sql.NullString
		start, complete, heartbeat   sql.NullInt64
		requeued                     int
	)
	if err := row.Scan(&t.id, &t.Number, &state, &params, &values, &cons, &t.Generation,
		&start, &complete, &heartbeat, &t.worker, &uattrs, &sattrs, &t.Artifacts, &requeued); err != nil {
		return t, err
	}
	t.State = search.TrialState(state)
	t.requeued = requeued != 0
	var raw search.Params
	if err := json.Unmarshal([]byte(params), &raw); err != nil {
		return t, fmt.Errorf("trial %d: decode params: %w", t.Number, err)
	}
	if np, err := s.Space.Normalize(raw); err == nil {
		t.Params = np
	} else {
		t.Params = raw
	}
	for _, f := range []struct {
		col  sql.NullString
		dst  any
		what string
	}{{values, &t.Values, "values"}, {cons, &t.Constraints, "constraints"}, {uattrs, &t.UserAttrs, "user attributes"}, {sattrs, &t.SystemAttrs, "system attributes"}} {
		if f.col.Valid && f.col.String != "" {
			if err := json.Unmarshal([]byte(f.col.String), f.dst); err != nil {
				return t, fmt.Errorf("trial %d: decode %s: %w", t.Number, f.what, err)
			}
		}
	}
	t.Start = nanos(start)
	t.Complete = nanos(complete)
	t.heartbeat = nanos(heartbeat)
	return t, nil
}

func nanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

func nullNanos(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

// nullJSON encodes v, or NULL for nil/empty slices and maps.
func nullJSON(v any) (sql.NullString, error) {
	switch x := v.(type) {
	case []float64:
		if len(x) == 0 {
			return sql.NullString{}, nil
		}
		for _, f := range x {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return sql.NullString{}, fmt.Errorf("non-finite value %v", f)
			}
		}
	case map[string]any:
		if len(x) == 0 {
			return sql.NullString{}, nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

// inStudyTx runs fn in a write transaction holding the study's lock: on
// SQLite the database write lock (BEGIN IMMEDIATE), on PostgreSQL the
// study row (SELECT … FOR UPDATE). Trial numbering, claiming and sampling
// happen under it, so concurrent workers never race.
func (db *DB) inStudyTx(ctx context.Context, s *Study, fn func(tx *sql.Tx) error) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if db.dialect == postgresDialect {
		var id int64
		if err := tx.QueryRowContext(ctx, `SELECT id FROM studies WHERE id = $1 FOR UPDATE`, s.id).Scan(&id); err != nil {
			return fmt.Errorf("lock study: %w", err)
		}
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// insertTrial adds t with the next trial number; a RUNNING trial is stamped
// with its worker, start time and first heartbeat. Call it inside
// inStudyTx.
func (s *Study) insertTrial(ctx context.Context, tx *sql.Tx, t search.Trial, worker string, running bool) (id int64, number int, err error) {
	var next int
	if err := tx.QueryRowContext(ctx, s.db.rebind(`SELECT COALESCE(MAX(number), -1) + 1 FROM trials WHERE study_id = ?`), s.id).Scan(&next); err != nil {
		return 0, 0, fmt.Errorf("next trial number: %w", err)
	}
	params, err := json.Marshal(t.Params)
	if err != nil {
		return 0, 0, fmt.Errorf("encode params: %w", err)
	}
	sattrs, err := nullJSON(t.SystemAttrs)
	if err != nil {
		return 0, 0, fmt.Errorf("encode system attributes: %w", err)
	}
	var start, hb sql.NullInt64
	if running {
		now := time.Now()
		start, hb = nullNanos(now), nullNanos(now)
	}
	err = tx.QueryRowContext(ctx, s.db.rebind(`INSERT INTO trials (study_id, number, state, params, generation, datetime_start, heartbeat, worker, system_attrs)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`), s.id, next, string(t.State), string(params), t.Generation, start, hb, worker, sattrs).Scan(&id)
	if err != nil {
		return 0, 0, fmt.Errorf("insert trial %d: %w", next, err)
	}
	return id, next, nil
}
