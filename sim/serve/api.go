package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/spoc-project/spoc/internal/chatmsg"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/vllm"
)

// maxBodyBytes bounds a request body (a 128k-token prompt is ~600 KB).
const maxBodyBytes = 32 << 20

// Pseudo token ids of the chat template's framing (gpt-oss harmony's
// <|start|>, <|message|>, <|end|>): each message costs its content's tokens
// plus its role and these three, as vLLM's chat templates add a few tokens
// per message.
const (
	tokStart   = 200006
	tokEnd     = 200007
	tokMessage = 200008
)

// replyWords are common words that are one token each with a leading
// space; replies are sequences of them so that a reply sent back in the next
// turn's history tokenizes to the ids the engine cached.
var replyWords = []string{" the", " of", " and", " to", " in", " is", " that", " for", " it", " with",
	" as", " on", " be", " this", " are", " by", " or", " from", " at", " an"}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type completionRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           int             `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// apiError is an OpenAI/vLLM-style error body.
type apiError struct {
	Object  string `json:"object"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

func writeError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(apiError{Object: "error", Message: msg, Type: typ, Code: code})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+vllm.PathChatCompletions, func(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, true) })
	mux.HandleFunc("POST "+vllm.PathCompletions, func(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, false) })
	mux.HandleFunc("GET "+vllm.PathModels, s.serveModels)
	mux.HandleFunc("GET "+vllm.PathHealth, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET "+vllm.PathVersion, s.serveVersion)
	mux.HandleFunc("POST "+vllm.PathTokenize, s.serveTokenize)
	if s.cfg.VLLMFaithful && !s.cfg.DevMode {
		// vLLM registers the route only in dev mode; FastAPI answers any
		// other path with 404 and this body.
		mux.HandleFunc(vllm.PathResetPrefixCache, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"detail":"Not Found"}`)
		})
	} else {
		mux.HandleFunc("POST "+vllm.PathResetPrefixCache, s.serveResetPrefixCache)
	}
	mux.Handle("GET "+vllm.PathMetrics, promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.Handle("GET /dcgm/metrics", promhttp.HandlerFor(s.dcgm, promhttp.HandlerOpts{}))
	return mux
}

// serveVersion answers as vLLM's /version does, with a version no vLLM
// release has, so a client can tell the simulator from a real server; the
// vLLM-faithful mode adds " (vllm-faithful)", so that a test can also tell
// the stand-in process from spoc's in-process simulator.
func (s *Server) serveVersion(w http.ResponseWriter, _ *http.Request) {
	v := s.cfg.Version
	if v == "" {
		v = "dev"
	}
	v = "spoc-sim " + v
	if s.cfg.VLLMFaithful {
		v += " (vllm-faithful)"
	}
	writeJSON(w, map[string]string{"version": v})
}

// serveResetPrefixCache empties the simulated prefix cache. The default
// mode always has the route (vLLM and the vLLM-faithful mode only in dev
// mode, see vllm.PathResetPrefixCache) and, like vLLM, answers 200 even when a replica refused because requests
// still hold KV blocks; the refusal is logged.
func (s *Server) serveResetPrefixCache(w http.ResponseWriter, _ *http.Request) {
	if !s.resetPrefixCache() {
		s.log.Warn("prefix cache not reset: requests still hold KV blocks")
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) serveModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"object": "list", "data": []map[string]any{{
		"id": s.model, "object": "model", "created": s.start.Unix(), "owned_by": "spoc-sim",
		"root": s.model, "max_model_len": s.c.MaxModelLen(),
	}}})
}

// decodeRequest reads and validates a completion or tokenize body.
func (s *Server) decodeRequest(r *http.Request) (*completionRequest, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if len(body) > maxBodyBytes {
		return nil, fmt.Errorf("body larger than %d bytes", maxBodyBytes)
	}
	var req completionRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("invalid JSON body: %w", err)
	}
	return &req, nil
}

// promptIDs tokenizes the prompt: chat messages framed by the template, or a
// completion prompt string.
func (s *Server) promptIDs(req *completionRequest, chat bool) ([]int, error) {
	if chat {
		if len(req.Messages) == 0 {
			return nil, errors.New("messages must not be empty")
		}
		var ids []int
		for i, m := range req.Messages {
			text, err := chatmsg.Text(m.Content)
			if err != nil {
				return nil, fmt.Errorf("messages[%d].content: %w", i, err)
			}
			role, err := s.tok.Encode(m.Role)
			if err != nil {
				return nil, fmt.Errorf("messages[%d].role: %w", i, err)
			}
			content, err := s.tok.Encode(text)
			if err != nil {
				return nil, fmt.Errorf("messages[%d].content: %w", i, err)
			}
			ids = append(ids, tokStart)
			ids = append(ids, role...)
			ids = append(ids, tokMessage)
			ids = append(ids, content...)
			ids = append(ids, tokEnd)
		}
		// The generation prompt opens the assistant message, so the reply's
		// tokens continue it exactly as the next turn's history frames it.
		assistant, _ := s.tok.Encode("assistant")
		ids = append(ids, tokStart)
		ids = append(ids, assistant...)
		return append(ids, tokMessage), nil
	}
	var prompt string
	if err := json.Unmarshal(req.Prompt, &prompt); err != nil {
		return nil, errors.New("prompt must be a string")
	}
	ids, err := s.tok.Encode(prompt)
	if err != nil {
		return nil, fmt.Errorf("prompt: %w", err)
	}
	if len(ids) == 0 {
		return nil, errors.New("prompt must not be empty")
	}
	return ids, nil
}

func (s *Server) serveTokenize(w http.ResponseWriter, r *http.Request) {
	req, err := s.decodeRequest(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	ids, err := s.promptIDs(req, len(req.Messages) > 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	writeJSON(w, map[string]any{"count": len(ids), "max_model_len": s.c.MaxModelLen(), "tokens": ids})
}

func (s *Server) serveCompletion(w http.ResponseWriter, r *http.Request, chat bool) {
	req, err := s.decodeRequest(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	if req.Model != "" && req.Model != s.model && req.Model != s.dep.Model.Name {
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("model %q is not served here (serving %q)", req.Model, s.model))
		return
	}
	ids, err := s.promptIDs(req, chat)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	maxTokens := s.c.MaxModelLen() - len(ids)
	switch {
	case req.MaxTokens != nil:
		maxTokens = *req.MaxTokens
	case req.MaxCompletionTokens != nil:
		maxTokens = *req.MaxCompletionTokens
	}
	if maxTokens < 1 {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("max_tokens must be at least 1, got %d (prompt has %d tokens, max-model-len %d)", maxTokens, len(ids), s.c.MaxModelLen()))
		return
	}
	if limit := s.c.MaxModelLen(); len(ids)+maxTokens > limit {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("%d prompt + %d max_tokens = %d tokens exceed max-model-len %d: %v",
			len(ids), maxTokens, len(ids)+maxTokens, limit, sim.ErrTooLong))
		return
	}
	if req.MinTokens < 0 || req.MinTokens > maxTokens {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("min_tokens must be in [0, max_tokens=%d], got %d", maxTokens, req.MinTokens))
		return
	}
	if s.inject() {
		writeError(w, http.StatusInternalServerError, "InternalServerError", "injected fault (spoc sim error_rate)")
		return
	}
	n := maxTokens
	s.mu.Lock()
	s.seq++
	id := s.seq
	if !req.IgnoreEOS && req.MinTokens < maxTokens {
		n = max(req.MinTokens, 1) + s.rng.IntN(maxTokens-max(req.MinTokens, 1)+1)
	}
	s.mu.Unlock()

	// API-server time (parsing, tokenisation) before the engine sees it.
	if d := time.Duration(s.factors.RequestOverhead(len(ids)) / s.cfg.TimeScale * 1e9); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	h := sim.NewBlockHasher(s.dep.Params.BlockSize)
	h.AppendTokens(ids)
	for i := range n {
		j := (int(id) + i) % len(s.replyIDs)
		h.AppendTokens(s.replyIDs[j : j+1])
	}
	er := sim.NewRequest()
	er.ID, er.PromptTokens, er.OutputTokens, er.BlockHashes = id, len(ids), n, h.Hashes()
	c, err := s.submit(er, n < maxTokens)
	if err != nil {
		if errors.Is(err, sim.ErrTooLong) {
			writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		} else {
			writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", err.Error())
		}
		return
	}
	rid := r.Header.Get("X-Request-Id")
	if rid != "" {
		w.Header().Set("X-Request-Id", rid)
	}
	out := &responder{s: s, c: c, chat: chat, id: id, prompt: len(ids)}
	if chat && s.reasoning {
		out.think = ReasoningTokens(n)
	}
	if req.Stream {
		out.usage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		out.stream(r.Context(), w)
		return
	}
	out.whole(r.Context(), w)
}

// responder writes one request's reply as the engine produces it.
type responder struct {
	s      *Server
	c      *call
	chat   bool
	usage  bool
	id     uint64
	prompt int
	// think is how many leading output tokens are chain of thought
	// (vLLM-faithful mode, reasoning model, chat).
	think int
	buf   []byte
}

func (o *responder) word(i int) string { return o.s.words[(int(o.id)+i)%len(o.s.words)] }

// text is output tokens [from, to) as text.
func (o *responder) text(from, to int) string {
	if from+1 == to {
		return o.word(from)
	}
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(o.word(i))
	}
	return b.String()
}

// reason is the finished request's finish_reason.
func (o *responder) reason() string {
	if o.c.stop {
		return "stop"
	}
	return "length"
}

func (o *responder) idString() string {
	if o.chat {
		return "chatcmpl-sim" + strconv.FormatUint(o.id, 10)
	}
	return "cmpl-sim" + strconv.FormatUint(o.id, 10)
}

// wait blocks until tokens arrive or the request ends; false when the
// client went away or the server closed.
func (o *responder) wait(ctx context.Context) (gen int, finished bool, ok bool) {
	select {
	case <-ctx.Done():
		o.s.abandon(o.c)
		return 0, false, false
	case <-o.c.notify:
	}
	gen, finished, aborted := o.s.progress(o.c)
	if aborted && !finished {
		return gen, false, false
	}
	return gen, finished, true
}

func (o *responder) stream(ctx context.Context, w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	created := strconv.FormatInt(time.Now().Unix(), 10)
	sent := 0
	for {
		gen, finished, ok := o.wait(ctx)
		if !ok {
			if ctx.Err() == nil {
				o.buf = append(o.buf[:0], `data: {"error":{"message":"simulator shut down","type":"InternalServerError","code":500}}`+"\n\n"...)
				_, _ = w.Write(o.buf)
			}
			return
		}
		o.buf = o.buf[:0]
		// The first token goes alone, the others TokensPerChunk at a time;
		// a shorter chunk only at the end.
		for sent < gen {
			k := o.s.cfg.TokensPerChunk
			if sent == 0 {
				k = 1
			}
			if gen-sent < k && !finished {
				break
			}
			k = min(k, gen-sent)
			last := finished && sent+k == gen
			if o.s.cfg.VLLMFaithful {
				o.buf = o.faithfulChunk(o.buf, created, sent, sent+k, last)
			} else {
				o.buf = o.chunk(o.buf, created, o.text(sent, sent+k), sent == 0, "")
			}
			sent += k
		}
		if finished {
			if !o.s.cfg.VLLMFaithful || gen == 0 {
				o.buf = o.chunk(o.buf, created, "", false, o.reason())
			}
			if o.usage {
				o.buf = append(o.buf, `data: {"id":"`+o.idString()+`","object":"`+o.object()+`","created":`+created+`,"model":`...)
				o.buf = strconv.AppendQuote(o.buf, o.s.model)
				o.buf = append(o.buf, `,"choices":[],"usage":`...)
				o.buf = o.appendUsage(o.buf, gen)
				o.buf = append(o.buf, "}\n\n"...)
			}
			o.buf = append(o.buf, "data: [DONE]\n\n"...)
		}
		if _, err := w.Write(o.buf); err != nil {
			o.s.abandon(o.c)
			return
		}
		if fl != nil {
			fl.Flush()
		}
		if finished {
			return
		}
	}
}

func (o *responder) object() string {
	if o.chat {
		return "chat.completion.chunk"
	}
	return "text_completion"
}

// chunk appends one SSE event carrying text (or the finish reason).
func (o *responder) chunk(b []byte, created, text string, first bool, reason string) []byte {
	b = append(b, `data: {"id":"`+o.idString()+`","object":"`+o.object()+`","created":`+created+`,"model":`...)
	b = strconv.AppendQuote(b, o.s.model)
	b = append(b, `,"choices":[{"index":0,`...)
	if o.chat {
		b = append(b, `"delta":{`...)
		if first {
			b = append(b, `"role":"assistant",`...)
		}
		if reason == "" {
			b = append(b, `"content":`...)
			b = strconv.AppendQuote(b, text)
		}
		b = append(b, '}')
	} else {
		b = append(b, `"text":`...)
		b = strconv.AppendQuote(b, text)
	}
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if reason == "" {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendQuote(b, reason)
	}
	return append(b, "}]}\n\n"...)
}

// faithfulChunk appends output tokens [from, to) as vLLM streams them: the
// first preceded by a role-only chunk (chat), chain of thought under
// ReasoningField and the answer under content (both in one delta where a
// chunk straddles them), and the finish reason with the last tokens.
func (o *responder) faithfulChunk(b []byte, created string, from, to int, last bool) []byte {
	head := func(b []byte) []byte {
		b = append(b, `data: {"id":"`+o.idString()+`","object":"`+o.object()+`","created":`+created+`,"model":`...)
		b = strconv.AppendQuote(b, o.s.model)
		return append(b, `,"choices":[{"index":0,`...)
	}
	if from == 0 && o.chat {
		b = head(b)
		b = append(b, `"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	}
	b = head(b)
	if o.chat {
		b = append(b, `"delta":{`...)
		if from < o.think {
			b = append(b, '"')
			b = append(b, o.s.cfg.ReasoningField...)
			b = append(b, `":`...)
			b = strconv.AppendQuote(b, o.text(from, min(to, o.think)))
		}
		if to > o.think {
			if from < o.think {
				b = append(b, ',')
			}
			b = append(b, `"content":`...)
			b = strconv.AppendQuote(b, o.text(max(from, o.think), to))
		}
		b = append(b, '}')
	} else {
		b = append(b, `"text":`...)
		b = strconv.AppendQuote(b, o.text(from, to))
	}
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if !last {
		return append(b, "null}]}\n\n"...)
	}
	b = strconv.AppendQuote(b, o.reason())
	return append(b, `,"stop_reason":null}]}`+"\n\n"...)
}

// appendUsage appends the usage object; the vLLM-faithful mode reports
// cached_tokens only with EnablePromptTokensDetails, as vLLM does.
func (o *responder) appendUsage(b []byte, gen int) []byte {
	o.s.mu.Lock()
	cached := o.c.req.CachedTokens
	o.s.mu.Unlock()
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(o.prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(o.prompt+gen), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(gen), 10)
	if o.s.cfg.VLLMFaithful && !o.s.cfg.EnablePromptTokensDetails {
		return append(b, '}')
	}
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(cached), 10)
	return append(b, "}}"...)
}

func (o *responder) whole(ctx context.Context, w http.ResponseWriter) {
	for {
		gen, finished, ok := o.wait(ctx)
		if !ok {
			if ctx.Err() == nil {
				writeError(w, http.StatusInternalServerError, "InternalServerError", "simulator shut down")
			}
			return
		}
		if !finished {
			continue
		}
		choice := map[string]any{"index": 0, "logprobs": nil, "finish_reason": o.reason()}
		object := "text_completion"
		switch {
		case o.chat && o.s.cfg.VLLMFaithful:
			// vLLM's message always has the reasoning field, null when the
			// model did not think.
			think := min(o.think, gen)
			var reasoning any
			if think > 0 {
				reasoning = o.text(0, think)
			}
			choice["message"] = map[string]any{"role": "assistant", "content": o.text(think, gen), o.s.cfg.ReasoningField: reasoning}
			choice["stop_reason"] = nil
			object = "chat.completion"
		case o.chat:
			choice["message"] = map[string]any{"role": "assistant", "content": o.text(0, gen)}
			object = "chat.completion"
		default:
			choice["text"] = o.text(0, gen)
		}
		resp := map[string]any{"id": o.idString(), "object": object, "created": time.Now().Unix(), "model": o.s.model,
			"choices": []any{choice}, "usage": json.RawMessage(o.appendUsage(nil, gen))}
		writeJSON(w, resp)
		return
	}
}
