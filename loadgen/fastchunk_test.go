package loadgen

import (
	"bytes"
	"testing"
)

var chunkSeeds = []string{
	`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`,
	`{"choices":[{"delta":{"role":"assistant","content":""}}]}`,
	`{"choices":[{"delta":{"content":"a\nb \"q\" \u00e9\ud83d\ude00"}}]}`,
	`{"choices":[{"delta":{"reasoning_content":"think"}}]}`,
	`{"choices":[{"delta":{"reasoning":"th\"ink\u00e9"}}]}`,
	`{"choices":[{"delta":{"reasoning":"new","reasoning_content":"old","content":"x"}}]}`,
	`{"choices":[{"text":"x","token_ids":[1,2,-3,null]}]}`,
	`{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9,"prompt_tokens_details":{"cached_tokens":4}}}`,
	`{"choices":[{"delta":{"content":"a"},"logprobs":{"content":[{"token":"a"},{"token":"b"}]}}]}`,
	`{"error":{"message":"overloaded","type":"server_error"}}`,
	`{"Choices":[{"Delta":{"Content":"case"}}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}`,
	`{"choices":[{"delta":{"content":"a","content":null}}]}`,
	`{"choices":null,"usage":null}`,
	`{"choices":[{"delta":{"content":5}}]}`,
	`{"usage":{"prompt_tokens":1.0}}`,
	`{"x":[1,-2.5e3,true,false,null,{"a":"\t"}]}`,
	`[]`, `null`, `{`, `{"choices":[{"delta":{"content":"x"}}]} trailing`,
}

// FuzzDecodeChunk holds the fast parser to encoding/json: whenever it
// accepts a chunk, encoding/json must accept it and agree on every field.
func FuzzDecodeChunk(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast chunkInfo
		if !parseChunkFast(data, &fast) {
			return
		}
		fast.text = bytes.Clone(fast.text)
		fast.reasoningText = bytes.Clone(fast.reasoningText)
		var slow chunkInfo
		var sc chunk
		// Force the encoding/json path by calling it the way decodeChunk does.
		if err := decodeSlow(data, &slow, &sc); err != nil {
			t.Fatalf("fast parser accepted %q, encoding/json rejects it: %v", data, err)
		}
		if fast.choices != slow.choices || !bytes.Equal(fast.text, slow.text) || fast.reasoning != slow.reasoning ||
			!bytes.Equal(fast.reasoningText, slow.reasoningText) ||
			fast.ntok != slow.ntok || fast.usage != slow.usage || fast.prompt != slow.prompt ||
			fast.completed != slow.completed || fast.cached != slow.cached || fast.errEvent != slow.errEvent {
			t.Fatalf("%q:\nfast %+v\nslow %+v", data, fast, slow)
		}
	})
}

func TestDecodeChunkSeeds(t *testing.T) {
	for _, s := range chunkSeeds {
		var fast, slow chunkInfo
		var sc chunk
		okFast := parseChunkFast([]byte(s), &fast)
		errSlow := decodeSlow([]byte(s), &slow, &sc)
		if okFast && errSlow != nil {
			t.Errorf("%s: fast accepted, slow rejected: %v", s, errSlow)
		}
		if okFast && (string(fast.text) != string(slow.text) || string(fast.reasoningText) != string(slow.reasoningText) ||
			fast.ntok != slow.ntok || fast.usage != slow.usage) {
			t.Errorf("%s: fast %+v slow %+v", s, fast, slow)
		}
	}
	var ci chunkInfo
	if !parseChunkFast([]byte(chunkSeeds[0]), &ci) || string(ci.text) != "hi" {
		t.Fatal("the common chunk must take the fast path")
	}
	if !parseChunkFast([]byte(`{"choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}`), &ci) {
		t.Fatal("vLLM's chunk with logprobs:null must take the fast path")
	}
	if !parseChunkFast([]byte(chunkSeeds[2]), &ci) || string(ci.text) != "a\nb \"q\" é😀" {
		t.Fatalf("escaped content on the fast path: %q", ci.text)
	}
	for _, c := range []struct{ in, want string }{
		{`{"choices":[{"delta":{"reasoning_content":"think"}}]}`, "think"},
		{`{"choices":[{"delta":{"reasoning":"th\"ink\u00e9"}}]}`, "th\"inké"},
		{`{"choices":[{"delta":{"reasoning":"new","reasoning_content":"old","content":"x"}}]}`, "new"},
	} {
		if !parseChunkFast([]byte(c.in), &ci) || !ci.reasoning || string(ci.reasoningText) != c.want {
			t.Fatalf("%s: reasoning %v %q, want %q", c.in, ci.reasoning, ci.reasoningText, c.want)
		}
	}
}
