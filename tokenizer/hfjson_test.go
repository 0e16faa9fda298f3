package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// tinyTokenizerJSON builds a byte-level BPE tokenizer.json: every byte is a
// token, plus the merges given (left, right pairs in rank order).
func tinyTokenizerJSON(t *testing.T, preTokenizer any, merges [][2]string) string {
	t.Helper()
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	var ms []string
	for _, m := range merges {
		vocab[m[0]+m[1]] = len(vocab)
		ms = append(ms, m[0]+" "+m[1])
	}
	doc := map[string]any{
		"normalizer":    map[string]any{"type": "NFC"},
		"pre_tokenizer": preTokenizer,
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": ms},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var tinyMerges = [][2]string{{"}", "Ċ"}, {"Ġ", "x"}, {"r", "e"}, {"re", "t"}, {"Ġ", "ret"}, {"i", "f"}}

func llama3Style() any {
	return map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]any{"Regex": cl100kPattern}, "behavior": "Isolated", "invert": false},
		map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
	}}
}

func TestLoadTokenizerJSON(t *testing.T) {
	path := tinyTokenizerJSON(t, llama3Style(), tinyMerges)
	tk, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text string
		want int
	}{
		{"}\n", 1},
		{"x x x\n", 4},
		{" ret", 1},
		{"if ret", 2}, // pre-tokens "if" and " ret", each merged to one token
		{"é", 2},      // two UTF-8 bytes, no merge
	}
	for _, tt := range tests {
		got, err := tk.Count(tt.text)
		if err != nil || got != tt.want {
			t.Errorf("Count(%q) = %d, %v; want %d", tt.text, got, err, tt.want)
		}
	}
	ids, err := tk.Encode(sample)
	if err != nil {
		t.Fatal(err)
	}
	back, err := tk.Decode(ids)
	if err != nil || back != sample {
		t.Fatalf("round trip failed: %v", err)
	}
	chunks, err := tk.Chunks(sample)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	sum := 0
	for i := len(chunks) - 1; i >= 0; i-- {
		b.WriteString(chunks[i].Text)
		sum += chunks[i].Tokens
	}
	if got, _ := tk.Count(b.String()); got != sum {
		t.Fatalf("chunks re-tokenize to %d, sum %d", got, sum)
	}
}

func TestLoadTokenizerJSONRejects(t *testing.T) {
	tests := []struct {
		name   string
		pre    any
		merges [][2]string
		want   string
	}{
		// GPT-2's regex glues a newline to the next line's indentation; with
		// a newline+space merge that changes counts across chunk boundaries.
		{"gpt2 regex", map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}, append([][2]string{{"Ċ", "Ġ"}}, tinyMerges...), "pre-tokenizer does not keep line boundaries"},
		{"no filler token", llama3Style(), [][2]string{{"Ġ", "x"}}, "filler line of 1 tokens counts 2"},
		{"metaspace", map[string]any{"type": "Metaspace"}, tinyMerges, `pre_tokenizer "Metaspace" is not supported`},
		{"no byte level", map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\s+`}, "behavior": "Isolated"}, tinyMerges, "pre_tokenizer has no ByteLevel step"},
	}
	for _, tt := range tests {
		_, err := New(tinyTokenizerJSON(t, tt.pre, tt.merges))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
	if _, err := Load(strings.NewReader(`{"model": {"type": "Unigram", "vocab": {"a": 0}}}`), "uni.json"); err == nil || !strings.Contains(err.Error(), "only byte-level BPE") {
		t.Errorf("Unigram model: error %v", err)
	}
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}}`))
	f.Add([]byte(`{"model": {"vocab": {"a": 5}, "merges": [["a", "a"]]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := Load(strings.NewReader(string(data)), "fuzz")
		if err != nil {
			return
		}
		if _, err := tk.Count("hello world\n"); err != nil {
			return
		}
	})
}
