package testserver

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestFaultMixIsSeededAndProportional(t *testing.T) {
	draw := func(seed uint64) []Fault {
		s := New(Config{FaultRate: 0.2, Seed: seed})
		out := make([]Fault, 5000)
		for i := range out {
			out[i] = s.pickFault(&Request{})
		}
		return out
	}
	a, b := draw(3), draw(3)
	faults := map[Fault]int{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed, different faults")
		}
		faults[a[i]]++
	}
	if n := 5000 - faults[FaultNone]; n < 850 || n > 1150 {
		t.Fatalf("%d faults in 5000 at rate 0.2", n)
	}
	for _, f := range AllFaults {
		if faults[f] == 0 {
			t.Errorf("fault %s never drawn", f)
		}
	}
}

func TestStreamsUsageAndLogsEmissions(t *testing.T) {
	s := Start(Config{TokenInterval: time.Millisecond, TokensPerChunk: 2, KeepLog: true})
	defer s.Close()
	body := `{"messages":[{"role":"user","content":"hi there"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("X-Request-Id", "abc")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			lines = append(lines, l)
		}
	}
	// role chunk, 3 content chunks (2+2+1 tokens), usage, [DONE]
	if len(lines) != 6 || lines[5] != "data: [DONE]" || !strings.Contains(lines[4], `"completion_tokens":5`) {
		t.Fatalf("stream:\n%s", strings.Join(lines, "\n"))
	}
	log := s.Log()
	if len(log) != 1 || log[0].ID != "abc" || len(log[0].Emitted) != 3 || log[0].Tokens[2] != 1 || log[0].Reply == "" {
		t.Fatalf("log %+v", log)
	}
}

func TestStreamsReasoningBeforeContent(t *testing.T) {
	for _, field := range []string{"", "reasoning_content"} {
		for _, drop := range []bool{false, true} {
			s := Start(Config{TokenInterval: time.Millisecond, TokensPerChunk: 2, ReasoningTokens: 3, ReasoningField: field,
				CountTokens: func(text string) int { return len(strings.Fields(text)) }, DropHistoryReasoning: drop, KeepLog: true})
			body := `{"messages":[{"role":"user","content":"hi there"},{"role":"assistant","content":"a b","reasoning_content":"c d e"},` +
				`{"role":"user","content":"more"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`
			resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if l := sc.Text(); l != "" {
					lines = append(lines, l)
				}
			}
			resp.Body.Close()
			s.Close()
			if field == "" {
				field = "reasoning"
			}
			// role, reasoning 2+1 (a chunk never mixes), content 2, usage, [DONE]
			want := []string{`"role":"assistant"`, `"` + field + `":"a1.0 "`, `"` + field + `":"a1.2 "`, `"content":"r1.3 "`, `"completion_tokens":5`, "[DONE]"}
			prompt := `"prompt_tokens":8,` // 2 + 2 + 3 + 1 words
			if drop {
				prompt = `"prompt_tokens":5,`
			}
			if len(lines) != len(want) || !strings.Contains(lines[4], prompt) {
				t.Fatalf("stream (field %s, drop %v):\n%s", field, drop, strings.Join(lines, "\n"))
			}
			for i, w := range want {
				if !strings.Contains(lines[i], w) {
					t.Fatalf("line %d %s lacks %s", i, lines[i], w)
				}
			}
			if log := s.Log(); log[0].Reasoning != "a1.0 a1.2 " || log[0].Reply != "r1.3 " || log[0].Messages[1].ReasoningContent != "c d e" {
				t.Fatalf("log %+v", log[0])
			}
		}
	}
}
