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
			Content          string `json:"content"`
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
	first     time.Time // first content chunk
	last      time.Time // latest content chunk
	end       time.Time // [DONE] or the last event
	gapsUS    []int64
	counts    []int
	multi     bool // some chunk after the first carried several tokens
	tokens    int  // content tokens counted from chunks
	reply     []byte
	usage     bool
	prompt    int
	cached    int
	completed int
	done      bool
}

// readStream consumes an OpenAI SSE stream until [DONE], an error, or EOF.
// The error wraps errServerStream when the server's bytes were at fault, and
// is the reader's error otherwise (timeouts, cancellation, resets).
func readStream(sr *SSEReader, st *stream) error {
	var c chunk
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
		c = chunk{}
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("%w: malformed chunk %.80q: %v", errServerStream, data, err)
		}
		if c.Error != nil {
			return fmt.Errorf("%w: server error event: %s %s", errServerStream, c.Error.Type, c.Error.Message)
		}
		if u := c.Usage; u != nil {
			st.usage = true
			st.prompt, st.completed = u.PromptTokens, u.CompletionTokens
			if u.PromptTokensDetails != nil {
				st.cached = u.PromptTokensDetails.CachedTokens
			}
		}
		if len(c.Choices) == 0 {
			continue
		}
		ch := &c.Choices[0]
		d := &ch.Delta
		text := d.Content
		if text == "" {
			text = ch.Text
		}
		if text == "" && d.ReasoningContent == "" && d.Reasoning == "" {
			continue // role-only or finish chunk: no token
		}
		st.reply = append(st.reply, text...)
		n := 1
		switch {
		case len(ch.TokenIDs) > 0:
			n = len(ch.TokenIDs)
		case ch.Logprobs != nil && len(ch.Logprobs.Content) > 0:
			n = len(ch.Logprobs.Content)
		case ch.Logprobs != nil && len(ch.Logprobs.Tokens) > 0:
			n = len(ch.Logprobs.Tokens)
		}
		st.tokens += n
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
