package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spoc-project/spoc/internal/chatmsg"
	"github.com/spoc-project/spoc/sim"
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
