package testserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoc-project/spoc/vllm"
)

// Fault is a failure the server injects into one request.
type Fault string

// Faults the server can inject.
const (
	FaultNone          Fault = ""
	Fault429           Fault = "http_429"
	Fault500           Fault = "http_500"
	Fault503           Fault = "http_503"
	FaultReset         Fault = "reset"           // TCP reset after a few chunks
	FaultMalformed     Fault = "malformed"       // a data line that is not JSON, after a few chunks
	FaultStall         Fault = "stall"           // stop sending mid-stream until the client gives up
	FaultSlowFirstByte Fault = "slow_first_byte" // nothing at all for Config.SlowFirstByte
)

// AllFaults lists every fault, in a fixed order.
var AllFaults = []Fault{Fault429, Fault500, Fault503, FaultReset, FaultMalformed, FaultStall, FaultSlowFirstByte}

// Config sets the server's pacing and faults.
type Config struct {
	// FirstTokenDelay is the time from reading the request to the first token.
	FirstTokenDelay time.Duration
	// TokenInterval is the nominal time between chunks.
	TokenInterval time.Duration
	// TokensPerChunk is the number of tokens in each chunk (default 1); chunks
	// then carry token_ids so the client can count them.
	TokensPerChunk int
	// ReplyTokens fixes the reply length; 0 uses the request's max_tokens
	// (default 16 when absent).
	ReplyTokens int
	// ReasoningTokens makes a chat reply start with up to this many tokens
	// of reasoning, streamed in delta.<ReasoningField> before any content,
	// as a reasoning model does: they are part of the reply length (so of
	// max_tokens and completion_tokens). The completions endpoint streams
	// every token as text.
	ReasoningTokens int
	// ReasoningField is the delta field of the reasoning: vllm.FieldReasoning
	// (current vLLM, the default) or vllm.FieldReasoningContent (older).
	ReasoningField string
	// CountTokens counts the tokens of one prompt text (a message's content
	// or reasoning, or the completions prompt) for usage.prompt_tokens;
	// nil counts 4 bytes a token.
	CountTokens func(text string) int
	// DropHistoryReasoning leaves the reasoning of assistant messages in a
	// request out of usage.prompt_tokens, as vLLM's gpt-oss (harmony)
	// renderer drops completed turns' reasoning; by default it counts, as
	// with a template that renders it.
	DropHistoryReasoning bool
	// FaultRate is the probability that a request gets a fault drawn uniformly
	// from Faults (default AllFaults), with a generator seeded by Seed.
	FaultRate float64
	Faults    []Fault
	Seed      uint64
	// FaultFor, when set, decides the fault of every request instead.
	FaultFor func(req *Request) Fault
	// FaultAfterChunks is how many chunks mid-stream faults wait (default 2).
	FaultAfterChunks int
	// SlowFirstByte is how long FaultSlowFirstByte holds everything back.
	SlowFirstByte time.Duration
	// Stall caps FaultStall (default 1 minute); it ends earlier when the client leaves.
	Stall time.Duration
	// AcceptDelay delays every Accept of a new connection (a server slow to
	// accept); only for servers started with Start.
	AcceptDelay time.Duration
	// KeepLog records every request and its emission times (Log, and GET
	// /_spoc/log for a client in another process).
	KeepLog bool
	// Model is the id GET /v1/models lists (default DefaultModel); the
	// completion routes answer whatever model a request names.
	Model string
}

// DefaultModel is the model id the test server lists by default: the
// reference case's.
const DefaultModel = "gpt-oss-120b"

// Request is what the server logged about one request.
type Request struct {
	// ID is the X-Request-Id header.
	ID       string    `json:"id"`
	Seq      int64     `json:"seq"`
	Received time.Time `json:"received"`
	Fault    Fault     `json:"fault,omitempty"`
	// Messages are the chat messages; Prompt the completions prompt.
	Messages []Message `json:"messages,omitempty"`
	Prompt   string    `json:"prompt,omitempty"`
	// Body fields the tests check.
	MaxTokens     int  `json:"max_tokens"`
	MinTokens     int  `json:"min_tokens"`
	IgnoreEOS     bool `json:"ignore_eos"`
	IncludeUsage  bool `json:"include_usage"`
	Authorization bool `json:"authorization"`
	// Reply is the content the server streamed; Reasoning the reasoning
	// before it.
	Reply     string `json:"reply"`
	Reasoning string `json:"reasoning,omitempty"`
	// Emitted holds the time each content chunk was handed to the kernel
	// (after Write and Flush returned), and Tokens each chunk's token count.
	Emitted []time.Time `json:"emitted"`
	Tokens  []int       `json:"tokens"`

	// emitted is Emitted as the log keeps it, in Unix nanoseconds: a slice
	// the garbage collector need not scan (time.Time holds a pointer). In a
	// two-minute bench window at 1,500 streams the server's collection of
	// its log took 124 ms of CPU over 445 ms with time.Time, 45 over 120
	// with this.
	emitted []int64
}

// Message is one chat message. An assistant message in a request may carry
// the reasoning of its turn, under either name vLLM accepts.
type Message struct {
	Role             string `json:"role"`
	Content          string `json:"content"`
	ReasoningContent string `json:"reasoning_content,omitempty"`
	Reasoning        string `json:"reasoning,omitempty"`
}

// Server is the streaming test server.
type Server struct {
	cfg  Config
	seq  atomic.Int64
	rnd  *rand.Rand
	rmu  sync.Mutex
	mu   sync.Mutex
	log  []*Request
	http *httptest.Server
	// URL is the base URL of a server started with Start.
	URL string
}

// New returns a server handler with cfg; Start serves it on loopback.
func New(cfg Config) *Server {
	if cfg.TokensPerChunk < 1 {
		cfg.TokensPerChunk = 1
	}
	if len(cfg.Faults) == 0 {
		cfg.Faults = AllFaults
	}
	if cfg.FaultAfterChunks <= 0 {
		cfg.FaultAfterChunks = 2
	}
	if cfg.Stall <= 0 {
		cfg.Stall = time.Minute
	}
	return &Server{cfg: cfg, rnd: rand.New(rand.NewPCG(cfg.Seed, 0x5eed))}
}

// Start serves on a loopback port until Close.
func Start(cfg Config) *Server {
	s := New(cfg)
	s.http = httptest.NewUnstartedServer(s)
	if cfg.AcceptDelay > 0 {
		s.http.Listener = &slowListener{Listener: s.http.Listener, delay: cfg.AcceptDelay}
	}
	s.http.Start()
	s.URL = s.http.URL
	return s
}

// Close stops a started server, closing open connections.
func (s *Server) Close() {
	if s.http != nil {
		s.http.CloseClientConnections()
		s.http.Close()
	}
}

// Log returns a copy of the requests logged so far (KeepLog), in arrival
// order; a request still streaming shows what it emitted until it finished.
func (s *Server) Log() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.log))
	for i, r := range s.log {
		out[i] = *r
		out[i].emitted = nil
		out[i].Emitted = make([]time.Time, len(r.emitted))
		for j, ns := range r.emitted {
			out[i].Emitted[j] = time.Unix(0, ns)
		}
		out[i].Tokens = append([]int(nil), r.Tokens...)
	}
	return out
}

// ResetLog forgets the logged requests.
func (s *Server) ResetLog() {
	s.mu.Lock()
	s.log = nil
	s.mu.Unlock()
}

// ServeHTTP serves /v1/chat/completions, /v1/completions, and GET
// /_spoc/log (the request log as JSON, for a client in another process).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/_spoc/log":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Log())
	case r.Method == http.MethodPost && r.URL.Path == "/_spoc/log/reset":
		s.ResetLog()
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		model := s.cfg.Model
		if model == "" {
			model = DefaultModel
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]string{{"id": model, "object": "model"}}})
	case r.Method == http.MethodPost && (r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/v1/completions"):
		s.complete(w, r, r.URL.Path == "/v1/chat/completions")
	default:
		http.NotFound(w, r)
	}
}

type body struct {
	Messages      []Message `json:"messages"`
	Prompt        string    `json:"prompt"`
	MaxTokens     int       `json:"max_tokens"`
	MinTokens     int       `json:"min_tokens"`
	IgnoreEOS     bool      `json:"ignore_eos"`
	Stream        bool      `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (s *Server) pickFault(req *Request) Fault {
	if s.cfg.FaultFor != nil {
		return s.cfg.FaultFor(req)
	}
	if s.cfg.FaultRate <= 0 {
		return FaultNone
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.rnd.Float64() >= s.cfg.FaultRate {
		return FaultNone
	}
	return s.cfg.Faults[s.rnd.IntN(len(s.cfg.Faults))]
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request, chat bool) {
	received := time.Now()
	raw, err := io.ReadAll(r.Body)
	var b body
	if err == nil {
		err = json.Unmarshal(raw, &b)
	}
	if err != nil {
		http.Error(w, `{"error":{"message":"bad request body"}}`, http.StatusBadRequest)
		return
	}
	req := &Request{
		ID: r.Header.Get("X-Request-Id"), Seq: s.seq.Add(1), Received: received,
		Messages: b.Messages, Prompt: b.Prompt, MaxTokens: b.MaxTokens, MinTokens: b.MinTokens,
		IgnoreEOS: b.IgnoreEOS, IncludeUsage: b.StreamOptions.IncludeUsage,
		Authorization: r.Header.Get("Authorization") != "",
	}
	req.Fault = s.pickFault(req)
	if s.cfg.KeepLog {
		s.mu.Lock()
		s.log = append(s.log, req)
		s.mu.Unlock()
	}
	switch req.Fault {
	case Fault429, Fault500, Fault503:
		code, _ := strconv.Atoi(string(req.Fault[len("http_"):]))
		http.Error(w, `{"error":{"message":"injected fault"}}`, code)
		return
	case FaultSlowFirstByte:
		select {
		case <-time.After(s.cfg.SlowFirstByte):
		case <-r.Context().Done():
			return
		}
	}
	s.stream(w, r, req, chat, b, received)
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, req *Request, chat bool, b body, received time.Time) {
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl.Flush()

	n := s.cfg.ReplyTokens
	if n == 0 {
		n = b.MaxTokens
	}
	if n <= 0 {
		n = 16
	}
	prompt := s.promptTokens(b)
	var buf, reply, reasoning bytes.Buffer
	id := "cmpl-" + strconv.FormatInt(req.Seq, 10)
	if chat { // role chunk, no content, like vLLM
		buf.WriteString(`data: {"id":"` + id + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n")
		_, _ = w.Write(buf.Bytes())
		fl.Flush()
	}
	start := received.Add(s.cfg.FirstTokenDelay)
	timer := time.NewTimer(time.Until(start))
	defer timer.Stop()
	prefix := `data: {"id":"` + id + `","object":"text_completion","choices":[{"index":0,"text":`
	thinking, thinkPrefix := 0, ""
	if chat {
		prefix = `data: {"id":"` + id + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":`
		field := s.cfg.ReasoningField
		if field == "" {
			field = vllm.FieldReasoning
		}
		thinking = min(s.cfg.ReasoningTokens, n)
		thinkPrefix = `data: {"id":"` + id + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"` + field + `":`
	}
	var text []byte
	sent := 0
	for chunk := 0; sent < n; chunk++ {
		due := start.Add(time.Duration(chunk) * s.cfg.TokenInterval)
		// A plain receive, not a select with the request's context: at
		// 1,500 streams the select was 7 % of the server's CPU, and a gone
		// client is noticed at the next write or the check below.
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			<-timer.C
		}
		if r.Context().Err() != nil {
			s.finish(req, &reply, &reasoning)
			return
		}
		if chunk == s.cfg.FaultAfterChunks {
			switch req.Fault {
			case FaultReset:
				s.finish(req, &reply, &reasoning)
				reset(w)
				return
			case FaultMalformed:
				_, _ = w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}\n\n"))
				fl.Flush()
				s.finish(req, &reply, &reasoning)
				return
			case FaultStall:
				select {
				case <-time.After(s.cfg.Stall):
				case <-r.Context().Done():
				}
				s.finish(req, &reply, &reasoning)
				return
			}
		}
		// A chunk is all reasoning or all content.
		think := sent < thinking
		k := min(s.cfg.TokensPerChunk, n-sent)
		lead, out, pre := byte('r'), &reply, prefix
		if think {
			k = min(k, thinking-sent)
			lead, out, pre = 'a', &reasoning, thinkPrefix
		}
		// Text "r<seq>.<n> " ("a..." for reasoning): plain ASCII, so it
		// needs no JSON escaping.
		text = append(strconv.AppendInt(append(strconv.AppendInt(append(text[:0], lead), req.Seq, 10), '.'), int64(sent), 10), ' ')
		buf.Reset()
		buf.WriteString(pre)
		buf.WriteByte('"')
		buf.Write(text)
		buf.WriteByte('"')
		if chat {
			buf.WriteByte('}')
		}
		if s.cfg.TokensPerChunk > 1 {
			buf.WriteString(`,"token_ids":[`)
			for i := range k {
				if i > 0 {
					buf.WriteByte(',')
				}
				buf.WriteString(strconv.Itoa(1000 + sent + i))
			}
			buf.WriteByte(']')
		}
		buf.WriteString(`,"finish_reason":null}]}` + "\n\n")
		if _, err := w.Write(buf.Bytes()); err != nil {
			s.finish(req, &reply, &reasoning)
			return
		}
		fl.Flush()
		at := time.Now()
		out.Write(text)
		sent += k
		if s.cfg.KeepLog { // logged as it happens: a client may fetch the log mid-stream
			s.mu.Lock()
			req.emitted = append(req.emitted, at.UnixNano())
			req.Tokens = append(req.Tokens, k)
			s.mu.Unlock()
		}
	}
	buf.Reset()
	if b.StreamOptions.IncludeUsage {
		fmt.Fprintf(&buf, `data: {"id":"%s","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`+"\n\n",
			id, prompt, sent, prompt+sent, prompt/2)
	}
	buf.WriteString("data: [DONE]\n\n")
	_, _ = w.Write(buf.Bytes())
	fl.Flush()
	s.finish(req, &reply, &reasoning)
}

// promptTokens is usage.prompt_tokens for request body b.
func (s *Server) promptTokens(b body) int {
	texts := []string{b.Prompt}
	for _, m := range b.Messages {
		texts = append(texts, m.Content)
		if !s.cfg.DropHistoryReasoning {
			texts = append(texts, m.ReasoningContent, m.Reasoning)
		}
	}
	n := 0
	for _, t := range texts {
		if s.cfg.CountTokens != nil {
			n += s.cfg.CountTokens(t)
		} else {
			n += len(t)
		}
	}
	if s.cfg.CountTokens == nil {
		n /= 4
	}
	return n
}

func (s *Server) finish(req *Request, reply, reasoning *bytes.Buffer) {
	if !s.cfg.KeepLog {
		return
	}
	s.mu.Lock()
	req.Reply = reply.String()
	req.Reasoning = reasoning.String()
	s.mu.Unlock()
}

// reset aborts the connection with a TCP RST.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

type slowListener struct {
	net.Listener
	delay time.Duration
}

// Accept holds each new connection for delay after it arrived, so the
// delay counts from the client's connect, not from when the server started.
func (l *slowListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		time.Sleep(l.delay)
	}
	return c, err
}
