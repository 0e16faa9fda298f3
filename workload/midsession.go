package workload

import "math/rand/v2"

// MidSession wraps w so that every user's first session joins in progress:
// it starts at a turn drawn uniformly from the session's turns, with the
// earlier turns (their new content and replies) folded into the prefix. A
// run then starts near the steady state of a long-lived deployment, where
// users are spread over every stage of their sessions, instead of with every
// context at its minimum — otherwise the measured window's load depends on
// how long the run has been going. Later sessions are unchanged. The choice
// is a pure function of seed and user, so runs stay reproducible.
func MidSession(w Workload, seed uint64) Workload {
	return &midSession{Workload: w, seed: seed}
}

type midSession struct {
	Workload
	seed uint64
}

// Session returns src's session, joined in progress when n is 0.
func (m *midSession) Session(user, n int) (*Script, error) {
	s, err := m.Workload.Session(user, n)
	if err != nil || n != 0 || len(s.Turns) < 2 {
		return s, err
	}
	r := rand.New(rand.NewPCG(m.seed^0x6d69_6473_6573_7369, uint64(user)))
	k := r.IntN(len(s.Turns))
	if k == 0 {
		return s, nil
	}
	out := *s
	out.Prefix = make([]Segment, 0, len(s.Prefix)+2*k)
	out.Prefix = append(out.Prefix, s.Prefix...)
	for j := 0; j < k; j++ {
		out.Prefix = append(out.Prefix, s.Turns[j].NewContent...)
		if s.Turns[j].Reply.Tokens > 0 {
			out.Prefix = append(out.Prefix, s.Turns[j].Reply)
		}
	}
	out.Turns = s.Turns[k:]
	return &out, nil
}

// OpenForRun opens the workload a load run replays: Open, wrapped in
// MidSession when the run starts users mid-session (run.mid_session_start).
// Imported traces are replayed as recorded.
func OpenForRun(cfg Spec, maxModelLen int, midSession bool) (Workload, error) {
	w, err := Open(cfg, maxModelLen)
	if err != nil {
		return nil, err
	}
	if midSession && cfg.Import == nil {
		w = MidSession(w, cfg.Seed)
	}
	return w, nil
}
