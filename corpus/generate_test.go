package corpus

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
)

func TestGenerateDeterministic(t *testing.T) {
	h := func(c *Corpus) string {
		var b bytes.Buffer
		if err := Write(&b, c); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%x", sha256.Sum256(b.Bytes()))
	}
	a, b := h(Generate(7, 20)), h(Generate(7, 20))
	if a != b {
		t.Fatal("same seed gave different corpora")
	}
	if h(Generate(8, 20)) == a {
		t.Fatal("different seeds gave the same corpus")
	}
}

func TestBuiltinHasEveryKind(t *testing.T) {
	c := Builtin()
	for _, k := range Kinds {
		docs := c.OfKind(k)
		if len(docs) == 0 {
			t.Fatalf("builtin corpus has no %s documents", k)
		}
		size := 0
		for _, d := range docs {
			size += len(d.Text)
			if !strings.HasSuffix(d.Text, "\n") || d.License == "" || d.Source == "" {
				t.Fatalf("%s document %q: missing final newline, licence or source", k, d.Source)
			}
		}
		t.Logf("%s: %d docs, %d bytes", k, len(docs), size)
	}
}

func TestReadWriteRoundTrip(t *testing.T) {
	c := Generate(3, 4)
	var b bytes.Buffer
	if err := Write(&b, c); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&b, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Docs) != len(c.Docs) || back.Docs[5] != c.Docs[5] {
		t.Fatal("round trip changed the corpus")
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"{\"kind\":\"code\",\"text\":\"x\"}\n{bad", "read corpus f.jsonl:2: invalid character"},
		{"{\"kind\":\"poem\",\"text\":\"x\"}\n", `read corpus f.jsonl:1: unknown kind "poem"`},
	}
	for _, tt := range tests {
		_, err := Read(strings.NewReader(tt.in), "f.jsonl")
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Read(%q) error = %v, want prefix %q", tt.in, err, tt.want)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte("{\"kind\":\"code\",\"text\":\"x\\n\"}\n"))
	f.Add([]byte("\n\n{\"kind\":\"tool\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Read(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := Write(&b, c); err != nil {
			t.Fatal(err)
		}
		back, err := Read(&b, "again")
		if err != nil || len(back.Docs) != len(c.Docs) {
			t.Fatalf("re-read of written corpus: %v", err)
		}
	})
}
