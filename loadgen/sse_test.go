package loadgen

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func readAllEvents(t testing.TB, r io.Reader) ([]string, error) {
	sr := NewSSEReader(r)
	var out []string
	for {
		ev, err := sr.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, string(ev.Data))
	}
}

func TestSSEReader(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"openai", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []string{`{"a":1}`, "[DONE]"}},
		{"crlf", "data: x\r\n\r\ndata: y\r\n\r\n", []string{"x", "y"}},
		{"lone cr", "data: x\r\rdata: y\r\r", []string{"x", "y"}},
		{"multi-line data", "data: a\ndata: b\n\n", []string{"a\nb"}},
		{"no space after colon", "data:x\n\n", []string{"x"}},
		{"two spaces keep one", "data:  x\n\n", []string{" x"}},
		{"comments and other fields", ": ping\nevent: message\nid: 7\nretry: 10\ndata: x\n\n", []string{"x"}},
		{"blank lines without data", "\n\n\n: keepalive\n\ndata: x\n\n", []string{"x"}},
		{"field without colon", "data\n\n", []string{""}},
		{"unterminated event discarded", "data: x\n\ndata: y\n", []string{"x"}},
		{"unterminated line discarded", "data: x\n\ndata: y", []string{"x"}},
		{"empty", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, mode := range []struct {
				name string
				r    func(string) io.Reader
			}{
				{"whole", func(s string) io.Reader { return strings.NewReader(s) }},
				{"one byte", func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) }},
				{"half", func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) }},
			} {
				got, err := readAllEvents(t, mode.r(c.in))
				if err != nil {
					t.Fatalf("%s: %v", mode.name, err)
				}
				if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
					t.Fatalf("%s: events %q, want %q", mode.name, got, c.want)
				}
			}
		})
	}
}

// stepReader returns one part per Read and advances a fake clock by one
// second each time, so event timestamps can be checked exactly.
type stepReader struct {
	parts []string
	clock *time.Time
}

func (s *stepReader) Read(p []byte) (int, error) {
	if len(s.parts) == 0 {
		return 0, io.EOF
	}
	*s.clock = s.clock.Add(time.Second)
	n := copy(p, s.parts[0])
	s.parts = s.parts[1:]
	return n, nil
}

func TestSSETimestampIsReadTimeOfLastDataLine(t *testing.T) {
	base := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	clock := base
	// Read 1 brings event a whole and the start of b; read 2 completes b's
	// data line; read 3 brings b's blank line (its dispatch) and c.
	sr := NewSSEReader(&stepReader{parts: []string{"data: a\n\ndata: b", "b\n", "\ndata: c\n\n"}, clock: &clock})
	sr.now = func() time.Time { return clock }
	var first time.Time
	sr.OnFirstByte(func(t time.Time) { first = t })
	want := []struct {
		data string
		at   int
	}{{"a", 1}, {"bb", 2}, {"c", 3}}
	for _, w := range want {
		ev, err := sr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if string(ev.Data) != w.data || !ev.At.Equal(base.Add(time.Duration(w.at)*time.Second)) {
			t.Fatalf("event %q at %v, want %q at +%ds", ev.Data, ev.At.Sub(base), w.data, w.at)
		}
	}
	if !first.Equal(base.Add(time.Second)) {
		t.Fatalf("first byte at %v", first)
	}
}

func TestSSELineTooLong(t *testing.T) {
	in := io.MultiReader(strings.NewReader("data: "), bytes.NewReader(bytes.Repeat([]byte("x"), MaxSSELine+10)))
	_, err := readAllEvents(t, in)
	if !errors.Is(err, ErrSSELineTooLong) {
		t.Fatalf("err = %v, want ErrSSELineTooLong", err)
	}
}

func TestReadStreamClassifies(t *testing.T) {
	cases := []struct {
		name      string
		in        string
		wantErr   bool
		tokens    int
		reply     string
		usage     bool
		wantMulti bool
		// reasoning and reasoningTokens are the streamed chain of thought.
		reasoning       string
		reasoningTokens int
	}{
		{name: "chat with usage", in: "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{\"content\":\"he\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"llo\"}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\ndata: [DONE]\n\n",
			tokens: 2, reply: "hello", usage: true},
		{name: "completions text", in: "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: [DONE]\n\n", tokens: 2, reply: "ab"},
		{name: "reasoning counts as tokens, not reply", in: "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"think\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n", tokens: 2, reply: "x",
			reasoning: "think", reasoningTokens: 1},
		{name: "current vLLM's reasoning field", in: "data: {\"choices\":[{\"delta\":{\"reasoning\":\"a \"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"reasoning\":\"b\"},\"token_ids\":[1,2]}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n", tokens: 4, reply: "x", reasoning: "a b", reasoningTokens: 3, wantMulti: true},
		{name: "multi-token chunks", in: "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"token_ids\":[1,2]}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"},\"token_ids\":[3,4,5]}]}\n\ndata: [DONE]\n\n", tokens: 5, reply: "ab", wantMulti: true},
		{name: "malformed", in: "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {oops\n\n", wantErr: true, tokens: 1, reply: "a"},
		{name: "error event", in: "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n", wantErr: true},
		{name: "no done", in: "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", wantErr: true, tokens: 1, reply: "a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var st stream
			err := readStream(NewSSEReader(strings.NewReader(c.in)), &st)
			if (err != nil) != c.wantErr || (err != nil && !errors.Is(err, errServerStream)) {
				t.Fatalf("err = %v, want error %v of class stream", err, c.wantErr)
			}
			if st.tokens != c.tokens || string(st.reply) != c.reply || st.usage != c.usage || st.multi != c.wantMulti {
				t.Fatalf("tokens %d reply %q usage %v multi %v", st.tokens, st.reply, st.usage, st.multi)
			}
			if string(st.reasoning) != c.reasoning || st.reasoningTokens != c.reasoningTokens {
				t.Fatalf("reasoning %q (%d tokens), want %q (%d)", st.reasoning, st.reasoningTokens, c.reasoning, c.reasoningTokens)
			}
			if c.usage && (st.prompt != 7 || st.cached != 4 || st.completed != 2) {
				t.Fatalf("usage %d/%d/%d", st.prompt, st.cached, st.completed)
			}
			if c.tokens > 1 && len(st.gapsUS) == 0 && !c.wantErr {
				t.Fatal("no gaps recorded")
			}
		})
	}
}

// FuzzSSEReader checks the parser never panics and that how the bytes are
// split across reads never changes the events.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n",
		"data: a\r\ndata: b\r\n\r\n", ": c\n\nevent: e\ndata\n\n", "data: x\r\r\n\n", "\r\n\r\n\r",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, err1 := readAllEvents(t, bytes.NewReader(in))
		bytewise, err2 := readAllEvents(t, iotest.OneByteReader(bytes.NewReader(in)))
		if (err1 == nil) != (err2 == nil) || strings.Join(whole, "\x00") != strings.Join(bytewise, "\x00") || len(whole) != len(bytewise) {
			t.Fatalf("split changed the result: %q (%v) vs %q (%v)", whole, err1, bytewise, err2)
		}
		var st stream
		_ = readStream(NewSSEReader(bytes.NewReader(in)), &st)
		if len(st.gapsUS) != len(st.counts) {
			t.Fatalf("%d gaps but %d counts", len(st.gapsUS), len(st.counts))
		}
	})
}

func BenchmarkReadStream(b *testing.B) {
	var sb strings.Builder
	for i := range 256 {
		sb.WriteString(`data: {"id":"cmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok`)
		sb.WriteString(string(rune('a' + i%26)))
		sb.WriteString(`"},"finish_reason":null}]}` + "\n\n")
	}
	sb.WriteString("data: [DONE]\n\n")
	in := sb.String()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	var st stream
	for b.Loop() {
		st = stream{gapsUS: st.gapsUS[:0], counts: st.counts[:0], reply: st.reply[:0]}
		if err := readStream(NewSSEReader(strings.NewReader(in)), &st); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeChunk(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}`)
	var ci chunkInfo
	var slow chunk
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := decodeChunk(data, &ci, &slow); err != nil || string(ci.text) != " tok" {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := decodeSlow(data, &ci, &slow); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSSEReaderReset checks that a reset reader starts the next stream fresh:
// no leftover bytes, partial event, error or first-byte callback from the
// previous one, and a buffer grown by a long line is not kept.
func TestSSEReaderReset(t *testing.T) {
	long := strings.Repeat("x", 3*sseBufSize)
	cases := []struct {
		name  string
		first string // read until its error
		want  []string
	}{
		{"after clean end", "data: a\n\ndata: [DONE]\n\n", []string{"b"}},
		{"after partial event", "data: a\n\ndata: half\n", []string{"b"}},
		{"after cr line end", "data: a\r", []string{"b"}},
		{"after long line", "data: " + long + "\n\n", []string{"b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sr := NewSSEReader(strings.NewReader(c.first))
			called := 0
			sr.OnFirstByte(func(time.Time) { called++ })
			for {
				if _, err := sr.Next(); err != nil {
					break
				}
			}
			sr.Reset(strings.NewReader("\ndata: b\n\n"))
			if len(sr.buf) != sseBufSize || cap(sr.data) > sseBufSize {
				t.Fatalf("buffers kept after reset: buf %d, data cap %d", len(sr.buf), cap(sr.data))
			}
			var got []string
			for {
				ev, err := sr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(ev.Data))
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") || called != 1 {
				t.Fatalf("after reset got %q (first-byte callbacks %d), want %q", got, called, c.want)
			}
		})
	}
}
