package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/tokenizer"
)

// Config configures a real-time simulator server.
type Config struct {
	Deployment sim.Deployment
	// TimeScale is simulated seconds per wall-clock second: 1 is real time,
	// 10 serves ten times faster than the modelled GPUs. Metrics report
	// simulated time.
	TimeScale float64
	// ErrorRate answers that fraction of requests with HTTP 500, drawn from
	// Seed.
	ErrorRate float64
	Seed      uint64
	// Stalls freeze the engine (no step runs) during windows of simulated
	// time since the server started, as a hung GPU or NCCL timeout would.
	Stalls []Stall
	// Tokenizer counts prompt tokens and prefix-cache blocks of request
	// text: a name tokenizer.New accepts; empty means o200k_base.
	Tokenizer string
	// Hostname labels the DCGM metrics; empty means os.Hostname.
	Hostname string
	// Version follows "spoc-sim " in GET /version; empty means "dev".
	Version string
	// Logger receives request-level events; nil discards them.
	Logger *slog.Logger

	// VLLMFaithful makes the server behave like vLLM where spoc's live path
	// depends on it, so that `spoc sim serve --vllm-faithful` can stand in
	// for a real server: a reasoning model (gpt-oss) streams its chain of
	// thought under ReasoningField before the content, streamed chunks
	// carry several tokens (TokensPerChunk), the role comes in a chunk of
	// its own and the finish reason with the last tokens, cached_tokens is
	// reported only with EnablePromptTokensDetails, /reset_prefix_cache is
	// served only in DevMode, and /version says "vllm-faithful". Off, the
	// server answers as it always did.
	VLLMFaithful bool
	// TokensPerChunk is how many tokens a streamed chunk carries after the
	// first; 0 means DefaultTokensPerChunk, or FaithfulTokensPerChunk in
	// the vLLM-faithful mode.
	TokensPerChunk int
	// ReasoningField names the streamed chain of thought in the
	// vLLM-faithful mode: vllm.FieldReasoning (empty, current vLLM) or
	// vllm.FieldReasoningContent (servers before the rename).
	ReasoningField string
	// EnablePromptTokensDetails is vLLM's --enable-prompt-tokens-details:
	// in the vLLM-faithful mode usage.prompt_tokens_details.cached_tokens
	// is reported only with it. The default mode always reports it.
	EnablePromptTokensDetails bool
	// DevMode is vLLM's VLLM_SERVER_DEV_MODE=1 (see DevMode): in the
	// vLLM-faithful mode POST /reset_prefix_cache answers 404 without it.
	// The default mode always serves the route.
	DevMode bool

	// SGLangFaithful makes the server stand in for SGLang's where spoc's
	// live path depends on it (`spoc sim serve --sglang-faithful`, whose
	// command line takes SGLang's flag names): the metrics carry SGLang's
	// names (package sglang) and are served only with EnableMetrics, the
	// prefix cache is emptied by GET or POST /flush_cache, refused with
	// HTTP 400 while requests run or wait, as SGLang does (there is no
	// /reset_prefix_cache), cached_tokens is reported only with
	// EnablePromptTokensDetails (SGLang's --enable-cache-report), and
	// /version says "sglang-faithful".
	SGLangFaithful bool
	// EnableMetrics is SGLang's --enable-metrics: in the SGLang-faithful
	// mode /metrics answers 404 without it.
	EnableMetrics bool
}

// DefaultTokenizer is the tokenizer of the reference model.
const DefaultTokenizer = "o200k_base"

// Server serves the simulated deployment over an OpenAI-compatible HTTP API
// in scaled wall-clock time. One goroutine drives the engines; handlers wait
// for their request's tokens. Create it with New, mount Handler, and Close
// it when done.
type Server struct {
	cfg     Config
	c       *sim.Cluster
	dep     sim.Deployment
	engines []*sim.Engine
	tok     *tokenizer.Tokenizer
	factors perfmodel.Factors
	model   string
	// reasoning: replies stream a chain of thought first (vLLM-faithful
	// mode, reasoning model).
	reasoning bool
	start     time.Time
	log       *slog.Logger

	mu      sync.Mutex
	calls   map[*sim.Request]*call
	aborts  []*call
	rng     *rand.Rand
	seq     uint64
	mon     *sim.Monitor
	lastEng []sim.EngineStats
	wake    chan struct{}

	words    []string // reply vocabulary: one token each
	replyIDs []int

	// usage is the server's own count of its time (Usage).
	usage usageCounter

	metrics *vllmMetrics
	reg     *prometheus.Registry
	dcgm    *prometheus.Registry

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// call is one HTTP request's link to its engine request.
type call struct {
	req     *sim.Request
	replica int
	notify  chan struct{} // cap 1: tokens arrived or the request ended
	aborted bool
	stop    bool    // the reply ends before max_tokens (finish_reason "stop")
	lastTok float64 // simulated time of the latest token, for the ITL histogram
}

// New builds the deployment and starts its engine loop.
func New(cfg Config) (*Server, error) {
	if cfg.TimeScale == 0 {
		cfg.TimeScale = 1
	}
	if !(cfg.TimeScale > 0) || math.IsInf(cfg.TimeScale, 0) {
		return nil, fmt.Errorf("sim server: time scale must be positive, got %v", cfg.TimeScale)
	}
	if cfg.ErrorRate < 0 || cfg.ErrorRate > 1 {
		return nil, fmt.Errorf("sim server: error rate %v is not in [0, 1]", cfg.ErrorRate)
	}
	if cfg.TokensPerChunk < 0 {
		return nil, fmt.Errorf("sim server: tokens per chunk must not be negative, got %d", cfg.TokensPerChunk)
	}
	if cfg.TokensPerChunk == 0 {
		cfg.TokensPerChunk = DefaultTokensPerChunk
		if cfg.VLLMFaithful {
			cfg.TokensPerChunk = FaithfulTokensPerChunk
		}
	}
	field, err := reasoningField(cfg.ReasoningField)
	if err != nil {
		return nil, err
	}
	cfg.ReasoningField = field
	for i, s := range cfg.Stalls {
		if s.Start < 0 || s.Duration <= 0 {
			return nil, fmt.Errorf("sim server: stall %d: start must not be negative and duration must be positive", i)
		}
	}
	c, err := cfg.Deployment.Build()
	if err != nil {
		return nil, fmt.Errorf("sim server: %w", err)
	}
	name := cfg.Tokenizer
	if name == "" {
		name = DefaultTokenizer
	}
	tok, err := tokenizer.New(name)
	if err != nil {
		return nil, fmt.Errorf("sim server: tokenizer: %w", err)
	}
	if cfg.Hostname == "" {
		cfg.Hostname, _ = os.Hostname()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg: cfg, c: c, dep: c.Deployment(), engines: c.Engines(), tok: tok, factors: c.Factors(), model: c.ModelName(), log: cfg.Logger,
		calls:   map[*sim.Request]*call{},
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x5e7e)),
		mon:     sim.NewMonitor(c, 1),
		lastEng: make([]sim.EngineStats, len(c.Engines())),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	for _, w := range replyWords {
		if ids, err := tok.Encode(w); err == nil && len(ids) == 1 {
			s.words = append(s.words, w)
			s.replyIDs = append(s.replyIDs, ids[0])
		}
	}
	if len(s.words) == 0 {
		return nil, fmt.Errorf("sim server: tokenizer %s encodes none of the reply words as one token", name)
	}
	s.reasoning = cfg.VLLMFaithful && reasoningModel(s.dep.Model.Name, s.model)
	s.reg = prometheus.NewRegistry()
	names := vllmNames
	if cfg.SGLangFaithful {
		names = sglangNames
	}
	s.metrics = newVLLMMetrics(s.reg, s.model, c, names)
	s.dcgm = prometheus.NewRegistry()
	s.dcgm.MustRegister(&dcgmCollector{s: s})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.start = time.Now()
	s.usage.startedAt = s.start
	go s.loop()
	return s, nil
}

// Model is the served model name.
func (s *Server) Model() string { return s.model }

// Close stops the engine loop; requests in flight end with an error.
func (s *Server) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// vnow is the current simulated time in seconds.
func (s *Server) vnow() float64 { return time.Since(s.start).Seconds() * s.cfg.TimeScale }

// wallAt is the wall-clock time of simulated time t.
func (s *Server) wallAt(t float64) time.Time {
	return s.start.Add(time.Duration(t / s.cfg.TimeScale * 1e9))
}

// stalledUntil returns the end of the stall covering t, or t.
func (s *Server) stalledUntil(t float64) float64 {
	for _, st := range s.cfg.Stalls {
		a, b := st.Start.Seconds(), (st.Start + st.Duration).Seconds()
		if t >= a && t < b {
			return b
		}
	}
	return t
}

func (s *Server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop drives the engines in scaled wall-clock time: plan a step on every
// idle engine with work, sleep until the earliest step ends (or a request
// arrives), complete the steps that ended, repeat.
func (s *Server) loop() {
	defer close(s.done)
	engines := s.engines
	ends := make([]float64, len(engines))
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		now := s.vnow()
		s.mon.Advance(now)
		s.processAborts()
		stallEnd := s.stalledUntil(now)
		next := math.Inf(1)
		for k, e := range engines {
			if !e.Busy() && e.HasWork() && stallEnd == now {
				if d, ok := e.Schedule(now); ok {
					ends[k] = now + d
					s.mon.AddStep(k, e.Step())
					s.metrics.iteration(k, e.Step())
				}
			}
			if e.Busy() {
				next = math.Min(next, ends[k])
			} else if e.HasWork() && stallEnd > now {
				next = math.Min(next, stallEnd)
			}
		}
		s.mu.Unlock()

		wait := time.Hour
		if !math.IsInf(next, 1) {
			wait = max(time.Until(s.wallAt(next)), 0)
		}
		timer.Reset(wait)
		select {
		case <-s.ctx.Done():
			s.failAll()
			return
		case <-s.wake:
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
			if !math.IsInf(next, 1) {
				s.mu.Lock()
				s.usage.woke(time.Now(), s.wallAt(next))
				s.mu.Unlock()
			}
		}

		s.mu.Lock()
		now = s.vnow()
		for k, e := range engines {
			for e.Busy() && ends[k] <= now {
				s.complete(k, ends[k])
				// An engine with work goes straight on to its next step from
				// the end of this one, in simulated time: a late wake-up of
				// this loop (a loaded machine) must not stretch the
				// simulated GPU's steps, which would make every latency the
				// client measures longer than the model's.
				end := ends[k]
				s.processAborts() // requests whose clients left leave first
				if !e.HasWork() || s.stalledUntil(end) != end {
					break
				}
				d, ok := e.Schedule(end)
				if !ok {
					break
				}
				ends[k] = end + d
				s.mon.AddStep(k, e.Step())
				s.metrics.iteration(k, e.Step())
			}
		}
		s.mu.Unlock()
	}
}

// complete applies replica k's step and wakes the handlers of its requests.
func (s *Server) complete(k int, end float64) {
	e := s.engines[k]
	for _, r := range e.Complete(end) {
		c := s.calls[r]
		if c == nil {
			continue
		}
		if r.Generated() >= 2 {
			s.metrics.itl(k, end-c.lastTok)
		}
		c.lastTok = end
		if r.Generated() == 1 {
			s.metrics.firstToken(k, r)
		}
		if r.Finished() {
			s.metrics.finished(k, r, c)
			// one line per finished request, as vLLM logs requests: a
			// test or operator counts what reached this server
			s.log.Info("request finished", "replica", k, "prompt_tokens", r.PromptTokens, "output_tokens", r.Generated())
			delete(s.calls, r)
			s.usage.left(time.Now(), true)
		}
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}
	st := e.Stats()
	s.metrics.engineDelta(k, s.lastEng[k], st, e)
	s.lastEng[k] = st
}

// processAborts removes requests whose clients went away from idle engines.
func (s *Server) processAborts() {
	k := 0
	for _, c := range s.aborts {
		e := s.engines[c.replica]
		if e.Busy() {
			s.aborts[k] = c
			k++
			continue
		}
		if !c.req.Finished() {
			e.Abort(c.req)
			s.metrics.aborted(c.replica)
			// an engine left idle takes no step that would refresh its
			// gauges: without this, num_requests_running kept counting
			// the aborted request until the next one arrived
			s.metrics.gauges(c.replica, e)
		}
		if _, ok := s.calls[c.req]; ok {
			s.usage.left(time.Now(), false)
		}
		delete(s.calls, c.req)
	}
	clear(s.aborts[k:])
	s.aborts = s.aborts[:k]
}

// failAll wakes every waiting handler when the server closes.
func (s *Server) failAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.calls {
		c.aborted = true
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}
}

// errClosed is returned to handlers of a closed server.
var errClosed = errors.New("simulator shut down")

// submit queues a request on the least loaded replica.
func (s *Server) submit(r *sim.Request, stop bool) (*call, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return nil, errClosed
	}
	k := s.c.Route()
	r.Arrival = s.vnow()
	if err := s.engines[k].Add(r); err != nil {
		return nil, err
	}
	c := &call{req: r, replica: k, notify: make(chan struct{}, 1), stop: stop}
	s.calls[r] = c
	s.usage.admitted(time.Now())
	s.metrics.gauges(k, s.engines[k])
	s.poke()
	return c, nil
}

// idle reports whether no request runs or waits on any replica.
func (s *Server) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.engines {
		if e.NumRunning()+e.NumWaiting() > 0 {
			return false
		}
	}
	return true
}

// resetPrefixCache empties every replica's prefix cache; false when a
// replica refused because requests still hold KV blocks.
func (s *Server) resetPrefixCache() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := true
	for _, e := range s.engines {
		if !e.ResetPrefixCache() {
			ok = false
		}
	}
	return ok
}

// progress reads a request's state under the lock.
func (s *Server) progress(c *call) (generated int, finished, aborted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.req.Generated(), c.req.Finished(), c.aborted
}

// abandon marks a request whose client went away.
func (s *Server) abandon(c *call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.req.Finished() || c.aborted {
		return
	}
	c.aborted = true
	s.aborts = append(s.aborts, c)
	s.poke()
}

// inject reports whether this request gets an injected fault.
func (s *Server) inject() bool {
	if s.cfg.ErrorRate == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Float64() < s.cfg.ErrorRate
}

// Handler returns the HTTP API: /v1/chat/completions, /v1/completions,
// /v1/models, /health, /version, /tokenize, /reset_prefix_cache, /metrics
// (vLLM) and /dcgm/metrics.
func (s *Server) Handler() http.Handler { return s.routes() }

// Serve serves Handler on ln until ctx ends, then shuts down gracefully
// (in-flight responses get a few seconds) and closes the server.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return fmt.Errorf("sim server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Close() // ends streams in flight so Shutdown need not wait for them
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("sim server: shutdown: %w", err)
	}
	return nil
}
