package corpus

import (
	"io"
	"slices"

	"github.com/spoc-project/spoc/tokenizer"
)

// KindSummary describes the documents of one kind in a corpus file.
type KindSummary struct {
	Kind      Kind  `json:"kind"`
	Docs      int   `json:"docs"`
	Bytes     int64 `json:"bytes"`
	Tokens    int64 `json:"tokens"`
	TokensP50 int   `json:"tokens_p50"`
	TokensP90 int   `json:"tokens_p90"`
	TokensMax int   `json:"tokens_max"`
}

// Summary describes a corpus file.
type Summary struct {
	Docs     int              `json:"docs"`
	Kinds    []KindSummary    `json:"kinds"`
	Licenses map[string]int64 `json:"licenses"`
}

// Summarize reads a corpus file and describes it per kind. Documents without
// a stored token count are counted with tok.
func Summarize(r io.Reader, name string, tok *tokenizer.Tokenizer) (*Summary, error) {
	c, err := Read(r, name)
	if err != nil {
		return nil, err
	}
	s := &Summary{Docs: len(c.Docs), Licenses: map[string]int64{}}
	per := map[Kind][]int{}
	for i := range c.Docs {
		d := &c.Docs[i]
		n := d.Tokens
		if n == 0 {
			if n, err = tok.Count(d.Text); err != nil {
				return nil, err
			}
		}
		per[d.Kind] = append(per[d.Kind], n)
		lic := d.License
		if lic == "" {
			lic = "unknown"
		}
		s.Licenses[lic]++
	}
	for _, k := range Kinds {
		ns := per[k]
		if len(ns) == 0 {
			continue
		}
		slices.Sort(ns)
		ks := KindSummary{Kind: k, Docs: len(ns), TokensP50: ns[(len(ns)-1)/2], TokensP90: ns[(len(ns)-1)*9/10], TokensMax: ns[len(ns)-1]}
		for _, n := range ns {
			ks.Tokens += int64(n)
		}
		for i := range c.Docs {
			if c.Docs[i].Kind == k {
				ks.Bytes += int64(len(c.Docs[i].Text))
			}
		}
		s.Kinds = append(s.Kinds, ks)
	}
	return s, nil
}
