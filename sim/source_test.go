package sim

import (
	"time"

	"github.com/spoc-project/spoc/workload"
)

// synthSource is a small deterministic stand-in for the workload package's
// generator with the reference mix's shape: 70 % P0 (5k → 50k), 20 % P1
// (15k → 120k), 10 % P2 (75k → 126k), a shared system prompt and monorepo
// root, 8 team subtrees and private files.
type synthSource struct {
	outputTokens int
	think        time.Duration
}

func (s synthSource) Session(user, n int) (*workload.Script, error) {
	type prof struct {
		name            string
		start, max, grw int
	}
	p := prof{"P0", 5000, 50000, 1200}
	switch user % 10 {
	case 7, 8:
		p = prof{"P1", 15000, 120000, 2500}
	case 9:
		p = prof{"P2", 75000, 126000, 3000}
	}
	jitter := int(mixInts(user, n) % 1000)
	start := p.start + jitter
	team := user % 8
	root := min(60000, (start-1500)/2)
	teamTok := min(24000, (start-1500)*3/10)
	own := start - 1500 - root - teamTok
	sc := &workload.Script{User: user, Session: n, Profile: p.name, Team: team}
	sc.Prefix = []workload.Segment{
		{Kind: workload.KindSystem, Key: 1, Tokens: 1500},
		{Kind: workload.KindRoot, Key: 2, Tokens: root},
		{Kind: workload.KindTeam, Owner: team, Key: 100 + uint64(team), Tokens: teamTok},
		{Kind: workload.KindUser, Owner: user, Key: mixInts(user, n) | 1<<63, Tokens: own},
	}
	out := s.outputTokens
	if out == 0 {
		out = 400
	}
	think := s.think
	if think == 0 {
		think = 20 * time.Second
	}
	ctx := start
	for i := 0; ; i++ {
		grow := p.grw
		if i == 0 {
			grow = 200
		}
		if ctx+grow+out > p.max {
			break
		}
		ctx += grow
		sc.Turns = append(sc.Turns, workload.Turn{
			Index:        i,
			NewContent:   []workload.Segment{{Kind: workload.KindTurn, Owner: user, Turn: i, Key: mixInts(user, n*1000+i+1) | 1<<62, Tokens: grow}},
			PromptTokens: ctx,
			MaxTokens:    out,
			ReplyTokens:  out,
			ThinkTime:    think,
		})
		ctx += out
	}
	return sc, nil
}

func mixInts(a, b int) uint64 { return fmix(mix(uint64(a)+7, uint64(b)+13)) }
