package loadgen

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/spoc-project/spoc/workload"
)

// Endpoints the runner can drive.
const (
	EndpointChat        = "chat"        // /v1/chat/completions
	EndpointCompletions = "completions" // /v1/completions
)

// conversation is one session's history as the server will see it. Chat
// messages are JSON-encoded once, when added, so that a long history is not
// re-escaped on every turn; the completions prompt is kept as raw text.
type conversation struct {
	endpoint string
	renderer workload.Renderer
	msgs     [][]byte // encoded chat messages
	prompt   []byte   // completions prompt text
	scratch  []byte
}

func newConversation(endpoint string, r workload.Renderer) *conversation {
	return &conversation{endpoint: endpoint, renderer: r}
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
	if len(c.msgs) == 0 && len(c.prompt) == 0 {
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

// addReply appends the server's actual reply.
func (c *conversation) addReply(reply []byte) { c.add("assistant", reply) }

func (c *conversation) add(role string, text []byte) {
	if c.endpoint == EndpointCompletions {
		c.prompt = append(c.prompt, text...)
		return
	}
	m, _ := json.Marshal(struct { // strings always marshal
		Role    string `json:"role"`
		Content string `json:"content"`
	}{role, string(text)})
	c.msgs = append(c.msgs, m)
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
	model, _ := json.Marshal(p.model)
	dst = append(dst, model...)
	if c.endpoint == EndpointCompletions {
		dst = append(dst, `,"prompt":`...)
		q, _ := json.Marshal(string(c.prompt))
		dst = append(dst, q...)
	} else {
		dst = append(dst, `,"messages":[`...)
		for i, m := range c.msgs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, m...)
		}
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
