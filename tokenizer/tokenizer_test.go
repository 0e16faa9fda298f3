package tokenizer

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

const sample = `package main

import "fmt"

// Greet says hello.
func Greet(name string) string {
	if name == "" {
		return "hello, world"
	}
	return fmt.Sprintf("hello, %s", name)
}
/* block */
    indented line with   spaces
'quoted' and "double" 123456 ünïcödé 漢字
{"key": [1, 2, 3]}
$ go test ./...
ok  	example.com/x	0.012s
+	added line
-	removed line
@@ -1,3 +1,4 @@
`

func mustNew(t testing.TB, name string) *Tokenizer {
	t.Helper()
	tk, err := New(name)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestNewUnknown(t *testing.T) {
	_, err := New("nope_base")
	if !errors.Is(err, ErrUnknown) {
		t.Fatalf("New(nope_base) error = %v, want ErrUnknown", err)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, name := range Names {
		tk := mustNew(t, name)
		ids, err := tk.Encode(sample)
		if err != nil {
			t.Fatal(err)
		}
		n, err := tk.Count(sample)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(ids) || n == 0 {
			t.Fatalf("%s: Count = %d, len(Encode) = %d", name, n, len(ids))
		}
		back, err := tk.Decode(ids)
		if err != nil {
			t.Fatal(err)
		}
		if back != sample {
			t.Fatalf("%s: Decode(Encode(s)) != s", name)
		}
		if _, err := tk.Decode([]int{-1}); err == nil {
			t.Fatalf("%s: Decode(-1) succeeded", name)
		}
	}
}

func TestKnownCounts(t *testing.T) {
	tests := []struct {
		name, text string
		want       int
	}{
		{O200kBase, "}\n", 1},
		{O200kBase, "hello world", 2},
		{Cl100kBase, "hello world", 2},
		{O200kBase, "", 0},
	}
	for _, tt := range tests {
		got, err := mustNew(t, tt.name).Count(tt.text)
		if err != nil || got != tt.want {
			t.Errorf("%s Count(%q) = %d, %v; want %d", tt.name, tt.text, got, err, tt.want)
		}
	}
}

func TestSafeStart(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		{"func main() {\n", true},
		{"\treturn nil\n", true},
		{"    x := 1\n", true},
		{"}\n", true},
		{"// comment\n", false},
		{"    // indented comment\n", true},
		{"\n", false},
		{"   \n", false},
		{"", false},
		{"漢字\n", true},
		{"\u00a0x\n", false},
		{"123\n", true},
	}
	for _, tt := range tests {
		if got := SafeStart(tt.line); got != tt.want {
			t.Errorf("SafeStart(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	got := Normalize("a\r\nb\rc<|endoftext|>\x00d")
	if want := "a\nb\nc< |endoftext|>d\n"; got != want {
		t.Fatalf("Normalize = %q, want %q", got, want)
	}
}

// TestChunksConcatenate checks the central property: any sequence of safe
// chunks re-tokenizes to the sum of their counts.
func TestChunksConcatenate(t *testing.T) {
	for _, name := range Names {
		tk := mustNew(t, name)
		chunks, err := tk.Chunks(sample)
		if err != nil {
			t.Fatal(err)
		}
		if len(chunks) < 10 {
			t.Fatalf("%s: only %d chunks", name, len(chunks))
		}
		for _, c := range chunks {
			if !strings.HasSuffix(c.Text, "\n") || !SafeStart(c.Text) {
				t.Fatalf("%s: bad chunk %q", name, c.Text)
			}
		}
		for _, n := range []int{1, 2, 3, 7, 50} {
			chunks = append(chunks, Chunk{Text: Filler(n), Tokens: n})
		}
		r := rand.New(rand.NewPCG(1, 2))
		for trial := 0; trial < 200; trial++ {
			var b strings.Builder
			want := 0
			for k := r.IntN(12) + 1; k > 0; k-- {
				c := chunks[r.IntN(len(chunks))]
				b.WriteString(c.Text)
				want += c.Tokens
			}
			got, err := tk.Count(b.String())
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%s: Count(%q) = %d, sum of chunks = %d", name, b.String(), got, want)
			}
		}
	}
}

func TestFillerExact(t *testing.T) {
	for _, name := range Names {
		tk := mustNew(t, name)
		for n := 1; n <= 600; n += 1 + n/10 {
			got, err := tk.Count(Filler(n))
			if err != nil || got != n {
				t.Fatalf("%s: Count(Filler(%d)) = %d, %v", name, n, got, err)
			}
		}
	}
	if Filler(0) != "" {
		t.Fatal("Filler(0) not empty")
	}
}

func TestCut(t *testing.T) {
	tk := mustNew(t, O200kBase)
	total, _ := tk.Count(Normalize(sample))
	for _, n := range []int{1, 2, 5, 17, 40, total - 30} {
		s, err := tk.Cut(sample, n)
		if err != nil {
			t.Fatalf("Cut(%d): %v", n, err)
		}
		got, _ := tk.Count(s + s)
		if got != 2*n {
			t.Fatalf("Cut(%d) twice = %d tokens, want %d", n, got, 2*n)
		}
	}
	if _, err := tk.Cut(sample, total+1000); !errors.Is(err, ErrShort) {
		t.Fatalf("Cut beyond the text: err = %v, want ErrShort", err)
	}
}

func FuzzChunks(f *testing.F) {
	f.Add(sample)
	f.Add("a\n\n  b\n/c\n")
	f.Add("}\n//x\n")
	tk := mustNew(f, O200kBase)
	f.Fuzz(func(t *testing.T, text string) {
		chunks, err := tk.Chunks(text)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		sum := 0
		for i := len(chunks) - 1; i >= 0; i-- { // reversed order: any order must add up
			b.WriteString(chunks[i].Text)
			sum += chunks[i].Tokens
		}
		b.WriteString(Filler(3))
		got, err := tk.Count(b.String())
		if err != nil {
			t.Fatal(err)
		}
		if got != sum+3 {
			t.Fatalf("chunks of %q: concatenation has %d tokens, sum %d", text, got, sum+3)
		}
	})
}

func BenchmarkCount(b *testing.B) {
	tk := mustNew(b, O200kBase)
	text := strings.Repeat(sample, 100)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := tk.Count(text); err != nil {
			b.Fatal(err)
		}
	}
}
