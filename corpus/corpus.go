package corpus

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Kind says what a document is; the workload picks text of the right kind
// for each part of a prompt (files from code, questions from prose, pasted
// tool output and diffs into turns, replies from prose and code).
type Kind string

// Document kinds.
const (
	KindCode   Kind = "code"   // source files
	KindProse  Kind = "prose"  // questions, explanations, documentation
	KindTool   Kind = "tool"   // command and tool output (tests, logs, listings)
	KindDiff   Kind = "diff"   // unified diffs and patches
	KindSystem Kind = "system" // system prompts and tool definitions
)

// Kinds lists every document kind.
var Kinds = []Kind{KindCode, KindProse, KindTool, KindDiff, KindSystem}

// Doc is one document of a corpus.
type Doc struct {
	Kind    Kind   `json:"kind"`
	Text    string `json:"text"`
	Source  string `json:"source,omitempty"`  // where it came from (dataset row, file path, "builtin")
	License string `json:"license,omitempty"` // SPDX identifier of the source, when known
	Tokens  int    `json:"tokens,omitempty"`  // token count when the builder had a tokenizer
}

// Corpus is a set of documents.
type Corpus struct {
	Docs []Doc
}

// ErrEmpty is returned when a corpus has no text of a needed kind.
var ErrEmpty = errors.New("empty corpus")

// OfKind returns the documents of kind k, in corpus order.
func (c *Corpus) OfKind(k Kind) []Doc {
	var out []Doc
	for _, d := range c.Docs {
		if d.Kind == k {
			out = append(out, d)
		}
	}
	return out
}

// Read decodes a corpus file: one JSON document per line with fields kind,
// text, source and license. name is used in error messages.
func Read(r io.Reader, name string) (*Corpus, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	c := &Corpus{}
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var d Doc
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("read corpus %s:%d: %w", name, line, err)
		}
		if !slices.Contains(Kinds, d.Kind) {
			return nil, fmt.Errorf("read corpus %s:%d: unknown kind %q (one of %v)", name, line, d.Kind, Kinds)
		}
		c.Docs = append(c.Docs, d)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read corpus %s:%d: %w", name, line+1, err)
	}
	return c, nil
}

// Write encodes c as JSON lines, the format Read accepts.
func Write(w io.Writer, c *Corpus) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range c.Docs {
		if err := enc.Encode(&c.Docs[i]); err != nil {
			return fmt.Errorf("write corpus document %d: %w", i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write corpus: %w", err)
	}
	return nil
}
