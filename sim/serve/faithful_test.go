package serve

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/telemetry"
	"github.com/spoc-project/spoc/vllm"
)

// newFaithful starts a vLLM-faithful test server.
func newFaithful(t *testing.T, mod func(*Config)) (*Server, string) {
	t.Helper()
	s, ts := newTestServer(t, func(c *Config) {
		c.VLLMFaithful = true
		if mod != nil {
			mod(c)
		}
	})
	return s, ts.URL
}

// tokens counts reply tokens in text: every reply word is one token with a
// leading space.
func tokens(text string) int { return strings.Count(text, " ") }

// event is one streamed chunk, decoded loosely so that absent and present
// fields can be told apart.
type event struct {
	Choices []struct {
		Delta        map[string]*string `json:"delta"`
		Text         *string            `json:"text"`
		FinishReason *string            `json:"finish_reason"`
	} `json:"choices"`
	Usage map[string]json.RawMessage `json:"usage"`
}

// streamEvents posts body to path and returns the stream's chunks up to
// [DONE], failing when [DONE] is missing.
func streamEvents(t *testing.T, url, path, body string) []event {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var evs []event
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return evs
		}
		var ev event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		evs = append(evs, ev)
	}
	t.Fatal("stream ended without [DONE]")
	return nil
}

func usageInt(t *testing.T, u map[string]json.RawMessage, key string) int {
	t.Helper()
	var n int
	if err := json.Unmarshal(u[key], &n); err != nil {
		t.Fatalf("usage.%s: %v (usage %v)", key, err, u)
	}
	return n
}

func chatBody(maxTokens int, stream bool) string {
	b, _ := json.Marshal(map[string]any{
		"model": "gpt-oss-120b", "messages": []map[string]string{{"role": "user", "content": "Why is the sky blue?"}},
		"max_tokens": maxTokens, "ignore_eos": true, "stream": stream, "stream_options": map[string]bool{"include_usage": true},
	})
	return string(b)
}

// TestFaithfulStreamsReasoningThenContent checks the stream of a reasoning
// model in the vLLM-faithful mode: a role-only chunk, the chain of thought
// under the configured field, then the content, the finish reason with the
// last tokens, and usage counting both parts.
func TestFaithfulStreamsReasoningThenContent(t *testing.T) {
	for _, field := range []string{"", vllm.FieldReasoning, vllm.FieldReasoningContent} {
		want, other := vllm.FieldReasoning, vllm.FieldReasoningContent
		if field == vllm.FieldReasoningContent {
			want, other = other, want
		}
		t.Run(want, func(t *testing.T) {
			_, url := newFaithful(t, func(c *Config) { c.ReasoningField = field })
			const n = 20
			evs := streamEvents(t, url, vllm.PathChatCompletions, chatBody(n, true))
			if d := evs[0].Choices[0].Delta; len(d) != 2 || d["role"] == nil || *d["role"] != "assistant" || d["content"] == nil || *d["content"] != "" {
				t.Errorf("first chunk delta %v, want only role assistant and empty content", d)
			}
			var reasoning, content, finishes int
			var usage map[string]json.RawMessage
			for i, ev := range evs[1:] {
				if ev.Usage != nil {
					usage = ev.Usage
				}
				if len(ev.Choices) == 0 {
					continue
				}
				c := ev.Choices[0]
				if c.Delta[other] != nil || c.Delta["role"] != nil {
					t.Errorf("chunk %d: delta %v has %q or a role", i+1, c.Delta, other)
				}
				if r := c.Delta[want]; r != nil {
					if content > 0 {
						t.Errorf("chunk %d: reasoning after %d content tokens", i+1, content)
					}
					reasoning += tokens(*r)
				}
				if s := c.Delta["content"]; s != nil {
					content += tokens(*s)
				}
				if c.FinishReason != nil {
					finishes++
					if *c.FinishReason != "length" || reasoning+content != n {
						t.Errorf("chunk %d: finish_reason %q after %d tokens, want length after %d", i+1, *c.FinishReason, reasoning+content, n)
					}
				}
			}
			if reasoning != ReasoningTokens(n) || content != n-ReasoningTokens(n) || finishes != 1 {
				t.Errorf("%d reasoning + %d content tokens, %d finish reasons; want %d + %d, 1", reasoning, content, finishes, ReasoningTokens(n), n-ReasoningTokens(n))
			}
			if usage == nil || usageInt(t, usage, "completion_tokens") != n {
				t.Errorf("usage %v, want completion_tokens %d (reasoning included)", usage, n)
			}
		})
	}
}

// TestFaithfulChunkTokens checks that after the first token each chunk
// carries TokensPerChunk tokens (the last one possibly fewer) and that the
// chunks add up to usage.completion_tokens, on both endpoints.
func TestFaithfulChunkTokens(t *testing.T) {
	for _, tc := range []struct {
		name           string
		tokensPerChunk int
		want           int // chunk size after the first token
	}{
		{"default", 0, FaithfulTokensPerChunk},
		{"three", 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := newFaithful(t, func(c *Config) { c.TokensPerChunk = tc.tokensPerChunk })
			for _, n := range []int{1, 2, 7, 16} {
				for _, path := range []string{vllm.PathChatCompletions, vllm.PathCompletions} {
					body := chatBody(n, true)
					if path == vllm.PathCompletions {
						body = `{"prompt":"Why is the sky blue?","max_tokens":` + itoa(n) + `,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`
					}
					var sizes []int
					total, completion := 0, -1
					for _, ev := range streamEvents(t, url, path, body) {
						if ev.Usage != nil {
							completion = usageInt(t, ev.Usage, "completion_tokens")
						}
						if len(ev.Choices) == 0 {
							continue
						}
						k := 0
						if c := ev.Choices[0]; c.Text != nil {
							k = tokens(*c.Text)
						} else {
							for _, v := range c.Delta {
								if v != nil {
									k += tokens(*v)
								}
							}
						}
						if k > 0 {
							sizes = append(sizes, k)
							total += k
						}
					}
					if total != n || completion != n {
						t.Errorf("%s max_tokens %d: chunks carry %d tokens, usage says %d, want %d", path, n, total, completion, n)
					}
					for i, k := range sizes {
						want := tc.want
						if i == 0 {
							want = 1
						}
						if k != want && !(i == len(sizes)-1 && k < want) {
							t.Errorf("%s max_tokens %d: chunk sizes %v, want 1 then %d each", path, n, sizes, tc.want)
							break
						}
					}
				}
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestFaithfulCachedTokensNeedFlag checks that the vLLM-faithful mode
// reports usage.prompt_tokens_details only with
// EnablePromptTokensDetails, streamed or not.
func TestFaithfulCachedTokensNeedFlag(t *testing.T) {
	long := strings.Repeat("The shared monorepo root file contents go here. ", 40)
	for _, enabled := range []bool{false, true} {
		_, url := newFaithful(t, func(c *Config) { c.EnablePromptTokensDetails = enabled })
		for _, stream := range []bool{true, false} {
			b, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "system", "content": long}, {"role": "user", "content": "hi"}},
				"max_tokens": 3, "ignore_eos": true, "stream": stream, "stream_options": map[string]bool{"include_usage": true}})
			var usage map[string]json.RawMessage
			for range 2 { // the second request hits the first one's blocks
				if stream {
					for _, ev := range streamEvents(t, url, vllm.PathChatCompletions, string(b)) {
						if ev.Usage != nil {
							usage = ev.Usage
						}
					}
				} else {
					usage = wholeResponse(t, url, vllm.PathChatCompletions, string(b)).Usage
				}
			}
			raw, present := usage["prompt_tokens_details"]
			if present != enabled {
				t.Errorf("enable-prompt-tokens-details %v, stream %v: usage %v", enabled, stream, usage)
				continue
			}
			if enabled {
				var d struct {
					CachedTokens *int `json:"cached_tokens"`
				}
				if err := json.Unmarshal(raw, &d); err != nil || d.CachedTokens == nil || *d.CachedTokens == 0 {
					t.Errorf("stream %v: prompt_tokens_details %s, want cached tokens of the repeated prompt", stream, raw)
				}
			}
		}
	}
}

// TestFaithfulResetNeedsDevMode checks that the vLLM-faithful mode serves
// POST /reset_prefix_cache only in dev mode, answering 404 otherwise as
// vLLM does, and that the default mode always serves it.
func TestFaithfulResetNeedsDevMode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		faithful  bool
		devMode   bool
		wantCode  int
		wantInfix string
	}{
		{"faithful", true, false, http.StatusNotFound, `"detail":"Not Found"`},
		{"faithful dev mode", true, true, http.StatusOK, ""},
		{"default", false, false, http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ts := newTestServer(t, func(c *Config) { c.VLLMFaithful, c.DevMode = tc.faithful, tc.devMode })
			resp, err := http.Post(ts.URL+vllm.PathResetPrefixCache, "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode || !strings.Contains(string(body), tc.wantInfix) {
				t.Errorf("POST %s: %d %q, want %d %q", vllm.PathResetPrefixCache, resp.StatusCode, body, tc.wantCode, tc.wantInfix)
			}
		})
	}
	for v, want := range map[string]bool{"1": true, "2": true, " 1": true, "0": false, "": false, "true": false} {
		if DevMode(v) != want {
			t.Errorf("DevMode(%q) = %v, want %v", v, !want, want)
		}
	}
}

type wholeReply struct {
	Object  string `json:"object"`
	Choices []struct {
		Message      map[string]any `json:"message"`
		Text         *string        `json:"text"`
		FinishReason string         `json:"finish_reason"`
	} `json:"choices"`
	Usage map[string]json.RawMessage `json:"usage"`
}

func wholeResponse(t *testing.T, url, path, body string) wholeReply {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r wholeReply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	return r
}

// TestFaithfulWholeResponse checks a non-streamed reply in the
// vLLM-faithful mode: message.content and the reasoning field (by its
// configured name) split the completion tokens as the stream does.
func TestFaithfulWholeResponse(t *testing.T) {
	for _, field := range []string{vllm.FieldReasoning, vllm.FieldReasoningContent} {
		_, url := newFaithful(t, func(c *Config) { c.ReasoningField = field })
		const n = 9
		r := wholeResponse(t, url, vllm.PathChatCompletions, chatBody(n, false))
		m := r.Choices[0].Message
		reasoning, _ := m[field].(string)
		content, _ := m["content"].(string)
		if r.Object != "chat.completion" || m["role"] != "assistant" || tokens(reasoning) != ReasoningTokens(n) || tokens(content) != n-ReasoningTokens(n) {
			t.Errorf("%s: %s message %v, want %d reasoning and %d content tokens", field, r.Object, m, ReasoningTokens(n), n-ReasoningTokens(n))
		}
		if got := usageInt(t, r.Usage, "completion_tokens"); got != n || r.Choices[0].FinishReason != "length" {
			t.Errorf("%s: completion_tokens %d, finish %q; want %d, length", field, got, r.Choices[0].FinishReason, n)
		}
	}
	// The completions endpoint has no reasoning: all tokens are text.
	_, url := newFaithful(t, nil)
	r := wholeResponse(t, url, vllm.PathCompletions, `{"prompt":"Why?","max_tokens":5,"ignore_eos":true}`)
	if r.Choices[0].Text == nil || tokens(*r.Choices[0].Text) != 5 {
		t.Errorf("completion text %v, want 5 tokens", r.Choices[0].Text)
	}
}

// TestFaithfulOnlyReasoningModelsThink checks that a model outside the
// gpt-oss family streams content only, and that one-token replies are
// content.
func TestFaithfulOnlyReasoningModelsThink(t *testing.T) {
	if !reasoningModel("openai/gpt-oss-20b") || reasoningModel("meta-llama/Llama-3.1-8B-Instruct") {
		t.Error("reasoningModel: gpt-oss must think, Llama must not")
	}
	for n, want := range map[int]int{1: 0, 2: 1, 3: 1, 10: 5} {
		if got := ReasoningTokens(n); got != want {
			t.Errorf("ReasoningTokens(%d) = %d, want %d", n, got, want)
		}
	}
	dep := referenceDeployment(t)
	dep.ServedModelName = "plain"
	dep.Model.Name = "meta-llama/Llama-3.1-8B-Instruct"
	s, url := newFaithful(t, func(c *Config) { c.Deployment = dep })
	if s.reasoning {
		t.Fatal("a Llama model streams reasoning")
	}
	r := wholeResponse(t, url, vllm.PathChatCompletions, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"ignore_eos":true}`)
	if m := r.Choices[0].Message; m[vllm.FieldReasoning] != nil || tokens(m["content"].(string)) != 4 {
		t.Errorf("message %v, want 4 content tokens and reasoning null", m)
	}
}

// TestFaithfulCountsRequests checks what an integration test reads to
// prove that requests reached the server: the sum of
// vllm:request_success_total over its labels, on /metrics, equals the
// completion requests served, and /version tells the faithful stand-in
// apart.
func TestFaithfulCountsRequests(t *testing.T) {
	_, url := newFaithful(t, nil)
	const requests = 3
	for i := range requests {
		if i%2 == 0 {
			streamEvents(t, url, vllm.PathChatCompletions, chatBody(3, true))
		} else {
			wholeResponse(t, url, vllm.PathCompletions, `{"prompt":"Why?","max_tokens":2}`)
		}
	}
	resp, err := http.Get(url + vllm.PathMetrics)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := telemetry.Parse(resp.Body, telemetry.TextFormat)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	served := 0.0
	for _, s := range samples {
		if s.Name == vllm.MetricRequestSuccess {
			served += s.Value
		}
	}
	if served != requests {
		t.Errorf("%s sums to %v, want %d", vllm.MetricRequestSuccess, served, requests)
	}
	var v struct{ Version string }
	if err := json.Unmarshal([]byte(get(t, url+vllm.PathVersion)), &v); err != nil || v.Version != "spoc-sim dev (vllm-faithful)" {
		t.Errorf("/version %q (%v)", v.Version, err)
	}
}
