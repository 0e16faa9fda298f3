package corpus

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/spoc-project/spoc/tokenizer"
)

// LogNormal is a lognormal distribution by its median and sigma.
type LogNormal struct {
	Median, Sigma float64
}

func (l LogNormal) draw(r *rand.Rand) int {
	return max(1, int(math.Round(l.Median*math.Exp(l.Sigma*r.NormFloat64()))))
}

// SyntheticSpec describes synthetic agent trajectories: a system prompt, a
// task, then Steps assistant calls, each followed by a tool result. Token
// lengths are exact under the tokenizer given to Synthesize.
type SyntheticSpec struct {
	MinSteps, MaxSteps int
	SystemTokens       int
	TaskTokens         LogNormal // the first user message
	OutputTokens       LogNormal // an assistant message: text plus tool-call arguments
	ToolTokens         LogNormal // a tool result
}

// DefaultSyntheticSpec is the fixture spec the tests fit against.
var DefaultSyntheticSpec = SyntheticSpec{
	MinSteps: 3, MaxSteps: 12, SystemTokens: 300,
	TaskTokens:   LogNormal{400, 0.5},
	OutputTokens: LogNormal{150, 0.6},
	ToolTokens:   LogNormal{800, 0.9},
}

// Synthesize returns n trajectories drawn from spec with text cut from the
// built-in corpus, every message exactly its drawn length under tok. They are
// test fixtures and benchmark inputs, not data.
func Synthesize(seed uint64, n int, spec SyntheticSpec, tok *tokenizer.Tokenizer) ([]Trajectory, error) {
	src, err := newTextSource(tok)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	const args = `{"command": "run_tests"}`
	argTokens, err := tok.Count(args)
	if err != nil {
		return nil, err
	}
	out := make([]Trajectory, n)
	for i := range out {
		t := &out[i]
		t.ID = fmt.Sprintf("synthetic-%d-%d", seed, i)
		t.Source = "synthetic"
		t.License = []string{"Apache-2.0", "MIT", "CC-BY-4.0"}[i%3]
		t.Messages = append(t.Messages,
			Message{Role: "system", Content: src.text(r, KindSystem, spec.SystemTokens)},
			Message{Role: "user", Content: src.text(r, KindProse, spec.TaskTokens.draw(r))})
		steps := spec.MinSteps + r.IntN(spec.MaxSteps-spec.MinSteps+1)
		for s := 0; s < steps; s++ {
			id := fmt.Sprintf("call_%d", s)
			content := src.text(r, KindProse, max(1, spec.OutputTokens.draw(r)-argTokens))
			t.Messages = append(t.Messages,
				Message{Role: "assistant", Content: content, ToolCalls: []ToolCall{{ID: id, Name: "bash", Arguments: args}}},
				Message{Role: "tool", ToolCallID: id, Name: "bash", Content: src.text(r, KindTool, spec.ToolTokens.draw(r))})
		}
		t.Patch = src.text(r, KindDiff, 200)
	}
	return out, nil
}

// textSource cuts exact-length text from the built-in corpus.
type textSource struct {
	chunks map[Kind][]tokenizer.Chunk
}

func newTextSource(tok *tokenizer.Tokenizer) (*textSource, error) {
	s := &textSource{chunks: map[Kind][]tokenizer.Chunk{}}
	for _, d := range Generate(BuiltinSeed+1, 24).Docs {
		cs, err := tok.Chunks(d.Text)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if c.Tokens < 64 {
				s.chunks[d.Kind] = append(s.chunks[d.Kind], c)
			}
		}
	}
	return s, nil
}

func (s *textSource) text(r *rand.Rand, k Kind, n int) string {
	cs := s.chunks[k]
	var b strings.Builder
	i := r.IntN(len(cs))
	for n > 0 {
		c := cs[i%len(cs)]
		i++
		if c.Tokens > n {
			b.WriteString(tokenizer.Filler(n))
			break
		}
		b.WriteString(c.Text)
		n -= c.Tokens
	}
	return b.String()
}

// WriteParquet writes trajectories as a parquet file of dataset's schema
// (coderforge: messages as JSON text; swe-rebench: a list of message structs
// with tool_calls as JSON text or "None").
func WriteParquet(w io.Writer, dataset string, trajs []Trajectory) error {
	switch dataset {
	case DatasetCoderForge:
		pw := parquet.NewGenericWriter[CoderForgeRow](w, parquet.MaxRowsPerRowGroup(64))
		for i := range trajs {
			row, err := CoderForgeRowOf(&trajs[i])
			if err != nil {
				return err
			}
			if _, err := pw.Write([]CoderForgeRow{row}); err != nil {
				return fmt.Errorf("write parquet: %w", err)
			}
		}
		return pw.Close()
	case DatasetSWERebench:
		pw := parquet.NewGenericWriter[SWERebenchRow](w, parquet.MaxRowsPerRowGroup(64))
		for i := range trajs {
			if _, err := pw.Write([]SWERebenchRow{SWERebenchRowOf(&trajs[i])}); err != nil {
				return fmt.Errorf("write parquet: %w", err)
			}
		}
		return pw.Close()
	}
	return fmt.Errorf("unknown dataset %q", dataset)
}

func toolCallsJSON(calls []ToolCall) string {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	out := make([]call, len(calls))
	for i, c := range calls {
		out[i] = call{ID: c.ID, Type: "function", Function: fn{c.Name, c.Arguments}}
	}
	b, _ := json.Marshal(out) // plain strings always marshal
	return string(b)
}

// CoderForgeRowOf encodes t the way CoderForge-Preview stores it.
func CoderForgeRowOf(t *Trajectory) (CoderForgeRow, error) {
	msgs := make([]map[string]any, len(t.Messages))
	for i, m := range t.Messages {
		mm := map[string]any{"role": m.Role, "content": m.Content}
		if m.Name != "" {
			mm["name"] = m.Name
		}
		if m.ToolCallID != "" {
			mm["tool_call_id"] = m.ToolCallID
		}
		if len(m.ToolCalls) > 0 {
			mm["tool_calls"] = json.RawMessage(toolCallsJSON(m.ToolCalls))
		}
		msgs[i] = mm
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		return CoderForgeRow{}, fmt.Errorf("encode trajectory %s: %w", t.ID, err)
	}
	return CoderForgeRow{TrajectoryID: t.ID, FinishReason: "stop", Messages: string(b), Reward: 1, Tools: "[]", License: t.License}, nil
}

// SWERebenchRowOf encodes t the way SWE-rebench-openhands-trajectories
// stores it.
func SWERebenchRowOf(t *Trajectory) SWERebenchRow {
	row := SWERebenchRow{TrajectoryID: t.ID, InstanceID: t.ID, Repo: "example/repo", ModelPatch: t.Patch, ExitStatus: "submitted", Resolved: true, Tools: "[]"}
	for _, m := range t.Messages {
		calls := "None"
		if len(m.ToolCalls) > 0 {
			calls = toolCallsJSON(m.ToolCalls)
		}
		row.Trajectory = append(row.Trajectory, SWERebenchMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID, ToolCalls: calls})
	}
	return row
}
