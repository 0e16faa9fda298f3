package workload

import "time"

// SegmentKind says where a piece of prompt content comes from in the prefix
// geometry; it decides who else sends the same tokens.
type SegmentKind string

// Segment kinds, in the order they appear in a prompt.
const (
	KindSystem    SegmentKind = "system"    // common system prompt (shared by everyone)
	KindRoot      SegmentKind = "root"      // monorepo root files shared by every user
	KindTeam      SegmentKind = "team"      // a team subtree shared by the team's users
	KindUser      SegmentKind = "user"      // user-private files
	KindTurn      SegmentKind = "turn"      // new user content of a turn (question, paste, tool output)
	KindAssistant SegmentKind = "assistant" // a reply in the history
	KindBlock     SegmentKind = "block"     // a block of a block-hash trace, shared by every request with its hash id
)

// Segment is a run of tokens with provenance. Two segments with the same Key
// and Tokens have byte-identical text, so a prefix cache can share them;
// different keys never share content. A Key names one long document and a
// segment is its first Tokens tokens: segments with the same Key and
// different lengths share the shorter one's text except its last line, a
// filler of fewer than MaxTailTokens tokens that completes the exact length
// (see docs/workload.md). Owner is the team index for KindTeam,
// the user index for KindUser, KindTurn and KindAssistant, and 0 otherwise.
type Segment struct {
	Kind   SegmentKind `json:"kind"`
	Owner  int         `json:"owner"`
	Turn   int         `json:"turn"`
	Key    uint64      `json:"key"`
	Tokens int         `json:"tokens"`
}

// Turn is one request of a session. The prompt of turn k is the session's
// Prefix, then for every earlier turn j its NewContent followed by its reply
// (ReplyTokens when simulated; the server's actual reply when live), then turn
// k's NewContent.
type Turn struct {
	Index int `json:"index"`
	// NewContent is what the user adds in this turn.
	NewContent []Segment `json:"new_content"`
	// PromptTokens is the target prompt length of this turn, history included,
	// assuming every earlier reply had exactly ReplyTokens tokens.
	PromptTokens int `json:"prompt_tokens"`
	// MaxTokens is the output budget sent as max_tokens.
	MaxTokens int `json:"max_tokens"`
	// ReplyTokens is the reply length the simulator produces (<= MaxTokens).
	ReplyTokens int `json:"reply_tokens"`
	// ThinkTime is the pause after this turn's reply before the next turn.
	ThinkTime time.Duration `json:"think_time_ns"`
	// Reply is the simulated reply as a segment (KindAssistant, ReplyTokens
	// tokens) so the simulator can place it in later turns' prompts; live
	// runs put the server's actual reply there instead.
	Reply Segment `json:"reply"`
}

// Script is one session of one virtual user, fully determined by the workload
// configuration, the seed, the user index and the session index.
type Script struct {
	User    int    `json:"user"`
	Session int    `json:"session"`
	Profile string `json:"profile"`
	Team    int    `json:"team"`
	// Prefix is the context present at session start (system, root, team and
	// user files), sent as the first part of every turn's prompt.
	Prefix []Segment `json:"prefix"`
	Turns  []Turn    `json:"turns"`
	// Start is when the session's first request is due, as an offset from
	// the start of the run, for open-loop replay of timestamped traces; 0 for
	// closed-loop sessions generated from profiles.
	Start time.Duration `json:"start_ns,omitempty"`
}

// Prompt appends the segments of turn k's prompt to dst: the prefix, then
// every earlier turn's new content and reply, then turn k's new content. The
// token counts add up to Turns[k].PromptTokens.
func (s *Script) Prompt(dst []Segment, k int) []Segment {
	dst = append(dst, s.Prefix...)
	for j := 0; j < k && j < len(s.Turns); j++ {
		dst = append(dst, s.Turns[j].NewContent...)
		if s.Turns[j].Reply.Tokens > 0 {
			dst = append(dst, s.Turns[j].Reply)
		}
	}
	if k < len(s.Turns) {
		dst = append(dst, s.Turns[k].NewContent...)
	}
	return dst
}

// Tokens is the sum of the segments' token counts.
func Tokens(segs []Segment) int {
	n := 0
	for i := range segs {
		n += segs[i].Tokens
	}
	return n
}

// Source yields session scripts lazily: Session(user, n) is user's n-th
// session (n from 0). Implementations are deterministic and safe for
// concurrent use; nothing is materialised until asked for.
type Source interface {
	Session(user, n int) (*Script, error)
}

// Renderer turns a segment into text whose tokenization under the workload's
// tokenizer has exactly seg.Tokens tokens; the same segment always renders to
// the same bytes. Render appends to dst and returns the extended slice.
type Renderer interface {
	Render(dst []byte, seg Segment) ([]byte, error)
}
