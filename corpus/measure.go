package corpus

import "github.com/spoc-project/spoc/tokenizer"

// Call is one model call of a trajectory, in tokens: the context sent (every
// message before the assistant message) and the output (its text plus its
// tool-call arguments). Chat-template overhead is not counted.
type Call struct {
	Context int `json:"context"`
	Output  int `json:"output"`
}

// Measure is the token shape of one trajectory.
type Measure struct {
	ID    string `json:"id"`
	Calls []Call `json:"calls"`
	// Growth[k] is what was added between call k and call k+1 besides call
	// k's own output: tool results and user messages.
	Growth []int `json:"growth"`
	// ToolOutputs are the sizes of the tool results.
	ToolOutputs []int `json:"tool_outputs"`
}

// MeasureTrajectory counts the tokens of every message of t with tok.
func MeasureTrajectory(t *Trajectory, tok *tokenizer.Tokenizer) (Measure, error) {
	m := Measure{ID: t.ID}
	context := 0
	for _, msg := range t.Messages {
		n, err := tok.Count(msg.Content)
		if err != nil {
			return m, err
		}
		if msg.Role == "assistant" {
			out := n
			for _, c := range msg.ToolCalls {
				a, err := tok.Count(c.Arguments)
				if err != nil {
					return m, err
				}
				out += a
			}
			if k := len(m.Calls); k > 0 {
				prev := m.Calls[k-1]
				m.Growth = append(m.Growth, context-prev.Context-prev.Output)
			}
			m.Calls = append(m.Calls, Call{Context: context, Output: out})
			context += out
			continue
		}
		if msg.Role == "tool" || msg.Role == "function" {
			m.ToolOutputs = append(m.ToolOutputs, n)
		}
		context += n
	}
	return m, nil
}
