package loadgen

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spoc-project/spoc/workload"
)

// SyntheticSource is a fixed, trivially deterministic workload for client
// benchmarks and tests: every session has Turns turns, a prefix of
// PrefixTokens, NewTokens of new content per turn, MaxTokens of output and a
// fixed think time. Profiles, when set, are assigned round-robin by user.
type SyntheticSource struct {
	Turns        int
	PrefixTokens int
	NewTokens    int
	MaxTokens    int
	// HistoryReplyTokens is how many tokens of each reply the prompt
	// targets count in later turns' history; 0 means MaxTokens, the whole
	// reply, as the workload generator assumes. A plan for a reasoning
	// model whose reasoning is dropped from the history counts only the
	// final content here.
	HistoryReplyTokens int
	ThinkTime          time.Duration
	Profiles           []string
}

var _ workload.Source = SyntheticSource{}

// Session returns user's n-th session.
func (s SyntheticSource) Session(user, n int) (*workload.Script, error) {
	if s.Turns < 1 {
		return nil, fmt.Errorf("synthetic source: turns must be at least 1, got %d", s.Turns)
	}
	profile := "synthetic"
	if len(s.Profiles) > 0 {
		profile = s.Profiles[user%len(s.Profiles)]
	}
	sc := &workload.Script{User: user, Session: n, Profile: profile,
		Prefix: []workload.Segment{
			{Kind: workload.KindSystem, Key: 1, Tokens: 8},
			{Kind: workload.KindUser, Owner: user, Key: uint64(user)<<20 | uint64(n), Tokens: s.PrefixTokens},
		}}
	prompt := 8 + s.PrefixTokens
	for t := range s.Turns {
		prompt += s.NewTokens
		sc.Turns = append(sc.Turns, workload.Turn{
			Index:        t,
			NewContent:   []workload.Segment{{Kind: workload.KindTurn, Owner: user, Turn: t, Key: uint64(user)<<32 | uint64(n)<<16 | uint64(t), Tokens: s.NewTokens}},
			PromptTokens: prompt,
			MaxTokens:    s.MaxTokens,
			ReplyTokens:  s.MaxTokens,
			ThinkTime:    s.ThinkTime,
		})
		if s.HistoryReplyTokens > 0 {
			prompt += s.HistoryReplyTokens
		} else {
			prompt += s.MaxTokens
		}
	}
	return sc, nil
}

// FillerRenderer renders a segment as seg.Tokens short space-led words
// derived from its key. It does not tokenize: one word is about one token for common BPE
// vocabularies, which is close enough for client benchmarks and tests.
type FillerRenderer struct{}

var _ workload.Renderer = FillerRenderer{}

// Render appends seg.Tokens words to dst.
func (FillerRenderer) Render(dst []byte, seg workload.Segment) ([]byte, error) {
	if seg.Tokens < 0 {
		return dst, fmt.Errorf("filler renderer: negative token count %d", seg.Tokens)
	}
	tag := strconv.FormatUint(seg.Key%9973, 36)
	for i := range seg.Tokens {
		dst = append(dst, ' ') // leading space: words stay apart across segments
		dst = append(dst, string(seg.Kind[0])...)
		dst = append(dst, tag...)
		dst = strconv.AppendInt(dst, int64(i%1000), 10)
	}
	return dst, nil
}
