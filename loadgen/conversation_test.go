package loadgen

import (
	"encoding/json"
	"testing"
)

// checkJSONString asserts appendJSONString(s) is valid JSON decoding to what
// encoding/json's own encoding of s decodes to.
func checkJSONString(t *testing.T, s string) {
	t.Helper()
	got := appendJSONString([]byte("x"), []byte(s))
	if got[0] != 'x' {
		t.Fatalf("prefix lost: %q", got)
	}
	var dec string
	if err := json.Unmarshal(got[1:], &dec); err != nil {
		t.Fatalf("appendJSONString(%q) = %s: not JSON: %v", s, got[1:], err)
	}
	ref, _ := json.Marshal(s)
	var want string
	if err := json.Unmarshal(ref, &want); err != nil {
		t.Fatal(err)
	}
	if dec != want {
		t.Fatalf("appendJSONString(%q) decodes to %q, encoding/json's to %q", s, dec, want)
	}
	if str := string(appendJSONString(nil, s)); str != string(got[1:]) {
		t.Fatalf("string and []byte forms differ: %s vs %s", str, got[1:])
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr", "\x00\x01\x1f\x7f",
		"<b>&amp;</b>", "héllo wörld 日本語 🙂", "bad \xff utf8 \xc3", "\u2028 and \u2029", "\xed\xa0\x80 surrogate"} {
		checkJSONString(t, s)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\xff", "\u2028", "日本"} {
		f.Add(s)
	}
	f.Fuzz(checkJSONString)
}

func TestConversationBodyAndReuse(t *testing.T) {
	c := newConversation(EndpointChat, FillerRenderer{})
	c.add("system", []byte("be \"brief\""))
	c.add("user", []byte("hi\n"))
	c.addReply([]byte("hello <there>"), nil)
	body := c.body(nil, requestParams{model: "m\"x", maxTokens: 7, exact: true})
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role, Content string
		} `json:"messages"`
		MaxTokens int  `json:"max_tokens"`
		MinTokens int  `json:"min_tokens"`
		IgnoreEOS bool `json:"ignore_eos"`
		Stream    bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if req.Model != "m\"x" || len(req.Messages) != 3 || req.Messages[0].Content != "be \"brief\"" ||
		req.Messages[2].Role != "assistant" || req.Messages[2].Content != "hello <there>" ||
		req.MaxTokens != 7 || req.MinTokens != 7 || !req.IgnoreEOS || !req.Stream {
		t.Fatalf("decoded %+v from %s", req, body)
	}
	c.addReply([]byte("done"), []byte("think \"hard\""))
	body = c.body(nil, requestParams{model: "m"})
	var kept struct {
		Messages []map[string]string `json:"messages"`
	}
	if err := json.Unmarshal(body, &kept); err != nil || len(kept.Messages) != 4 ||
		kept.Messages[3]["content"] != "done" || kept.Messages[3]["reasoning_content"] != "think \"hard\"" ||
		kept.Messages[2]["reasoning_content"] != "" {
		t.Fatalf("kept reasoning: %s (%v)", body, err)
	}
	c.reset()
	c.add("user", []byte("next session"))
	body = c.body(nil, requestParams{model: "m"})
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) != 1 || req.Messages[0].Content != "next session" {
		t.Fatalf("after reset: %s (%v)", body, err)
	}

	p := newConversation(EndpointCompletions, FillerRenderer{})
	p.add("user", []byte("a \"b\"\n"))
	p.addReply([]byte(" c"), []byte("completions have no separate reasoning"))
	var creq struct{ Prompt string }
	if err := json.Unmarshal(p.body(nil, requestParams{model: "m"}), &creq); err != nil || creq.Prompt != "a \"b\"\n c" {
		t.Fatalf("completions prompt %q (%v)", creq.Prompt, err)
	}
}

// BenchmarkConversationSession renders a three-turn session's requests the
// way a user does (one conversation reused across sessions).
func BenchmarkConversationSession(b *testing.B) {
	src := SyntheticSource{Turns: 3, PrefixTokens: 100, NewTokens: 50, MaxTokens: 50}
	reply := []byte(" r1.0 r1.1 r1.2 r1.3 r1.4 r1.5 r1.6 r1.7 r1.8 r1.9 \\\"quoted\\\"")
	c := newConversation(EndpointChat, FillerRenderer{})
	var body []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sc, err := src.Session(0, i)
		if err != nil {
			b.Fatal(err)
		}
		c.reset()
		for t := range sc.Turns {
			if err := c.addUser(sc, &sc.Turns[t]); err != nil {
				b.Fatal(err)
			}
			body = c.body(body[:0], requestParams{model: "bench", maxTokens: 50})
			c.addReply(reply, nil)
		}
	}
}
