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

// Block sizes of the public block-hash traces: Mooncake hashes 512-token
// blocks, Bailian (Qwen usage traces) 16-token blocks.
const (
	MooncakeBlockTokens = 512
	BailianBlockTokens  = 16
)

// blockRecord is one request of a Mooncake or Bailian trace.
type blockRecord struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *int     `json:"input_length"`
	OutputLength *int     `json:"output_length"`
	HashIDs      []int64  `json:"hash_ids"`
	// Bailian only.
	ChatID       *int64 `json:"chat_id"`
	ParentChatID *int64 `json:"parent_chat_id"`
	Turn         *int   `json:"turn"`
	Type         string `json:"type"`
}

// ReadBlockTrace reads a block-hash trace, one request per line: Mooncake
//
//	{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48, ...]}
//
// with timestamps in milliseconds and blockTokens = 512, or Bailian
//
//	{"chat_id": 159, "parent_chat_id": -1, "timestamp": 61.114, "input_length": 521,
//	 "output_length": 132, "type": "text", "turn": 1, "hash_ids": [...]}
//
// with timestamps in seconds and blockTokens = 16 (recognised by chat_id).
// Every request becomes a single-turn session due at its timestamp (Start):
// its prompt is one KindBlock segment per hash id, blockTokens long except
// the last, which holds the rest of input_length; equal hash ids render to
// equal text, so the trace's prefix sharing is reproduced exactly. A Bailian
// follow-up turn already carries its history in its hash ids, so chains are
// replayed as independent timed requests; profiles are the request types.
func ReadBlockTrace(r io.Reader, name string, tok *tokenizer.Tokenizer, blockTokens int, seed uint64) (*Imported, error) {
	format := FormatMooncake
	if blockTokens == BailianBlockTokens {
		format = FormatBailian
	}
	if blockTokens < 1 {
		return nil, fmt.Errorf("read %s trace %s: block size must be positive, got %d", format, name, blockTokens)
	}
	im := newImported(format, tok)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := 0
	var t0 float64
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec blockRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("read %s trace %s:%d: %w", format, name, line, err)
		}
		s, ts, err := blockScript(&rec, len(im.sessions), blockTokens, seed)
		if err != nil {
			return nil, fmt.Errorf("read %s trace %s:%d: %w", format, name, line, err)
		}
		if len(im.sessions) == 0 {
			t0 = ts
		}
		unit := float64(time.Millisecond)
		if rec.ChatID != nil {
			unit = float64(time.Second)
		}
		s.Start = time.Duration(math.Round(math.Max(0, ts-t0) * unit))
		im.add(s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s trace %s:%d: %w", format, name, line+1, err)
	}
	if len(im.sessions) == 0 {
		return nil, fmt.Errorf("read %s trace %s: no requests", format, name)
	}
	return im, nil
}

func blockScript(rec *blockRecord, owner, blockTokens int, seed uint64) (*Script, float64, error) {
	if rec.InputLength == nil || rec.OutputLength == nil {
		return nil, 0, fmt.Errorf("input_length and output_length are required")
	}
	in, out := *rec.InputLength, *rec.OutputLength
	if in < 1 || out < 1 {
		return nil, 0, fmt.Errorf("input_length (%d) and output_length (%d) must be positive", in, out)
	}
	if in > 1<<24 || out > 1<<24 {
		return nil, 0, fmt.Errorf("input_length (%d) or output_length (%d) implausibly large", in, out)
	}
	ts := 0.0
	if rec.Timestamp != nil {
		ts = *rec.Timestamp
		if !(ts >= 0 && ts < maxTraceMillis) {
			return nil, 0, fmt.Errorf("timestamp must be a non-negative number, got %v", ts)
		}
	}
	profile := "request"
	if rec.ChatID != nil {
		profile = "text"
		if rec.Type != "" {
			profile = rec.Type
		}
	}
	var segs []Segment
	rest := in
	for i, id := range rec.HashIDs {
		if rest == 0 {
			break
		}
		n := min(blockTokens, rest)
		if i == len(rec.HashIDs)-1 {
			n = rest // the last block holds the remainder (it may be partial)
		}
		segs = append(segs, Segment{Kind: KindBlock, Key: hashKey(seed, tagImport, uint64(id)), Tokens: n})
		rest -= n
	}
	if rest > 0 { // no hash ids: content private to this request
		segs = append(segs, Segment{Kind: KindTurn, Owner: owner, Key: hashKey(seed, tagImport, tagTurn, uint64(owner)), Tokens: rest})
	}
	s := &Script{Profile: profile, Turns: []Turn{{
		NewContent:  segs,
		MaxTokens:   out,
		ReplyTokens: out,
		Reply:       Segment{Kind: KindAssistant, Owner: owner, Key: hashKey(seed, tagImport, tagAssistant, uint64(owner)), Tokens: out},
	}}}
	return s, ts, nil
}
