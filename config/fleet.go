package config

import (
	"strings"

	"github.com/spoc-project/spoc/sim"
)

// Fleet says what stands in front of the deployment's replicas: the router
// the simulated cluster models, the one spoc starts in front of a process
// fleet (HAProxy), or the one a Service or gateway already is (kubernetes,
// external). The replicas are engine.gpus / engine.tensor_parallel_size
// (sim.ReplicasOf, docs/fleet.md).
type Fleet struct {
	Router            string `yaml:"router,omitempty" doc:"Router policy in front of the replicas: least-loaded, round-robin, session-affinity, prefix-aware, vllm-data-parallel, kubernetes-service (docs/fleet.md). Empty keeps each engine's behaviour before fleets: the simulator least-loaded, process one vLLM server with --data-parallel-size. On process, round-robin, least-loaded and session-affinity start one server per replica behind HAProxy."`
	SessionKey        string `yaml:"session_key" doc:"What the session header identifies: user (a user's sessions stay on one replica) or session (each session keyed on its own)."`
	SessionHeader     string `yaml:"session_header" doc:"HTTP header every request carries with its session key (u<user> or u<user>-s<session>); session-affinity hashes it, live and simulated alike."`
	HashBalanceFactor int    `yaml:"hash_balance_factor,omitempty" doc:"Bounded loads for session-affinity (HAProxy hash-balance-factor): 0 off, else a percentage above 100; 150 lets no replica carry more than 1.5 × the mean requests in flight."`
	Replicas          int    `yaml:"replicas,omitempty" doc:"How many replicas stand behind the router, stated for checking: must divide engine.gpus and equal engine.gpus / engine.tensor_parallel_size; 0 derives it."`
	HAProxy           string `yaml:"haproxy" doc:"HAProxy binary spoc starts in front of a process fleet (apt-get install haproxy)."`
}

// DefaultSessionHeader is the header that carries the session key.
const DefaultSessionHeader = sim.DefaultSessionHeader

// DefaultFleet is the router of each engine before fleets (Router empty),
// keyed by user on X-Session-Id.
func DefaultFleet() Fleet {
	return Fleet{SessionKey: sim.SessionKeyUser, SessionHeader: DefaultSessionHeader, HAProxy: "haproxy"}
}

// Routers spoc can start HAProxy for in front of a process fleet (haproxy
// balance roundrobin, leastconn, hdr(...) with hash-type consistent).
var haproxyRouters = []string{sim.RouterRoundRobin, sim.RouterLeastLoaded, sim.RouterSessionAffinity}

// haproxyFronted reports whether the process launcher starts one server
// per replica behind HAProxy: a process engine of several replicas whose
// router is one HAProxy implements.
func haproxyFronted(e Engine, f Fleet) bool {
	return e.Kind == EngineProcess && oneOf(f.Router, haproxyRouters) && e.replicas() > 1
}

// replicas is the engine section's replica count (sim.ReplicasOf), 0 when
// the sizes are invalid (validate reports them).
func (e Engine) replicas() int {
	r, err := sim.ReplicasOf(e.GPUs, e.TensorParallelSize)
	if err != nil || e.GPUs < 1 || e.TensorParallelSize < 1 {
		return 0
	}
	return r
}

// Sim is the fleet as the simulated cluster runs it.
func (f Fleet) Sim() sim.Fleet {
	return sim.Fleet{Router: f.Router, SessionKey: f.SessionKey, HashBalanceFactor: f.HashBalanceFactor}
}

func (f *Fleet) validate(p string, e Engine, errs *Errors) {
	if f.Router != "" && !oneOf(f.Router, sim.RouterPolicies) {
		errs.Addf(p+".router", "unknown router %q%s (one of %s)", f.Router, suggest(f.Router, sim.RouterPolicies), quoteList(sim.RouterPolicies))
	}
	if e.Kind == EngineProcess && (f.Router == sim.RouterPrefixAware || f.Router == sim.RouterKubernetesService) {
		errs.Addf(p+".router", "%q cannot front engine.kind process: spoc starts HAProxy there (%s) or uses vLLM's own data parallelism (%q), and writes no router of its own; "+
			"run that router yourself (llm-d for prefix-aware) and point engine.kind external at it", f.Router, quoteList(haproxyRouters), sim.RouterVLLMDataParallel)
	}
	if f.SessionKey != sim.SessionKeyUser && f.SessionKey != sim.SessionKeySession {
		errs.Addf(p+".session_key", "must be %q or %q, got %q", sim.SessionKeyUser, sim.SessionKeySession, f.SessionKey)
	}
	if !validHeaderName(f.SessionHeader) {
		errs.Addf(p+".session_header", "%q is not an HTTP header name (RFC 9110 token: letters, digits and !#$%%&'*+-.^_`|~)", f.SessionHeader)
	}
	if f.HashBalanceFactor != 0 && f.HashBalanceFactor <= 100 {
		errs.Addf(p+".hash_balance_factor", "must be 0 (off) or above 100, got %d", f.HashBalanceFactor)
	} else if f.HashBalanceFactor != 0 && f.Router != sim.RouterSessionAffinity {
		errs.Addf(p+".hash_balance_factor", "bounds session-affinity's loads; router is %q", f.Router)
	}
	if f.Replicas < 0 {
		errs.Addf(p+".replicas", "must not be negative, got %d", f.Replicas)
	} else if f.Replicas > 0 && e.GPUs >= 1 {
		switch {
		case e.GPUs%f.Replicas != 0:
			errs.Addf(p+".replicas", "%d replicas do not divide engine.gpus (%d): every replica has the same GPUs", f.Replicas, e.GPUs)
		case e.TensorParallelSize >= 1 && e.GPUs/f.Replicas != e.TensorParallelSize:
			errs.Addf(p+".replicas", "%d replicas of engine.gpus %d would have %d GPUs each, but a replica is one tensor-parallel group of engine.tensor_parallel_size %d (%d / %d = %d replicas)",
				f.Replicas, e.GPUs, e.GPUs/f.Replicas, e.TensorParallelSize, e.GPUs, e.TensorParallelSize, e.replicas())
		}
	}
	if e.Kind == EngineProcess && oneOf(f.Router, haproxyRouters) && f.HAProxy == "" {
		errs.Addf(p+".haproxy", "must name the HAProxy binary for a process fleet behind %s", f.Router)
	}
}

// validHeaderName reports whether s is an HTTP field name: a non-empty
// token of RFC 9110 section 5.6.2.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
