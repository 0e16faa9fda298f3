package workload

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/tokenizer"
)

func testTokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	return testText(t).Tokenizer()
}

// checkImported verifies the invariants every importer must keep and that
// every segment renders to its length.
func checkImported(t *testing.T, im *Imported) {
	t.Helper()
	im.text = testText(t)
	im.textOnce.Do(func() {})
	tok := testTokenizer(t)
	for i := 0; i < im.Len(); i++ {
		s, err := im.Session(i, 0)
		if err != nil {
			t.Fatal(err)
		}
		var segs []Segment
		for k, turn := range s.Turns {
			segs = s.Prompt(segs[:0], k)
			if Tokens(segs) != turn.PromptTokens || turn.MaxTokens < 1 || turn.ReplyTokens != turn.Reply.Tokens {
				t.Fatalf("session %d turn %d inconsistent: %+v", i, k, turn)
			}
			for _, seg := range append(segs, turn.Reply) {
				b, err := im.Render(nil, seg)
				if err != nil {
					t.Fatal(err)
				}
				if n := count(t, tok, b); n != seg.Tokens {
					t.Fatalf("session %d turn %d %s segment: rendered %d tokens, want %d", i, k, seg.Kind, n, seg.Tokens)
				}
			}
		}
	}
}

func openTestdata(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestReadVLLM(t *testing.T) {
	im, err := ReadVLLM(openTestdata(t, "vllm_conversations.json"), "vllm_conversations.json", testTokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	if im.Len() != 2 {
		t.Fatalf("%d sessions, want 2", im.Len())
	}
	checkImported(t, im)
	s, _ := im.Session(0, 0)
	if len(s.Turns) != 2 || len(s.Prefix) != 1 || s.Prefix[0].Kind != KindSystem {
		t.Fatalf("conversation 1: %d turns, prefix %+v", len(s.Turns), s.Prefix)
	}
	b, _ := im.Render(nil, s.Turns[0].Reply)
	if !strings.Contains(string(b), "return a + b") {
		t.Fatalf("reply renders %q, want the recorded text", b)
	}
	s2, _ := im.Session(1, 0)
	if s2.Prefix[0].Key != s.Prefix[0].Key {
		t.Fatal("identical system prompts got different keys")
	}
	if last := s2.Turns[len(s2.Turns)-1]; last.MaxTokens != DefaultImportOutputTokens {
		t.Fatalf("unanswered last turn has budget %d", last.MaxTokens)
	}
}

func TestReadAIPerf(t *testing.T) {
	im, err := ReadAIPerf(openTestdata(t, "aiperf_multiturn.jsonl"), "aiperf_multiturn.jsonl", testTokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	checkImported(t, im)
	a, _ := im.Session(0, 0)
	if len(a.Turns) != 3 || a.Turns[0].ThinkTime != 15*time.Second || a.Turns[1].ThinkTime != 22500*time.Millisecond || a.Turns[1].MaxTokens != 300 {
		t.Fatalf("session-a: %+v", a.Turns)
	}
	b, _ := im.Session(1, 0)
	if b.Start != time.Second || b.Turns[1].MaxTokens != DefaultImportOutputTokens {
		t.Fatalf("session-b: start %v, turns %+v", b.Start, b.Turns)
	}
}

func TestReadBlockTraces(t *testing.T) {
	moon, err := ReadBlockTrace(openTestdata(t, "mooncake_trace.jsonl"), "mooncake", testTokenizer(t), MooncakeBlockTokens, 1)
	if err != nil {
		t.Fatal(err)
	}
	checkImported(t, moon)
	s3, _ := moon.Session(3, 0)
	if s3.Start != 1500*time.Millisecond || s3.Turns[0].PromptTokens != 2100 {
		t.Fatalf("mooncake request 4: start %v prompt %d", s3.Start, s3.Turns[0].PromptTokens)
	}
	// Requests 1, 2 and 4 share hash ids 0 and 1: 1024 tokens of prefix.
	var c IdealPrefixCache
	for i := 0; i < moon.Len(); i++ {
		s, _ := moon.Session(i, 0)
		hit := c.Lookup(s.Prompt(nil, 0))
		want := map[int]int{0: 0, 1: 1024, 2: 0, 3: 1300}[i]
		if hit != want {
			t.Fatalf("mooncake request %d: cache hit %d tokens, want %d", i, hit, want)
		}
	}
	bai, err := ReadBlockTrace(openTestdata(t, "bailian_trace.jsonl"), "bailian", testTokenizer(t), BailianBlockTokens, 1)
	if err != nil {
		t.Fatal(err)
	}
	checkImported(t, bai)
	if got := bai.Profiles(); len(got) != 2 || got[0] != "text" || got[1] != "search" {
		t.Fatalf("bailian profiles %v", got)
	}
	s1, _ := bai.Session(1, 0)
	if s1.Start != 13888*time.Millisecond {
		t.Fatalf("bailian second request start %v", s1.Start)
	}
}

func TestImportErrors(t *testing.T) {
	tok := testTokenizer(t)
	tests := []struct {
		name string
		read func(string) error
		in   string
		want string
	}{
		{"vllm not array", func(s string) error { _, err := ReadVLLM(strings.NewReader(s), "c.json", tok); return err }, `{"id":1}`, "read vLLM conversations c.json: want a JSON array"},
		{"vllm bad role", func(s string) error { _, err := ReadVLLM(strings.NewReader(s), "c.json", tok); return err }, `[{"id":"x","messages":[{"role":"robot","content":"hi"}]}]`, `read vLLM conversations c.json: conversation 0 (id "x"): message 0: unknown role "robot"`},
		{"vllm empty", func(s string) error { _, err := ReadVLLM(strings.NewReader(s), "c.json", tok); return err }, `[]`, "read vLLM conversations c.json: no conversation with a user message"},
		{"aiperf bad json", func(s string) error { _, err := ReadAIPerf(strings.NewReader(s), "d.jsonl", tok); return err }, "{\"session_id\":\"a\",\"turns\":[{\"text\":\"x\"}]}\n{oops", "read AIPerf dataset d.jsonl:2: invalid character"},
		{"aiperf no text", func(s string) error { _, err := ReadAIPerf(strings.NewReader(s), "d.jsonl", tok); return err }, `{"session_id":"a","turns":[{"delay":5}]}`, "read AIPerf dataset d.jsonl:1: turn 0 has no text"},
		{"aiperf bad output", func(s string) error { _, err := ReadAIPerf(strings.NewReader(s), "d.jsonl", tok); return err }, `{"session_id":"a","turns":[{"text":"x","output_length":0}]}`, "read AIPerf dataset d.jsonl:1: turn 0: output_length must be positive, got 0"},
		{"aiperf bad delay", func(s string) error { _, err := ReadAIPerf(strings.NewReader(s), "d.jsonl", tok); return err }, `{"session_id":"a","turns":[{"text":"x"},{"text":"y","delay":-3}]}`, "read AIPerf dataset d.jsonl:1: turn 1: delay must be a non-negative number of milliseconds, got -3"},
		{"mooncake missing", func(s string) error {
			_, err := ReadBlockTrace(strings.NewReader(s), "t.jsonl", tok, MooncakeBlockTokens, 1)
			return err
		}, `{"timestamp":1,"hash_ids":[1]}`, "read mooncake trace t.jsonl:1: input_length and output_length are required"},
		{"bailian negative", func(s string) error {
			_, err := ReadBlockTrace(strings.NewReader(s), "t.jsonl", tok, BailianBlockTokens, 1)
			return err
		}, `{"chat_id":1,"timestamp":-1,"input_length":5,"output_length":1,"hash_ids":[1]}`, "read bailian trace t.jsonl:1: timestamp must be a non-negative number, got -1"},
	}
	for _, tt := range tests {
		err := tt.read(tt.in)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want prefix %q", tt.name, err, tt.want)
		}
	}
}

func fuzzImported(t *testing.T, im *Imported, err error) {
	if err != nil {
		return
	}
	for i := 0; i < im.Len(); i++ {
		s, err := im.Session(i, 0)
		if err != nil {
			t.Fatal(err)
		}
		var segs []Segment
		for k, turn := range s.Turns {
			segs = s.Prompt(segs[:0], k)
			if Tokens(segs) != turn.PromptTokens || turn.MaxTokens < 1 {
				t.Fatalf("inconsistent turn %+v", turn)
			}
		}
	}
}

func addTestdataSeed(f *testing.F, name string) {
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

func FuzzReadVLLM(f *testing.F) {
	addTestdataSeed(f, "vllm_conversations.json")
	tok := testTokenizer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := ReadVLLM(bytes.NewReader(data), "fuzz", tok)
		fuzzImported(t, im, err)
	})
}

func FuzzReadAIPerf(f *testing.F) {
	addTestdataSeed(f, "aiperf_multiturn.jsonl")
	tok := testTokenizer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := ReadAIPerf(bytes.NewReader(data), "fuzz", tok)
		fuzzImported(t, im, err)
	})
}

func FuzzReadBlockTrace(f *testing.F) {
	addTestdataSeed(f, "mooncake_trace.jsonl")
	addTestdataSeed(f, "bailian_trace.jsonl")
	tok := testTokenizer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, bs := range []int{MooncakeBlockTokens, BailianBlockTokens} {
			im, err := ReadBlockTrace(bytes.NewReader(data), "fuzz", tok, bs, 1)
			fuzzImported(t, im, err)
		}
	})
}
