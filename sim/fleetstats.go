package sim

// ReplicaStats is one replica over a run's measured window.
type ReplicaStats struct {
	// Requests were routed to the replica in the window.
	Requests int64 `json:"requests"`
	// PrefixQueries and PrefixHits are the prompt tokens the replica looked
	// up in its prefix cache and found there (vLLM's prefix_cache_queries
	// and _hits), HitRate their ratio (0 without queries).
	PrefixQueries int64   `json:"prefix_cache_queries"`
	PrefixHits    int64   `json:"prefix_cache_hits"`
	HitRate       float64 `json:"prefix_hit_rate"`
	// PromptTokens and GenerationTokens are the tokens it served.
	PromptTokens     int64 `json:"prompt_tokens"`
	GenerationTokens int64 `json:"generation_tokens"`
	// BusySeconds is its GPU step time in the window.
	BusySeconds float64 `json:"busy_seconds"`
	// Load is the time-averaged number of requests in flight on it (routed
	// and not yet answered).
	Load float64 `json:"load"`
}

// FleetStats is how the router spread a run over the replicas, over the
// measured window.
type FleetStats struct {
	Router   string         `json:"router"`
	Replicas []ReplicaStats `json:"replicas"`
	// HitRate is the fleet's prefix-cache hit rate (hits over queries of
	// all replicas).
	HitRate float64 `json:"prefix_hit_rate"`
	// Imbalance is max over mean of the replicas' Load (1: even; R: one
	// replica carries everything); RequestImbalance and BusyImbalance are
	// the same ratio of Requests and BusySeconds. 0 when the mean is 0.
	Imbalance        float64 `json:"imbalance"`
	RequestImbalance float64 `json:"request_imbalance"`
	BusyImbalance    float64 `json:"busy_imbalance"`
}

// fleetMeter measures FleetStats in a virtual run.
type fleetMeter struct {
	from, to float64 // measured window
	start    []EngineStats
	snapped  bool
	requests []int64
	inflight []int
	area     []float64
	last     []float64
}

func newFleetMeter(replicas int, from, to float64) *fleetMeter {
	return &fleetMeter{
		from: from, to: to,
		requests: make([]int64, replicas), inflight: make([]int, replicas),
		area: make([]float64, replicas), last: make([]float64, replicas),
	}
}

// advance integrates replica k's in-flight count up to t, inside the window.
func (m *fleetMeter) advance(k int, t float64) {
	t = min(t, m.to)
	if a := max(m.last[k], m.from); t > a {
		m.area[k] += float64(m.inflight[k]) * (t - a)
	}
	m.last[k] = max(m.last[k], t)
}

// routed counts a request sent to replica k at t.
func (m *fleetMeter) routed(k int, t float64) {
	m.advance(k, t)
	m.inflight[k]++
	if t >= m.from && t < m.to {
		m.requests[k]++
	}
}

// answered ends a request on replica k at t.
func (m *fleetMeter) answered(k int, t float64) {
	m.advance(k, t)
	m.inflight[k]--
}

// snapshot records the engines' counters when the window opens.
func (m *fleetMeter) snapshot(engines []*Engine) {
	m.start = make([]EngineStats, len(engines))
	for i, e := range engines {
		m.start[i] = e.Stats()
	}
	m.snapped = true
}

func (m *fleetMeter) stats(router string, engines []*Engine) FleetStats {
	fs := FleetStats{Router: router, Replicas: make([]ReplicaStats, len(engines))}
	var q, h int64
	loads := make([]float64, len(engines))
	reqs := make([]float64, len(engines))
	busy := make([]float64, len(engines))
	for i, e := range engines {
		m.advance(i, m.to)
		end := e.Stats()
		var st EngineStats
		if m.snapped {
			st = m.start[i]
		} else {
			st = end // the window never opened
		}
		rs := ReplicaStats{
			Requests:      m.requests[i],
			PrefixQueries: end.PrefixQueries - st.PrefixQueries, PrefixHits: end.PrefixHits - st.PrefixHits,
			PromptTokens: end.PromptTokens - st.PromptTokens, GenerationTokens: end.GenerationTokens - st.GenerationTokens,
			BusySeconds: end.BusySeconds - st.BusySeconds,
		}
		if rs.PrefixQueries > 0 {
			rs.HitRate = float64(rs.PrefixHits) / float64(rs.PrefixQueries)
		}
		if w := m.to - m.from; w > 0 {
			rs.Load = m.area[i] / w
		}
		q, h = q+rs.PrefixQueries, h+rs.PrefixHits
		loads[i], reqs[i], busy[i] = rs.Load, float64(rs.Requests), rs.BusySeconds
		fs.Replicas[i] = rs
	}
	if q > 0 {
		fs.HitRate = float64(h) / float64(q)
	}
	fs.Imbalance, fs.RequestImbalance, fs.BusyImbalance = Imbalance(loads), Imbalance(reqs), Imbalance(busy)
	return fs
}

// Imbalance is max(x) / mean(x), 0 for an empty or all-zero x.
func Imbalance(x []float64) float64 {
	var sum, hi float64
	for _, v := range x {
		sum += v
		hi = max(hi, v)
	}
	if sum <= 0 {
		return 0
	}
	return hi / (sum / float64(len(x)))
}
