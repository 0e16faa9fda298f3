package sim

import (
	"fmt"
	"math"
	"time"
)

// Replica states under an Autoscale.
const (
	replicaOff uint8 = iota
	replicaStarting
	replicaServing
	replicaDraining
)

// ScaleEvent is the fleet after a change: from At on, so many replicas
// serve, start and drain.
type ScaleEvent struct {
	At       float64 `json:"at_s"`
	Serving  int     `json:"serving"`
	Starting int     `json:"starting"`
	Draining int     `json:"draining"`
	// Desired is the policy's last answer, bounded.
	Desired int `json:"desired"`
}

// ScaleStats describes an autoscaled run.
type ScaleStats struct {
	// Events are the fleet's changes in time order, the first at 0.
	Events []ScaleEvent `json:"events"`
	// GPUSeconds are the GPUs held (start-up, serving and draining) over
	// the measured window; ReplicaSeconds the same in replicas.
	GPUSeconds     float64 `json:"gpu_seconds"`
	ReplicaSeconds float64 `json:"replica_seconds"`
	// PeakReplicas is the most replicas held at once.
	PeakReplicas int `json:"peak_replicas"`
	// Minutes describe the fleet in each minute of the measured window,
	// what explains a bad minute (docs/day.md, "The worst minutes").
	Minutes []ScaleMinute `json:"minutes"`
}

// ScaleMinute is the fleet in one minute of an autoscaled run.
type ScaleMinute struct {
	// Start is the minute's start, seconds since the window's start.
	Start float64 `json:"start_s"`
	// Routed are the requests sent to replicas in the minute; MaxRouted
	// the most one replica took; Replicas how many took any. Their
	// imbalance is MaxRouted × Replicas / Routed (1: even).
	Routed    int `json:"routed"`
	MaxRouted int `json:"max_routed"`
	Replicas  int `json:"replicas"`
	// PromptTokens and CachedTokens are the prompts of the requests
	// routed in the minute and the part the prefix caches served.
	PromptTokens int64 `json:"prompt_tokens"`
	CachedTokens int64 `json:"cached_tokens"`
	// Cold counts the replicas serving in the minute that began serving
	// (with an empty cache) in it or in the ColdWindow before it;
	// Starting those started and not yet serving at the minute's end.
	Cold     int `json:"cold_replicas"`
	Starting int `json:"starting"`
}

// ColdWindow is how long a replica counts as cold after it began serving
// (ScaleMinute.Cold): about the mean session of the reference workload's
// short profile, the time the sessions moved onto it take to rebuild
// their prefixes.
const ColdWindow = 5 * time.Minute

// minuteOf is the bin of the window's minute t falls in, or nil outside.
func (r *runner) minuteOf(t float64) *scaleMinute {
	s := r.scale
	if s == nil || t < r.warm || t >= r.end {
		return nil
	}
	m := int((t - r.warm) / 60)
	for len(s.minutes) <= m {
		s.minutes = append(s.minutes, scaleMinute{routed: make([]int32, len(s.state))})
	}
	return &s.minutes[m]
}

type scaleMinute struct {
	routed         []int32
	prompt, cached int64
}

// scaleRouted counts a request routed to replica k at t.
func (r *runner) scaleRouted(k int, t float64) {
	if m := r.minuteOf(t); m != nil {
		m.routed[k]++
	}
}

// scaleAnswered adds a finished request's prompt and cache hit to the
// minute it was routed in.
func (r *runner) scaleAnswered(req *Request) {
	if m := r.minuteOf(req.Arrival); m != nil {
		m.prompt += int64(req.PromptTokens)
		m.cached += int64(req.CachedTokens)
	}
}

// scaleMinutes turns the minutes' counts into ScaleMinutes; a replica's
// serving periods come from servingFrom (the start of its last period,
// -Inf for a replica warm from the start).
func (r *runner) scaleMinutes() []ScaleMinute {
	s := r.scale
	n := int(math.Ceil((r.end - r.warm) / 60))
	for len(s.minutes) < n {
		s.minutes = append(s.minutes, scaleMinute{routed: make([]int32, len(s.state))})
	}
	out := make([]ScaleMinute, n)
	for i, m := range s.minutes[:n] {
		o := &out[i]
		o.Start = float64(i) * 60
		o.PromptTokens, o.CachedTokens = m.prompt, m.cached
		for _, c := range m.routed {
			o.Routed += int(c)
			o.MaxRouted = max(o.MaxRouted, int(c))
			if c > 0 {
				o.Replicas++
			}
		}
		from, to := r.warm+o.Start, r.warm+o.Start+60
		for _, p := range s.periods {
			if p.cold && p.from < to && p.to > from && p.from > from-ColdWindow.Seconds() {
				o.Cold++
			}
		}
	}
	// replicas starting at each minute's end, from the events
	k := 0
	ev := s.stats.Events
	for i := range out {
		end := r.warm + out[i].Start + 60
		for k+1 < len(ev) && ev[k+1].At < end {
			k++
		}
		if len(ev) > 0 {
			out[i].Starting = ev[k].Starting
		}
	}
	return out
}

// servingPeriod is one stretch of a replica serving.
type servingPeriod struct {
	from, to float64
	cold     bool // began with an empty cache
}

// scaler is an autoscaled run's fleet state.
type scaler struct {
	a        Autoscale
	maxR, tp int
	state    []uint8
	readyAt  []float64
	nextSync float64
	desired  int
	last     float64 // time of the last accounting
	stats    ScaleStats
	minutes  []scaleMinute
	// periods are the replicas' serving stretches; open ones end at
	// +Inf, a replica's open one at open[k] (-1: none)
	periods []servingPeriod
	open    []int
}

// setState moves replica k to state st at t, keeping its serving periods.
func (s *scaler) setState(k int, st uint8, t float64) {
	if s.state[k] == replicaServing && st != replicaServing && s.open[k] >= 0 {
		s.periods[s.open[k]].to = t
		s.open[k] = -1
	}
	if st == replicaServing && s.state[k] != replicaServing {
		// a replica back from draining kept its cache; one from a
		// start-up, or warm from the run's start, is cold only then
		cold := s.state[k] != replicaDraining && !math.IsInf(t, -1)
		s.open[k] = len(s.periods)
		s.periods = append(s.periods, servingPeriod{from: t, to: math.Inf(1), cold: cold})
	}
	s.state[k] = st
}

func (r *runner) startScaler(a *Autoscale) error {
	n := len(r.c.engines)
	if err := a.validate(n); err != nil {
		return err
	}
	s := &scaler{a: *a, maxR: a.maxReplicas(n), tp: max(r.c.dep.TensorParallelSize, 1), state: make([]uint8, n), readyAt: make([]float64, n), open: make([]int, n)}
	for k := range s.open {
		s.open[k] = -1
	}
	if s.a.SyncPeriod == 0 {
		s.a.SyncPeriod = DefaultSyncPeriod
	}
	initial := a.InitialReplicas
	if initial == 0 {
		initial = a.MinReplicas
	}
	for k := range initial {
		s.setState(k, replicaServing, math.Inf(-1)) // warm from the start
	}
	s.desired = initial
	r.scale = s
	r.scaleEvent(0)
	return r.serveScaled()
}

// serveScaled gives the router the serving replicas.
func (r *runner) serveScaled() error {
	var serving []int
	for k, st := range r.scale.state {
		if st == replicaServing {
			serving = append(serving, k)
		}
	}
	if len(serving) == 0 {
		return fmt.Errorf("autoscale: no replica serves at %.0f s", r.scale.last)
	}
	return r.c.Serve(serving)
}

// scaleNext is when the scaler next acts: a sync or a replica's start.
func (r *runner) scaleNext() float64 {
	s := r.scale
	if s == nil {
		return math.Inf(1)
	}
	t := s.nextSync
	for k, st := range s.state {
		if st == replicaStarting {
			t = math.Min(t, s.readyAt[k])
		}
	}
	return t
}

func (s *scaler) counts() (serving, starting, draining int) {
	for _, st := range s.state {
		switch st {
		case replicaServing:
			serving++
		case replicaStarting:
			starting++
		case replicaDraining:
			draining++
		}
	}
	return
}

// account adds the GPU time held since the last change, inside the
// measured window.
func (r *runner) account(t float64) {
	s := r.scale
	a, b := math.Max(s.last, r.warm), math.Min(t, r.end)
	if b > a {
		sv, st, dr := s.counts()
		held := float64(sv + st + dr)
		s.stats.ReplicaSeconds += held * (b - a)
		s.stats.GPUSeconds += held * float64(s.tp) * (b - a)
	}
	s.last = math.Max(s.last, t)
}

// scaleEvent records the fleet as it is from t on.
func (r *runner) scaleEvent(t float64) {
	s := r.scale
	sv, st, dr := s.counts()
	s.stats.PeakReplicas = max(s.stats.PeakReplicas, sv+st+dr)
	ev := ScaleEvent{At: t, Serving: sv, Starting: st, Draining: dr, Desired: s.desired}
	if n := len(s.stats.Events); n > 0 && s.stats.Events[n-1].At == t {
		s.stats.Events[n-1] = ev
		return
	}
	s.stats.Events = append(s.stats.Events, ev)
}

// scaleAt applies what is due at t: replicas whose start-up ended begin
// serving (cold), and at a sync the policy's answer.
func (r *runner) scaleAt(t float64) error {
	s := r.scale
	r.account(t)
	changed := false
	for k, st := range s.state {
		if st == replicaStarting && s.readyAt[k] <= t {
			r.c.engines[k].ResetPrefixCache() // a started engine's cache is empty
			s.setState(k, replicaServing, t)
			changed = true
		}
	}
	if t >= s.nextSync {
		s.nextSync = t + s.a.SyncPeriod.Seconds()
		if r.resize(t) {
			changed = true
		}
	}
	if changed {
		r.scaleEvent(t)
		return r.serveScaled()
	}
	return nil
}

// resize asks the policy and adds or removes replicas; it reports whether
// the serving set changed.
func (r *runner) resize(t float64) bool {
	s := r.scale
	sv, st, dr := s.counts()
	sig := ScaleSignal{Now: t, Serving: sv, Starting: st, Draining: dr, Sessions: r.active}
	var kv float64
	for k, state := range s.state {
		if state == replicaServing {
			e := r.c.engines[k]
			sig.Waiting += e.NumWaiting()
			sig.Running += e.NumRunning()
			kv += e.KVUsage()
		}
	}
	if sv > 0 {
		sig.KVUsage = kv / float64(sv)
	}
	want := min(max(s.a.Policy.Desired(sig), s.a.MinReplicas), s.maxR)
	if want != s.desired {
		s.desired = want
		r.scaleEvent(t)
	}
	held := sv + st
	changed := false
	// grow: a draining replica serves again at once (still warm), then
	// off ones start
	for k := 0; k < len(s.state) && held < want; k++ {
		if s.state[k] == replicaDraining {
			s.setState(k, replicaServing, t)
			changed = true
			held++
		}
	}
	for k := 0; k < len(s.state) && held < want; k++ {
		if s.state[k] == replicaOff {
			s.state[k], s.readyAt[k] = replicaStarting, t+s.a.Startup.Seconds()
			held++
			if s.a.Startup == 0 {
				r.c.engines[k].ResetPrefixCache()
				s.setState(k, replicaServing, t)
				changed = true
			}
			r.scaleEvent(t)
		}
	}
	// shrink: cancel start-ups first, then drain the highest serving
	// replicas (consistent hashing moves only their sessions)
	for k := len(s.state) - 1; k >= 0 && held > want; k-- {
		if s.state[k] == replicaStarting {
			s.state[k] = replicaOff
			held--
			r.scaleEvent(t)
		}
	}
	for k := len(s.state) - 1; k >= 0 && held > want; k-- {
		if s.state[k] == replicaServing {
			s.setState(k, replicaDraining, t)
			changed = true
			held--
			r.drained(k, t)
		}
	}
	return changed
}

// drained stops replica k when it is draining and holds nothing.
func (r *runner) drained(k int, t float64) {
	s := r.scale
	if s == nil || s.state[k] != replicaDraining {
		return
	}
	if e := r.c.engines[k]; e.HasWork() || e.Busy() {
		return
	}
	r.account(t)
	s.state[k] = replicaOff
	r.scaleEvent(t)
}

// finishScale closes the accounting at the window's end.
func (r *runner) finishScale() *ScaleStats {
	if r.scale == nil {
		return nil
	}
	r.account(r.end)
	st := r.scale.stats
	st.Minutes = r.scaleMinutes()
	return &st
}
