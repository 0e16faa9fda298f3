package loadgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// chunk is the part of an OpenAI streaming chunk (chat.completion.chunk or
// text_completion) the client needs.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
			// The chain of thought, under vllm.FieldReasoningContent on older
			// servers and vllm.FieldReasoning on current ones.
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
		} `json:"delta"`
		Text     string  `json:"text"`
		TokenIDs []int64 `json:"token_ids"`
		Logprobs *struct {
			Content []json.RawMessage `json:"content"`
			Tokens  []json.RawMessage `json:"tokens"`
		} `json:"logprobs"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

var doneMarker = []byte("[DONE]")

// errServerStream is a stream the server broke: malformed data, an error
// event, or an end without [DONE].
var errServerStream = errors.New("stream error")

// stream is what was read from one streamed response.
type stream struct {
	first  time.Time // first content chunk
	last   time.Time // latest content chunk
	end    time.Time // [DONE] or the last event
	gapsUS []int64
	counts []int
	multi  bool // some chunk after the first carried several tokens
	tokens int  // tokens counted from chunks, reasoning included
	reply  []byte
	// reasoning is the streamed chain of thought and reasoningTokens its
	// chunk-counted tokens (part of tokens).
	reasoning       []byte
	reasoningTokens int
	usage           bool
	prompt          int
	cached          int
	completed       int
	done            bool
	// sse is the stream's reader, reset for each request so its buffers
	// are reused (see SSEReader.Reset).
	sse *SSEReader
}

// readStream consumes an OpenAI SSE stream until [DONE], an error, or EOF.
// The error wraps errServerStream when the server's bytes were at fault, and
// is the reader's error otherwise (timeouts, cancellation, resets).
func readStream(sr *SSEReader, st *stream) error {
	var (
		ci   chunkInfo
		slow chunk
	)
	for {
		ev, err := sr.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: stream ended without [DONE]", errServerStream)
			}
			if errors.Is(err, ErrSSELineTooLong) {
				return fmt.Errorf("%w: %w", errServerStream, err)
			}
			return err
		}
		st.end = ev.At
		data := bytes.TrimSpace(ev.Data)
		if bytes.Equal(data, doneMarker) {
			st.done = true
			return nil
		}
		if err := decodeChunk(data, &ci, &slow); err != nil {
			return fmt.Errorf("%w: malformed chunk %.80q: %v", errServerStream, data, err)
		}
		if ci.errEvent {
			return fmt.Errorf("%w: server error event: %s", errServerStream, ci.errMsg)
		}
		if ci.usage {
			st.usage = true
			st.prompt, st.completed, st.cached = ci.prompt, ci.completed, ci.cached
		}
		if !ci.choices || (len(ci.text) == 0 && !ci.reasoning) {
			continue // usage, role-only or finish chunk: no token
		}
		text := ci.text
		st.reply = append(st.reply, text...)
		st.reasoning = append(st.reasoning, ci.reasoningText...)
		n := max(ci.ntok, 1)
		st.tokens += n
		if len(text) == 0 { // a chunk with both counts as content
			st.reasoningTokens += n
		}
		if st.first.IsZero() {
			st.first, st.last = ev.At, ev.At
			continue
		}
		st.gapsUS = append(st.gapsUS, ev.At.Sub(st.last).Microseconds())
		st.counts = append(st.counts, n)
		st.multi = st.multi || n != 1
		st.last = ev.At
	}
}
