package tune

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/study"
)

// AttrUsers is the trial attribute holding the user count the trial was
// evaluated at; a study keeps one load throughout.
const AttrUsers = "users"

// trialUsers returns the user count recorded with t, or 0.
func trialUsers(t search.Trial) int {
	switch v := t.UserAttrs[AttrUsers].(type) {
	case int:
		return v
	case int64:
		return int(v)
	case float64:
		return int(v)
	}
	return 0
}

// checkUsers refuses to continue a study at another load than its trials
// ran at: their objective values would not be comparable.
func checkUsers(ctx context.Context, st *study.Study, users int) error {
	trials, err := st.Trials(ctx)
	if err != nil {
		return err
	}
	for _, t := range trials {
		if u := trialUsers(t); u > 0 && u != users {
			return fmt.Errorf("study %q was evaluated at %d users (trial %d), not %d; use that load or another study name", st.Name, u, t.Number, users)
		}
	}
	return nil
}

// StudyUsers returns the user count the named study's trials were
// evaluated at, or 0 when the study does not exist or has no evaluated
// trial yet. A resumed study with an automatic load (search.users 0) keeps
// the load it started with instead of measuring a new one.
func StudyUsers(ctx context.Context, storage, name string) (int, error) {
	db, err := study.Open(ctx, storage)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	st, err := db.Load(ctx, name)
	if errors.Is(err, study.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	trials, err := st.Trials(ctx)
	if err != nil {
		return 0, err
	}
	for _, t := range trials {
		if u := trialUsers(t); u > 0 {
			return u, nil
		}
	}
	return 0, nil
}

// AttrFingerprint is the trial attribute holding the study's Fingerprint.
const AttrFingerprint = "fingerprint"

// checkFingerprint refuses to continue a study whose trials ran with
// another fingerprint, naming every field that changed.
func checkFingerprint(ctx context.Context, st *study.Study, fp map[string]string) error {
	if len(fp) == 0 {
		return nil
	}
	trials, err := st.Trials(ctx)
	if err != nil {
		return err
	}
	for _, t := range trials {
		stored, ok := t.UserAttrs[AttrFingerprint].(map[string]any)
		if !ok {
			continue
		}
		var changed []string
		keys := make([]string, 0, len(fp))
		for k := range fp {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if was, _ := stored[k].(string); was != fp[k] {
				changed = append(changed, fmt.Sprintf("%s %q → %q", k, was, fp[k]))
			}
		}
		if len(changed) > 0 {
			return fmt.Errorf("study %q ran its trials with another setup (%s): its results would not compare; use the same configuration or another study name",
				st.Name, strings.Join(changed, ", "))
		}
		return nil
	}
	return nil
}

// ErrNoTrial: the study has no trial of that number.
var ErrNoTrial = errors.New("no such trial")

// TrialParams returns the parameters of trial n of the study spec names
// (spoc sweep --trial N).
func TrialParams(ctx context.Context, spec Spec, n int) (map[string]any, error) {
	db, err := study.Open(ctx, spec.Storage)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	st, err := db.Load(ctx, spec.Study)
	if err != nil {
		return nil, err
	}
	trials, err := st.Trials(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range trials {
		if t.Number == n {
			return map[string]any(t.Params), nil
		}
	}
	return nil, fmt.Errorf("study %q: %w %d", spec.Study, ErrNoTrial, n)
}
