package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// replyWords are common words that are one token each with a leading
// space; replies are sequences of them so that a reply sent back in the next
// turn's history tokenizes to the ids the engine cached.
var replyWords = []string{" the", " of", " and", " to", " in", " is", " that", " for", " it", " with",
	" as", " on", " be", " this", " are", " by", " or", " from", " at", " an"}

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

// appendUsage appends the usage object; the vLLM-faithful and
// SGLang-faithful modes report cached_tokens only with
// EnablePromptTokensDetails, as vLLM and SGLang (--enable-cache-report) do.
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
	if (o.s.cfg.VLLMFaithful || o.s.cfg.SGLangFaithful) && !o.s.cfg.EnablePromptTokensDetails {
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
