package study

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spoc-project/spoc/search"
)

// claim is what a worker got from the study: a trial to run, nothing for
// now (others are still running trials and the budget is spent), or the
// end of the study.
type claim struct {
	trial *storedTrial
	// reused is a trial recorded, already finished, with the result of
	// an earlier trial it canonically duplicates.
	reused *storedTrial
	wait   bool
	done   bool
}

// loadStored reads the trials numbered from on with their bookkeeping, in
// number order.
func (s *Study) loadStored(ctx context.Context, q querier, from int) ([]storedTrial, error) {
	rows, err := q.QueryContext(ctx, s.db.rebind(`SELECT `+trialColumns+` FROM trials WHERE study_id = ? AND number >= ? ORDER BY number`), s.id, from)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []storedTrial
	for rows.Next() {
		t, err := s.scanTrial(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// claimTrial runs under the study lock: it re-queues stale trials, then
// claims the first WAITING trial, or samples and inserts a new RUNNING one
// while the budget lasts.
func (w *worker) claimTrial(ctx context.Context) (claim, error) {
	var c claim
	st := w.opt.Study
	err := st.db.inStudyTx(ctx, st, func(tx *sql.Tx) error {
		trials, err := w.refresh(ctx, tx)
		if err != nil {
			return fmt.Errorf("read trials: %w", err)
		}
		now := time.Now()
		reaped := false
		for _, t := range trials {
			if t.State == search.StateRunning && now.Sub(t.heartbeat) > w.opt.StaleAfter {
				reason := fmt.Sprintf("stale: no heartbeat from worker %q since %s", t.worker, t.heartbeat.Format(time.RFC3339Nano))
				n, err := st.requeue(ctx, tx, t, reason)
				if err != nil {
					return err
				}
				if n >= 0 {
					w.log.Warn("re-queued stale trial", "study", st.Name, "trial", t.Number, "as", n, "worker", t.worker)
				}
				reaped = true
			}
		}
		if reaped {
			if trials, err = w.refresh(ctx, tx); err != nil {
				return fmt.Errorf("read trials: %w", err)
			}
		}
		used, running := 0, 0
		var waiting *storedTrial
		for i := range trials {
			t := &trials[i]
			if !(t.State == search.StateFail && t.requeued) {
				used++
			}
			switch t.State {
			case search.StateRunning:
				running++
			case search.StateWaiting:
				if waiting == nil {
					waiting = t
				}
			}
		}
		if waiting != nil {
			res, err := tx.ExecContext(ctx, st.db.rebind(`UPDATE trials SET state = ?, worker = ?, datetime_start = ?, heartbeat = ? WHERE id = ? AND state = ?`),
				string(search.StateRunning), w.id, now.UnixNano(), now.UnixNano(), waiting.id, string(search.StateWaiting))
			if err != nil {
				return fmt.Errorf("claim trial %d: %w", waiting.Number, err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return fmt.Errorf("claim trial %d: lost to another worker", waiting.Number)
			}
			waiting.State, waiting.worker, waiting.Start, waiting.heartbeat = search.StateRunning, w.id, now.UTC(), now.UTC()
			c.trial = waiting
			return nil
		}
		if used >= w.opt.Trials {
			c.wait, c.done = running > 0, running == 0
			return nil
		}
		history := make([]search.Trial, len(trials))
		for i := range trials {
			history[i] = trials[i].Trial
		}
		gen := search.GenerationOf(w.opt.Sampler, history)
		p, dupOf, err := search.SampleDistinct(ctx, w.opt.Sampler, history, w.opt.Space, 0)
		if errors.Is(err, search.ErrExhausted) {
			c.wait, c.done = running > 0, running == 0
			return nil
		}
		if err != nil {
			return err
		}
		if dupOf >= 0 {
			// The sampler insists on a configuration already evaluated
			// (canonically): reuse that result instead of a server run.
			orig := &trials[dupOf]
			if !orig.State.Finished() {
				// Its result is not in yet; ask again once it is.
				c.wait = true
				return nil
			}
			return w.reuse(ctx, tx, &c, orig, p, gen, now)
		}
		t := storedTrial{Trial: search.Trial{Params: p, State: search.StateRunning, Generation: gen, Start: now.UTC()}, worker: w.id, heartbeat: now.UTC()}
		if t.id, t.Number, err = st.insertTrial(ctx, tx, t.Trial, w.id, true); err != nil {
			return err
		}
		c.trial = &t
		return nil
	})
	if err != nil {
		return claim{}, fmt.Errorf("claim a trial in study %q: %w", st.Name, err)
	}
	return c, nil
}

// AttrDuplicateOf is the system attribute of a trial that was not
// evaluated because its parameters are canonically those of an earlier
// trial (search.Space.CanonicalKey): it holds that trial's number, whose
// state, values, constraints and user attributes it carries.
const AttrDuplicateOf = "duplicate_of"

// reuse records a new trial with parameters p that copies the result of
// orig, a finished trial with the same canonical parameters, instead of
// evaluating p again. Call it under the study lock.
func (w *worker) reuse(ctx context.Context, tx *sql.Tx, c *claim, orig *storedTrial, p search.Params, gen int, now time.Time) error {
	st := w.opt.Study
	src := orig.Number
	if n, ok := orig.SystemAttrs[AttrDuplicateOf]; ok {
		// Point at the evaluated trial, not at another copy.
		if f, isNum := n.(float64); isNum {
			src = int(f)
		} else if i, isInt := n.(int); isInt {
			src = i
		}
	}
	t := storedTrial{Trial: search.Trial{Params: p, State: search.StateRunning, Generation: gen, Start: now.UTC(),
		SystemAttrs: map[string]any{AttrDuplicateOf: src}}, worker: w.id, heartbeat: now.UTC()}
	var err error
	if t.id, t.Number, err = st.insertTrial(ctx, tx, t.Trial, w.id, true); err != nil {
		return err
	}
	t.State, t.Values, t.Constraints = orig.State, orig.Values, orig.Constraints
	t.UserAttrs = orig.UserAttrs
	t.Complete = now.UTC()
	t.SystemAttrs["worker"] = w.id
	if reason, ok := orig.SystemAttrs["fail_reason"]; ok {
		t.SystemAttrs["fail_reason"] = reason
	}
	if err := w.finishTx(ctx, tx, &t); err != nil {
		return err
	}
	w.log.Info("trial reuses an earlier result", "study", st.Name, "trial", t.Number, "duplicate_of", src, "params", p)
	c.reused = &t
	return nil
}

// refresh brings the worker's copy of the study's trials up to date and
// returns it. Finished trials never change, so only trials from the first
// one not yet finished onwards are read again: the cost per claim stays
// proportional to the trials in flight, not to the study's size.
func (w *worker) refresh(ctx context.Context, q querier) ([]storedTrial, error) {
	from := len(w.cache)
	for i := range w.cache {
		if !w.cache[i].State.Finished() {
			from = i
			break
		}
	}
	fresh, err := w.opt.Study.loadStored(ctx, q, from)
	if err != nil {
		return nil, err
	}
	w.cache = w.cache[:from]
	for _, t := range fresh {
		if t.Number != len(w.cache) {
			// Numbers are dense from 0; anything else means the cache is
			// out of step (or the study was edited): read everything.
			all, err := w.opt.Study.loadStored(ctx, q, 0)
			if err != nil {
				return nil, err
			}
			w.cache = all
			return w.cache, nil
		}
		w.cache = append(w.cache, t)
	}
	return w.cache, nil
}

// requeue marks a RUNNING trial FAIL with reason and queues a WAITING copy
// (same parameters and generation) that re-runs its slot. It returns the
// copy's number, or -1 when the trial was no longer RUNNING (its worker
// finished it in the meantime) and nothing was queued. Call it under the
// study lock.
func (s *Study) requeue(ctx context.Context, tx *sql.Tx, t storedTrial, reason string) (int, error) {
	res, err := tx.ExecContext(ctx, s.db.rebind(`UPDATE trials SET state = ?, datetime_complete = ?, requeued = 1 WHERE id = ? AND state = ?`),
		string(search.StateFail), time.Now().UnixNano(), t.id, string(search.StateRunning))
	if err != nil {
		return 0, fmt.Errorf("fail trial %d: %w", t.Number, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, fmt.Errorf("fail trial %d: %w", t.Number, err)
	} else if n == 0 {
		return -1, nil
	}
	retry := search.Trial{Params: t.Params, State: search.StateWaiting, Generation: t.Generation,
		SystemAttrs: map[string]any{"retry_of": t.Number}}
	_, n, err := s.insertTrial(ctx, tx, retry, "", false)
	if err != nil {
		return 0, fmt.Errorf("re-queue trial %d: %w", t.Number, err)
	}
	attrs := mergeAttrs(t.SystemAttrs, map[string]any{"fail_reason": reason, "worker": t.worker, "requeued_as": n})
	sattrs, err := nullJSON(attrs)
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, s.db.rebind(`UPDATE trials SET system_attrs = ? WHERE id = ?`), sattrs, t.id); err != nil {
		return 0, fmt.Errorf("fail trial %d: %w", t.Number, err)
	}
	return n, nil
}

func mergeAttrs(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// heartbeat refreshes the trial's heartbeat; false means the trial is no
// longer this worker's (another worker found it stale and re-queued it).
func (w *worker) heartbeat(ctx context.Context, t *storedTrial) (bool, error) {
	st := w.opt.Study
	res, err := st.db.sql.ExecContext(ctx, st.db.rebind(`UPDATE trials SET heartbeat = ? WHERE id = ? AND state = ? AND worker = ?`),
		time.Now().UnixNano(), t.id, string(search.StateRunning), w.id)
	if err != nil {
		return true, fmt.Errorf("heartbeat of trial %d: %w", t.Number, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return true, fmt.Errorf("heartbeat of trial %d: %w", t.Number, err)
	}
	return n == 1, nil
}

// finish records a final state; false means the trial had already been
// taken away from this worker and the result was dropped.
func (w *worker) finish(ctx context.Context, t *storedTrial) (bool, error) {
	return w.finishWith(ctx, w.opt.Study.db.sql, t)
}

// finishTx is finish inside the study transaction tx, for a trial this
// worker inserted in it.
func (w *worker) finishTx(ctx context.Context, tx *sql.Tx, t *storedTrial) error {
	ok, err := w.finishWith(ctx, tx, t)
	if err == nil && !ok {
		err = fmt.Errorf("finish trial %d: not running in this worker", t.Number)
	}
	return err
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (w *worker) finishWith(ctx context.Context, db execer, t *storedTrial) (bool, error) {
	st := w.opt.Study
	values, err := nullJSON(t.Values)
	if err != nil {
		return false, fmt.Errorf("finish trial %d: values: %w", t.Number, err)
	}
	cons, err := nullJSON(t.Constraints)
	if err != nil {
		return false, fmt.Errorf("finish trial %d: constraints: %w", t.Number, err)
	}
	uattrs, err := nullJSON(t.UserAttrs)
	if err != nil {
		return false, fmt.Errorf("finish trial %d: user attributes: %w", t.Number, err)
	}
	sattrs, err := nullJSON(t.SystemAttrs)
	if err != nil {
		return false, fmt.Errorf("finish trial %d: system attributes: %w", t.Number, err)
	}
	res, err := db.ExecContext(ctx, st.db.rebind(`UPDATE trials SET state = ?, objective_values = ?, constraint_values = ?, datetime_complete = ?,
		user_attrs = ?, system_attrs = ?, artifacts = ? WHERE id = ? AND state = ? AND worker = ?`),
		string(t.State), values, cons, t.Complete.UnixNano(), uattrs, sattrs, t.Artifacts, t.id, string(search.StateRunning), w.id)
	if err != nil {
		return false, fmt.Errorf("finish trial %d: %w", t.Number, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("finish trial %d: %w", t.Number, err)
	}
	return n == 1, nil
}

// encodeAttrs checks that user attributes survive JSON; an attribute that
// does not is replaced by its error so the trial is still recorded.
func encodeAttrs(attrs map[string]any) map[string]any {
	for k, v := range attrs {
		if _, err := json.Marshal(v); err != nil {
			attrs[k] = fmt.Sprintf("unencodable %T: %v", v, err)
		}
	}
	return attrs
}
