package loadgen

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/spoc-project/spoc/vllm"
	"github.com/spoc-project/spoc/workload"
)

// Endpoints the runner can drive.
const (
	EndpointChat        = "chat"        // /v1/chat/completions
	EndpointCompletions = "completions" // /v1/completions
)

// History policies: what of a reasoning model's reply a user appends to the
// history it sends with the session's next turn (chat endpoint only).
const (
	// HistoryFinal keeps the final content only and drops the reasoning,
	// as OpenAI's harmony guidance for gpt-oss says for completed turns
	// (vLLM's gpt-oss renderer drops it from such turns anyway).
	HistoryFinal = "final"
	// HistoryKeep also sends the reasoning, as the assistant message's
	// reasoning_content, for templates that render it.
	HistoryKeep = "keep"
)

// DefaultHistoryPolicy is the history policy when Options leaves it empty.
const DefaultHistoryPolicy = HistoryFinal

// conversation is one session's history as the server will see it. Chat
// messages are JSON-encoded once, when added, so that a long history is not
// re-escaped on every turn; the completions prompt is kept as raw text. A
// user reuses one conversation (and its buffers) for all its sessions: the
// client allocates less, so its garbage collections, which delay chunk
// reads, come less often.
type conversation struct {
	endpoint string
	renderer workload.Renderer
	msgs     []byte // encoded chat messages, comma-separated
	n        int    // messages in msgs
	prompt   []byte // completions prompt text
	scratch  []byte
}

func newConversation(endpoint string, r workload.Renderer) *conversation {
	return &conversation{endpoint: endpoint, renderer: r}
}

// reset empties the history for a new session, keeping the buffers.
func (c *conversation) reset() {
	c.msgs, c.n, c.prompt = c.msgs[:0], 0, c.prompt[:0]
}

func (c *conversation) render(segs []workload.Segment) ([]byte, error) {
	out := c.scratch[:0]
	for _, seg := range segs {
		var err error
		out, err = c.renderer.Render(out, seg)
		if err != nil {
			return nil, fmt.Errorf("render %s segment (owner %d, turn %d, %d tokens): %w", seg.Kind, seg.Owner, seg.Turn, seg.Tokens, err)
		}
	}
	c.scratch = out
	return out, nil
}

// addUser appends a turn's new content. The first turn of a session also
// carries the session prefix: system segments become the system message, the
// rest of the prefix leads the first user message.
func (c *conversation) addUser(s *workload.Script, t *workload.Turn) error {
	var segs []workload.Segment
	if c.n == 0 && len(c.prompt) == 0 {
		var system []workload.Segment
		for _, seg := range s.Prefix {
			if seg.Kind == workload.KindSystem {
				system = append(system, seg)
			} else {
				segs = append(segs, seg)
			}
		}
		if len(system) > 0 {
			text, err := c.render(system)
			if err != nil {
				return err
			}
			c.add("system", text)
		}
	}
	segs = append(segs, t.NewContent...)
	text, err := c.render(segs)
	if err != nil {
		return err
	}
	c.add("user", text)
	return nil
}

// addReply appends the server's actual reply: its final content, and, when
// reasoning is not empty, its chain of thought as the assistant message's
// reasoning_content (the input field vLLM accepts, old and current
// versions). The completions endpoint has no separate reasoning: its reply
// text is everything the model generated, appended as it is.
func (c *conversation) addReply(content, reasoning []byte) {
	if c.endpoint == EndpointCompletions {
		reasoning = nil
	}
	c.addMessage("assistant", content, reasoning)
}

func (c *conversation) add(role string, text []byte) { c.addMessage(role, text, nil) }

func (c *conversation) addMessage(role string, text, reasoning []byte) {
	if c.endpoint == EndpointCompletions {
		c.prompt = append(c.prompt, text...)
		return
	}
	if c.n > 0 {
		c.msgs = append(c.msgs, ',')
	}
	c.msgs = append(c.msgs, `{"role":`...)
	c.msgs = appendJSONString(c.msgs, role)
	c.msgs = append(c.msgs, `,"content":`...)
	c.msgs = appendJSONString(c.msgs, text)
	if len(reasoning) > 0 {
		c.msgs = append(c.msgs, `,"`+vllm.FieldReasoningContent+`":`...)
		c.msgs = appendJSONString(c.msgs, reasoning)
	}
	c.msgs = append(c.msgs, '}')
	c.n++
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD (as
// encoding/json does). Unlike encoding/json it leaves <, > and & alone,
// which is the same JSON value.
func appendJSONString[T []byte | string](dst []byte, s T) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029': // valid JSON, but not JavaScript
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// requestParams are the per-request fields besides the history.
type requestParams struct {
	model     string
	maxTokens int
	exact     bool // ask for exactly maxTokens tokens (vLLM: ignore_eos, min_tokens)
}

// body builds the JSON request body.
func (c *conversation) body(dst []byte, p requestParams) []byte {
	dst = append(dst, `{"model":`...)
	dst = appendJSONString(dst, p.model)
	if c.endpoint == EndpointCompletions {
		dst = append(dst, `,"prompt":`...)
		dst = appendJSONString(dst, c.prompt)
	} else {
		dst = append(dst, `,"messages":[`...)
		dst = append(dst, c.msgs...)
		dst = append(dst, ']')
	}
	if p.maxTokens > 0 {
		dst = append(dst, `,"max_tokens":`...)
		dst = strconv.AppendInt(dst, int64(p.maxTokens), 10)
		if p.exact {
			dst = append(dst, `,"ignore_eos":true,"min_tokens":`...)
			dst = strconv.AppendInt(dst, int64(p.maxTokens), 10)
		}
	}
	dst = append(dst, `,"stream":true,"stream_options":{"include_usage":true}}`...)
	return dst
}
