package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spoc-project/spoc/tokenizer"
)

// vllmConversation is one element of vLLM's multi-turn benchmark input
// (benchmarks/multi_turn): a JSON array of conversations, each an id and an
// OpenAI-style message list.
type vllmConversation struct {
	ID       json.RawMessage `json:"id"`
	Messages []vllmMessage   `json:"messages"`
}

type vllmMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// content returns a message's text: a string, or the text parts of an
// OpenAI content array.
func (m *vllmMessage) content() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", errors.New("content is neither a string nor a list of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// ReadVLLM reads vLLM multi-turn conversations:
//
//	[{"id": "c1", "messages": [{"role": "system", "content": "..."},
//	  {"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}, ...]}]
//
// Leading system messages become the session prefix; each user message (with
// any tool messages after it) starts a turn whose reply is the following
// assistant message, whose length is also the turn's output budget. A final
// user message without a reply gets DefaultImportOutputTokens. Think times
// are zero: the format records none. name is used in error messages.
func ReadVLLM(r io.Reader, name string, tok *tokenizer.Tokenizer) (*Imported, error) {
	im := newImported(FormatVLLM, tok)
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("read vLLM conversations %s: %w", name, err)
	} else if d, ok := t.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("read vLLM conversations %s: want a JSON array of conversations", name)
	}
	for i := 0; dec.More(); i++ {
		var c vllmConversation
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("read vLLM conversations %s: conversation %d: %w", name, i, err)
		}
		s, err := im.vllmScript(i, &c)
		if err != nil {
			return nil, fmt.Errorf("read vLLM conversations %s: conversation %d (id %s): %w", name, i, c.ID, err)
		}
		if len(s.Turns) > 0 {
			im.add(s)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("read vLLM conversations %s: %w", name, err)
	}
	if len(im.sessions) == 0 {
		return nil, fmt.Errorf("read vLLM conversations %s: no conversation with a user message", name)
	}
	return im, nil
}

func (im *Imported) vllmScript(i int, c *vllmConversation) (*Script, error) {
	s := &Script{Profile: "conversation"}
	var cur *Turn
	for j := range c.Messages {
		m := &c.Messages[j]
		text, err := m.content()
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", j, err)
		}
		turn := len(s.Turns)
		switch m.Role {
		case "system", "developer":
			seg, err := im.literal(KindSystem, 0, 0, text)
			if err != nil {
				return nil, err
			}
			if cur != nil {
				cur.NewContent = append(cur.NewContent, seg)
			} else {
				s.Prefix = append(s.Prefix, seg)
			}
		case "user", "tool":
			if cur == nil || cur.Reply.Tokens > 0 {
				s.Turns = append(s.Turns, Turn{Index: turn})
				cur = &s.Turns[turn]
			}
			seg, err := im.literal(KindTurn, i, cur.Index, text)
			if err != nil {
				return nil, err
			}
			cur.NewContent = append(cur.NewContent, seg)
		case "assistant":
			if cur == nil {
				seg, err := im.literal(KindAssistant, i, 0, text)
				if err != nil {
					return nil, err
				}
				s.Prefix = append(s.Prefix, seg)
				continue
			}
			if cur.Reply.Tokens > 0 {
				return nil, fmt.Errorf("message %d: two assistant messages in a row", j)
			}
			seg, err := im.literal(KindAssistant, i, cur.Index, text)
			if err != nil {
				return nil, err
			}
			cur.Reply = seg
			cur.ReplyTokens = max(1, seg.Tokens)
			cur.MaxTokens = cur.ReplyTokens
		default:
			return nil, fmt.Errorf("message %d: unknown role %q (system, user, assistant or tool)", j, m.Role)
		}
	}
	for k := range s.Turns {
		t := &s.Turns[k]
		if t.MaxTokens == 0 {
			t.MaxTokens, t.ReplyTokens = DefaultImportOutputTokens, DefaultImportOutputTokens
			t.Reply = Segment{Kind: KindAssistant, Owner: i, Turn: k, Key: hashKey(uint64(i), tagImport, tagAssistant, uint64(k)), Tokens: DefaultImportOutputTokens}
		}
	}
	return s, nil
}
