package workload

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/spoc-project/spoc/tokenizer"
)

// maxTraceMillis bounds trace times (about 31 years) so they fit a Duration.
const maxTraceMillis = 1e12

// aiperfSession is one line of an AIPerf multi_turn dataset.
type aiperfSession struct {
	SessionID string       `json:"session_id"`
	Turns     []aiperfTurn `json:"turns"`
}

type aiperfTurn struct {
	Text         *string  `json:"text"`
	Texts        []string `json:"texts"`
	Delay        *float64 `json:"delay"`     // milliseconds to wait before sending this turn
	Timestamp    *float64 `json:"timestamp"` // milliseconds since the start of the run
	OutputLength *int     `json:"output_length"`
}

// ReadAIPerf reads an AIPerf multi-turn dataset, one session per line:
//
//	{"session_id": "s1", "turns": [{"text": "...", "output_length": 200},
//	  {"text": "...", "delay": 15000, "output_length": 120}]}
//
// delay (milliseconds) is the pause before a turn, so it becomes the
// previous turn's think time; a first turn's timestamp (milliseconds)
// becomes the session's Start. The reply is synthesised with output_length
// tokens (DefaultImportOutputTokens when absent). name is used in error
// messages.
func ReadAIPerf(r io.Reader, name string, tok *tokenizer.Tokenizer) (*Imported, error) {
	im := newImported(FormatAIPerf, tok)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var as aiperfSession
		if err := json.Unmarshal(sc.Bytes(), &as); err != nil {
			return nil, fmt.Errorf("read AIPerf dataset %s:%d: %w", name, line, err)
		}
		if len(as.Turns) == 0 {
			return nil, fmt.Errorf("read AIPerf dataset %s:%d: session %q has no turns", name, line, as.SessionID)
		}
		owner := len(im.sessions)
		s := &Script{Profile: "aiperf"}
		for k, at := range as.Turns {
			text := ""
			switch {
			case at.Text != nil:
				text = *at.Text
			case len(at.Texts) > 0:
				for _, t := range at.Texts {
					text += t
				}
			default:
				return nil, fmt.Errorf("read AIPerf dataset %s:%d: turn %d has no text", name, line, k)
			}
			seg, err := im.literal(KindTurn, owner, k, text)
			if err != nil {
				return nil, err
			}
			out := DefaultImportOutputTokens
			if at.OutputLength != nil {
				if *at.OutputLength < 1 {
					return nil, fmt.Errorf("read AIPerf dataset %s:%d: turn %d: output_length must be positive, got %d", name, line, k, *at.OutputLength)
				}
				out = *at.OutputLength
			}
			if at.Delay != nil {
				if !(*at.Delay >= 0 && *at.Delay < maxTraceMillis) {
					return nil, fmt.Errorf("read AIPerf dataset %s:%d: turn %d: delay must be a non-negative number of milliseconds, got %v", name, line, k, *at.Delay)
				}
				if k > 0 {
					s.Turns[k-1].ThinkTime = time.Duration(math.Round(*at.Delay * float64(time.Millisecond)))
				}
			}
			if at.Timestamp != nil && !(*at.Timestamp >= 0 && *at.Timestamp < maxTraceMillis) {
				return nil, fmt.Errorf("read AIPerf dataset %s:%d: turn %d: timestamp must be a non-negative number of milliseconds, got %v", name, line, k, *at.Timestamp)
			}
			if k == 0 && at.Timestamp != nil && *at.Timestamp > 0 {
				s.Start = time.Duration(math.Round(*at.Timestamp * float64(time.Millisecond)))
			}
			s.Turns = append(s.Turns, Turn{
				Index:       k,
				NewContent:  []Segment{seg},
				MaxTokens:   out,
				ReplyTokens: out,
				Reply:       Segment{Kind: KindAssistant, Owner: owner, Turn: k, Key: hashKey(uint64(owner), tagImport, tagAssistant, uint64(k)), Tokens: out},
			})
		}
		im.add(s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read AIPerf dataset %s:%d: %w", name, line+1, err)
	}
	if len(im.sessions) == 0 {
		return nil, fmt.Errorf("read AIPerf dataset %s: no sessions", name)
	}
	return im, nil
}
