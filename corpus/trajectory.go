package corpus

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spoc-project/spoc/internal/chatmsg"
)

// Message is one message of a coding-agent trajectory, in OpenAI chat shape.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is a function call an assistant message makes.
type ToolCall struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text, as the model wrote it
}

// Trajectory is one agent run: the messages in order, the final patch when
// the dataset records one, and where it came from.
type Trajectory struct {
	ID       string
	Source   string // dataset name
	License  string // SPDX identifier, or "" when unknown
	Repo     string
	Patch    string // unified diff the run produced
	Messages []Message
}

// ReadStats counts what a reader saw; malformed rows are skipped, never
// fatal, and reported here.
type ReadStats struct {
	Rows      int64            `json:"rows"`
	Malformed int64            `json:"malformed"`
	Skipped   int64            `json:"skipped_by_license"`
	Reasons   map[string]int64 `json:"malformed_reasons,omitempty"`
	Bytes     int64            `json:"bytes"`
}

func (s *ReadStats) malformed(reason string) {
	s.Malformed++
	if s.Reasons == nil {
		s.Reasons = map[string]int64{}
	}
	s.Reasons[reason]++
}

// Add merges o into s.
func (s *ReadStats) Add(o ReadStats) {
	s.Rows += o.Rows
	s.Malformed += o.Malformed
	s.Skipped += o.Skipped
	s.Bytes += o.Bytes
	for k, v := range o.Reasons {
		if s.Reasons == nil {
			s.Reasons = map[string]int64{}
		}
		s.Reasons[k] += v
	}
}

// openAIMessage is the JSON shape of a chat message with OpenAI tool calls,
// whose function.arguments is itself JSON text.
type openAIMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
}

type openAIToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// contentText returns a message content that is a string, null, or a list

// parseToolCalls decodes a tool_calls value: a JSON list, JSON text holding
// a list, or the literal None/null/empty meaning no calls.
func parseToolCalls(raw json.RawMessage) ([]ToolCall, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" || s == "None" || s == `"None"` || s == "[]" || s == `""` {
		return nil, nil
	}
	if strings.HasPrefix(s, `"`) { // JSON text inside a string
		var inner string
		if err := json.Unmarshal(raw, &inner); err != nil {
			return nil, fmt.Errorf("tool_calls: %w", err)
		}
		return parseToolCalls(json.RawMessage(inner))
	}
	var calls []openAIToolCall
	if err := json.Unmarshal([]byte(s), &calls); err != nil {
		return nil, fmt.Errorf("tool_calls: %w", err)
	}
	out := make([]ToolCall, len(calls))
	for i, c := range calls {
		args := string(c.Function.Arguments)
		var str string
		if json.Unmarshal(c.Function.Arguments, &str) == nil {
			args = str // arguments given as JSON text in a string, the OpenAI way
		}
		out[i] = ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args}
	}
	return out, nil
}

// parseMessages decodes a JSON-encoded OpenAI chat list.
func parseMessages(text string) ([]Message, error) {
	var raw []openAIMessage
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	out := make([]Message, 0, len(raw))
	for i, m := range raw {
		content, err := chatmsg.Text(m.Content)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		calls, err := parseToolCalls(m.ToolCalls)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out = append(out, Message{Role: m.Role, Content: content, Name: m.Name, ToolCallID: m.ToolCallID, ToolCalls: calls})
	}
	return out, nil
}
