package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/spoc-project/spoc/workload"
)

// A fleet is a deployment's replicas behind a router. The router is a
// policy of the one cluster model (Cluster, driven by RunVirtual or by the
// HTTP server), not a second simulator: every policy sees the same engines
// on the same clock and only chooses where each request goes.
// docs/fleet.md describes each policy and the source it follows.

// Router policies (Fleet.Router).
const (
	// RouterLeastLoaded sends a request to the replica with the fewest
	// requests in flight (running plus waiting), the lowest index on ties:
	// the simulator's behaviour before fleets, and the default.
	RouterLeastLoaded = "least-loaded"
	// RouterRoundRobin sends request n to replica n mod R (HAProxy's
	// "balance roundrobin" with equal weights).
	RouterRoundRobin = "round-robin"
	// RouterSessionAffinity hashes the session key onto HAProxy's
	// consistent-hash ring ("balance hdr(X-Session-Id)", "hash-type
	// consistent"), optionally with bounded loads (hash-balance-factor).
	RouterSessionAffinity = "session-affinity"
	// RouterPrefixAware scores replicas as llm-d's inference scheduler does
	// with its precise-prefix-cache profile: 3 × the longest cached prefix
	// (min–max normalised) + 2 × the waiting queue (shortest best) + 2 ×
	// the free KV cache, highest score wins, ties at random.
	RouterPrefixAware = "prefix-aware"
	// RouterVLLMDataParallel is vLLM's internal data-parallel load
	// balancing (--data-parallel-size N behind one API server): the engine
	// with the lowest 4 × waiting + running, from counts the DP coordinator
	// publishes every 100 ms plus the front end's own assignments since.
	RouterVLLMDataParallel = "vllm-data-parallel"
	// RouterKubernetesService is a Kubernetes Service in front of the
	// replicas' pods: kube-proxy picks a pod per TCP connection, at random
	// (iptables and nftables modes), and the client's keep-alive pool reuses
	// its most recently idle connection for the next request.
	RouterKubernetesService = "kubernetes-service"
)

// RouterPolicies lists every router policy.
var RouterPolicies = []string{RouterLeastLoaded, RouterRoundRobin, RouterSessionAffinity, RouterPrefixAware,
	RouterVLLMDataParallel, RouterKubernetesService}

// Session keys (Fleet.SessionKey): what the session header identifies
// (workload.SessionKey).
const (
	// SessionKeyUser keeps a user on one replica across sessions.
	SessionKeyUser = workload.SessionKeyUser
	// SessionKeySession keys each of a user's sessions separately.
	SessionKeySession = workload.SessionKeySession
)

// DefaultSessionHeader is the header that carries the session key: the
// one spoc's HAProxy configuration hashes.
const DefaultSessionHeader = "X-Session-Id"

// SessionKey is the session header's value for a user's n-th session
// (workload.SessionKey, which the HTTP client sends too).
func SessionKey(by string, user, session int) string { return workload.SessionKey(by, user, session) }

// llm-d's precise-prefix-cache profile weights (guides/precise-prefix-cache-aware).
const (
	defaultPrefixWeight  = 3
	defaultQueueWeight   = 2
	defaultKVCacheWeight = 2
)

// Connection-pool defaults of spoc's load generator (loadgen.NewTransport,
// Go's net/http): idle connections are kept 90 s, as many as there are users.
const defaultIdleConnTimeout = 90.0

// vLLM's DP coordinator publishes load at most every 100 ms
// (vllm/v1/engine/coordinator.py, min_stats_update_interval_ms).
const defaultDPStatsInterval = 0.1

// Fleet says how a deployment's replicas are fronted. The zero value is the
// least-loaded router of the simulator before fleets, byte for byte.
type Fleet struct {
	// Router is one of RouterPolicies; empty means least-loaded.
	Router string
	// SessionKey is user or session (what the session header identifies);
	// empty means user.
	SessionKey string
	// Hash is session-affinity's hash-type; the zero value is HAProxy's
	// "hash-type consistent" (sdbm with avalanche).
	Hash HAProxyHash
	// HashBalanceFactor is HAProxy's hash-balance-factor for
	// session-affinity: 0 off, else a percentage above 100 (150: no replica
	// above 1.5 × the mean requests in flight).
	HashBalanceFactor int
	// Weights are the replicas' HAProxy server weights (1–256), in replica
	// order; empty means 1 each. Only session-affinity reads them.
	Weights []int
	// PrefixWeight, QueueWeight and KVCacheWeight weigh prefix-aware's
	// scorers; all zero means llm-d's 3, 2, 2.
	PrefixWeight, QueueWeight, KVCacheWeight float64
	// StatsInterval is vllm-data-parallel's seconds between load snapshots;
	// 0 means vLLM's 0.1.
	StatsInterval float64
	// IdleConnTimeout (seconds) and MaxIdleConns describe the client's
	// connection pool for kubernetes-service: 0 means spoc's load
	// generator, 90 s and no limit.
	IdleConnTimeout float64
	MaxIdleConns    int
	// Seed draws tie-breaks and kube-proxy's choices.
	Seed uint64
}

// Policy is the router's name, least-loaded when unset.
func (f Fleet) Policy() string {
	if f.Router == "" {
		return RouterLeastLoaded
	}
	return f.Router
}

// Validate reports the first invalid setting for a fleet of replicas,
// naming the fleet field (fleet.router, fleet.weights, ...).
func (f Fleet) Validate(replicas int) error {
	if !slices.Contains(RouterPolicies, f.Policy()) {
		return fmt.Errorf("fleet.router: unknown router %q (one of %s)", f.Router, strings.Join(RouterPolicies, ", "))
	}
	if f.SessionKey != "" && f.SessionKey != SessionKeyUser && f.SessionKey != SessionKeySession {
		return fmt.Errorf("fleet.session_key: must be %s or %s, got %q", SessionKeyUser, SessionKeySession, f.SessionKey)
	}
	if n := len(f.Weights); n > 0 && n != replicas {
		return fmt.Errorf("fleet.weights: %d weights for %d replicas", n, replicas)
	}
	for i, w := range f.Weights {
		if w < 1 || w > haproxyMaxWeight {
			return fmt.Errorf("fleet.weights[%d]: %d is not in [1, %d]", i, w, haproxyMaxWeight)
		}
	}
	if f.HashBalanceFactor != 0 && f.HashBalanceFactor <= 100 {
		return fmt.Errorf("fleet.hash_balance_factor: must be 0 (off) or above 100, got %d", f.HashBalanceFactor)
	}
	if fn := strings.ToLower(f.Hash.Function); fn != "" && !slices.Contains(HashFunctions, fn) {
		return fmt.Errorf("fleet.hash: unknown function %q (one of %s)", f.Hash.Function, strings.Join(HashFunctions, ", "))
	}
	for _, w := range []struct {
		name string
		v    float64
	}{{"prefix_weight", f.PrefixWeight}, {"queue_weight", f.QueueWeight}, {"kv_cache_weight", f.KVCacheWeight}} {
		if w.v < 0 || math.IsNaN(w.v) || math.IsInf(w.v, 0) {
			return fmt.Errorf("fleet.%s: must be a non-negative number, got %v", w.name, w.v)
		}
	}
	if f.StatsInterval < 0 || f.IdleConnTimeout < 0 || f.MaxIdleConns < 0 {
		return errors.New("fleet: stats_interval, idle_conn_timeout and max_idle_conns must not be negative")
	}
	return nil
}

// router is a policy's state over one cluster's engines.
type router interface {
	// route picks the replica of r, arriving at now.
	route(r *Request, now float64) int
	// release tells the router r's response on replica k ended.
	release(r *Request, k int, now float64)
}

var (
	_ router = (*leastLoaded)(nil)
	_ router = (*roundRobin)(nil)
	_ router = (*affinity)(nil)
	_ router = (*prefixAware)(nil)
	_ router = (*dataParallel)(nil)
	_ router = (*connPool)(nil)
)

func newRouter(f Fleet, engines []*Engine) (router, error) {
	return newRouterOver(f, engines, nil)
}

// newRouterOver builds f's router over engines, which are the replicas ids
// (nil: 0, 1, …) of the whole fleet: a consistent-hash ring keeps each
// replica's HAProxy server id, so a ring over fewer replicas moves only the
// missing ones' sessions, as HAProxy does when a server goes down.
func newRouterOver(f Fleet, engines []*Engine, ids []int) (router, error) {
	if ids != nil && len(f.Weights) > 0 {
		w := make([]int, len(ids))
		for i, id := range ids {
			w[i] = f.Weights[id]
		}
		f.Weights = w
	}
	if err := f.Validate(len(engines)); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(f.Seed, 0xf1ee7))
	switch f.Policy() {
	case RouterRoundRobin:
		return &roundRobin{n: len(engines)}, nil
	case RouterSessionAffinity:
		servers := make([]HAProxyServer, len(engines))
		for i := range servers {
			if len(f.Weights) > 0 {
				servers[i].Weight = f.Weights[i]
			}
			if ids != nil {
				servers[i].ID = ids[i] + 1 // HAProxy's own numbering of the whole fleet
			}
		}
		ring, err := NewHAProxyRing(servers, f.Hash, f.HashBalanceFactor)
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		a := &affinity{ring: ring, last: -1}
		if f.HashBalanceFactor > 0 {
			a.served = make([]int, len(engines))
		}
		return a, nil
	case RouterPrefixAware:
		p := &prefixAware{engines: engines, rng: rng, wPrefix: f.PrefixWeight, wQueue: f.QueueWeight, wKV: f.KVCacheWeight}
		if p.wPrefix == 0 && p.wQueue == 0 && p.wKV == 0 {
			p.wPrefix, p.wQueue, p.wKV = defaultPrefixWeight, defaultQueueWeight, defaultKVCacheWeight
		}
		p.prefix, p.waiting, p.kv = make([]int, len(engines)), make([]int, len(engines)), make([]float64, len(engines))
		return p, nil
	case RouterVLLMDataParallel:
		d := &dataParallel{engines: engines, interval: f.StatsInterval, next: math.Inf(-1)}
		if d.interval == 0 {
			d.interval = defaultDPStatsInterval
		}
		d.waiting, d.running = make([]int, len(engines)), make([]int, len(engines))
		return d, nil
	case RouterKubernetesService:
		k := &connPool{n: len(engines), rng: rng, timeout: f.IdleConnTimeout, maxIdle: f.MaxIdleConns}
		if k.timeout == 0 {
			k.timeout = defaultIdleConnTimeout
		}
		return k, nil
	}
	return &leastLoaded{engines: engines}, nil
}

// leastLoaded: fewest running plus waiting, the lowest index on ties.
type leastLoaded struct{ engines []*Engine }

func (l *leastLoaded) route(*Request, float64) int { return leastLoadedOf(l.engines) }

func (l *leastLoaded) release(*Request, int, float64) {}

func leastLoadedOf(engines []*Engine) int {
	best, load := 0, int(^uint(0)>>1)
	for i, e := range engines {
		if l := e.NumRunning() + e.NumWaiting(); l < load {
			best, load = i, l
		}
	}
	return best
}

// roundRobin: request n to replica n mod R.
type roundRobin struct{ n, next int }

func (r *roundRobin) route(*Request, float64) int {
	k := r.next
	r.next = (r.next + 1) % r.n
	return k
}

func (r *roundRobin) release(*Request, int, float64) {}

// affinity is HAProxy's consistent hashing on the session header.
type affinity struct {
	ring   *HAProxyRing
	served []int // requests in flight per replica, with a balance factor
	last   int   // ring node of the last round-robin fallback
}

func (a *affinity) route(r *Request, _ float64) int {
	k := a.ring.Pick(r.SessionKey, a.served)
	if k < 0 {
		// no header: HAProxy walks the ring round robin
		// (chash_get_next_server)
		a.last = (a.last + 1) % len(a.ring.keys)
		k = int(a.ring.server[a.last])
	}
	if a.served != nil {
		a.served[k]++
	}
	return k
}

func (a *affinity) release(_ *Request, k int, _ float64) {
	if a.served != nil {
		a.served[k]--
	}
}

// prefixAware is llm-d's weighted scorers with a max-score picker.
type prefixAware struct {
	engines              []*Engine
	rng                  *rand.Rand
	wPrefix, wQueue, wKV float64
	// the replicas' state for one request
	prefix, waiting []int
	kv              []float64
}

func (p *prefixAware) route(r *Request, _ float64) int {
	limit := max(r.PromptTokens-1, 0) / max(p.engines[0].p.BlockSize, 1)
	for i, e := range p.engines {
		p.prefix[i] = e.cachedPrefixBlocks(r.BlockHashes, limit)
		p.waiting[i] = e.NumWaiting()
		p.kv[i] = e.KVUsage()
	}
	return p.pick()
}

// pick scores the replicas' state and returns the best.
func (p *prefixAware) pick() int {
	// precise-prefix-cache-scorer: consecutive cached blocks from the
	// start on each replica, min–max normalised over the replicas that
	// hold any (all 1 when they tie), 0 where none is cached.
	lo, hi := math.MaxInt, -1
	for _, n := range p.prefix {
		if n > 0 {
			lo, hi = min(lo, n), max(hi, n)
		}
	}
	// queue-scorer: min–max of the waiting queue, shortest 1, all equal 1.
	qlo, qhi := math.MaxInt, math.MinInt
	for _, q := range p.waiting {
		qlo, qhi = min(qlo, q), max(qhi, q)
	}
	best, bestScore, ties := 0, math.Inf(-1), 0
	for i, n := range p.prefix {
		var s float64
		if n > 0 {
			if hi == lo {
				s = p.wPrefix
			} else {
				s = p.wPrefix * float64(n-lo) / float64(hi-lo)
			}
		}
		if qhi == qlo {
			s += p.wQueue
		} else {
			s += p.wQueue * float64(qhi-p.waiting[i]) / float64(qhi-qlo)
		}
		s += p.wKV * (1 - p.kv[i]) // kv-cache-utilization-scorer
		switch {
		case s > bestScore:
			best, bestScore, ties = i, s, 1
		case s == bestScore:
			// max-score-picker shuffles: a uniform choice among ties
			ties++
			if p.rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return best
}

func (p *prefixAware) release(*Request, int, float64) {}

// dataParallel is vLLM's DPLBAsyncMPClient.get_core_engine_for_request:
// the lowest 4·waiting + running from the coordinator's last published
// counts, the front end adding each assignment to its waiting count until
// the next publication.
type dataParallel struct {
	engines          []*Engine
	interval, next   float64
	waiting, running []int
}

func (d *dataParallel) route(_ *Request, now float64) int {
	if now >= d.next {
		// A publication: the engines' counts now. (The coordinator
		// publishes at most every interval; the state it publishes is at
		// most one engine step old.)
		for i, e := range d.engines {
			d.waiting[i], d.running[i] = e.NumWaiting(), e.NumRunning()
		}
		d.next = now + d.interval
	}
	best, score := 0, math.MaxInt
	for i := range d.engines {
		if s := 4*d.waiting[i] + d.running[i]; s < score {
			best, score = i, s
		}
	}
	d.waiting[best]++
	return best
}

func (d *dataParallel) release(*Request, int, float64) {}

// connPool is a client's keep-alive pool in front of a Kubernetes Service.
type connPool struct {
	n       int
	rng     *rand.Rand
	timeout float64
	maxIdle int
	conns   []int32 // replica of each connection ever opened
	idle    []idleConn
}

type idleConn struct {
	conn int32
	at   float64
}

func (c *connPool) route(r *Request, now float64) int {
	// Go's transport takes the most recently used idle connection and
	// discards ones idle longer than IdleConnTimeout on the way.
	for len(c.idle) > 0 {
		top := c.idle[len(c.idle)-1]
		c.idle = c.idle[:len(c.idle)-1]
		if now-top.at <= c.timeout {
			r.conn = top.conn
			return int(c.conns[top.conn])
		}
	}
	// A new connection: kube-proxy's iptables/nftables rules pick an
	// endpoint uniformly at random.
	k := c.rng.IntN(c.n)
	r.conn = int32(len(c.conns))
	c.conns = append(c.conns, int32(k))
	return k
}

func (c *connPool) release(r *Request, _ int, now float64) {
	if c.maxIdle > 0 && len(c.idle) >= c.maxIdle {
		return // the transport closes it
	}
	c.idle = append(c.idle, idleConn{conn: r.conn, at: now})
}

// Connections is how many connections a kubernetes-service router opened
// (for tests and reports); 0 for other policies.
func (c *Cluster) Connections() int {
	if p, ok := c.router.(*connPool); ok {
		return len(p.conns)
	}
	return 0
}

// Router is the cluster's router policy.
func (c *Cluster) Router() string { return c.dep.Fleet.Policy() }

// NeedsSessionKey reports whether the router reads Request.SessionKey.
func (c *Cluster) NeedsSessionKey() bool { return c.dep.Fleet.Policy() == RouterSessionAffinity }

// SessionKeyOf is the session key the cluster's fleet sends for a user's
// n-th session (SessionKey under Fleet.SessionKey).
func (c *Cluster) SessionKeyOf(user, session int) string {
	return SessionKey(c.dep.Fleet.SessionKey, user, session)
}

// Assign routes a new request with the cluster's router and remembers the
// replica on r; the caller then adds r to Engines()[k]. Every assigned
// request must be released once its response ends, however it ends.
func (c *Cluster) Assign(r *Request, now float64) int {
	k := c.router.route(r, now)
	if c.serving != nil {
		k = c.serving[k]
	}
	r.replica, r.routed, r.gen = int32(k), true, c.gen
	return k
}

// Serve makes the router spread requests over the given replicas only
// (ascending indexes into Engines), as when an autoscaler adds a started
// replica to the router or takes one out to drain it; nil serves all. The
// router is rebuilt over them: its own counters start afresh, and
// requests routed before are released to nobody.
func (c *Cluster) Serve(replicas []int) error {
	if replicas == nil {
		r, err := newRouter(c.dep.Fleet, c.engines)
		if err != nil {
			return err
		}
		c.router, c.serving = r, nil
		c.gen++
		return nil
	}
	if len(replicas) == 0 {
		return errors.New("serve: no replica")
	}
	engines := make([]*Engine, len(replicas))
	for i, k := range replicas {
		if k < 0 || k >= len(c.engines) || (i > 0 && k <= replicas[i-1]) {
			return fmt.Errorf("serve: replicas %v are not ascending indexes below %d", replicas, len(c.engines))
		}
		engines[i] = c.engines[k]
	}
	r, err := newRouterOver(c.dep.Fleet, engines, replicas)
	if err != nil {
		return err
	}
	c.router, c.serving = r, slices.Clone(replicas)
	c.gen++
	return nil
}

// Release tells the router that r's response ended (finished, failed or
// cancelled). Releasing a request twice, or one never assigned, does
// nothing.
func (c *Cluster) Release(r *Request, now float64) {
	if !r.routed {
		return
	}
	r.routed = false
	if r.gen != c.gen {
		return // routed by a router Serve has replaced
	}
	k := int(r.replica)
	if c.serving != nil {
		k = slices.Index(c.serving, k)
		if k < 0 {
			return
		}
	}
	c.router.release(r, k, now)
}

// cachedPrefixBlocks is how many of hashes' leading blocks (at most limit)
// the engine's prefix cache holds: what a request arriving now would hit.
func (e *Engine) cachedPrefixBlocks(hashes []uint64, limit int) int {
	if !e.pool.caching {
		return 0
	}
	e.probe, _, _ = e.pool.lookup(e.probe[:0], hashes, limit, nil, noOwner, true)
	return len(e.probe)
}
