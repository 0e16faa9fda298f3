package workload

// IdealPrefixCache measures prefix sharing with an infinite prefix cache at
// segment granularity: a prompt token is a hit when an earlier request's
// prompt or reply already covered the same prefix. Segments with the same
// key are prefixes of one document (see Segment), so a segment is shared up
// to the longest run of its key seen at the same position; the match stops
// at the first segment that is new or longer than anything seen there.
//
// With an infinite cache every distinct prefix misses exactly once, so the
// overall hit rate does not depend on the order of requests; the order only
// decides which request (and profile) pays each first miss.
type IdealPrefixCache struct {
	root prefixNode
}

type prefixNode struct {
	edges map[uint64]*prefixEdge
}

// prefixEdge is one key at one position of the prefix tree.
type prefixEdge struct {
	maxLen int                 // longest run of the key seen at this position
	next   map[int]*prefixNode // continuation after exactly that many tokens
}

// Lookup returns how many leading tokens of segs are cached, then caches
// all of segs.
func (c *IdealPrefixCache) Lookup(segs []Segment) int {
	return c.walk(segs, true)
}

// Insert caches segs without counting (an engine caches the KV of a reply
// once the request is done).
func (c *IdealPrefixCache) Insert(segs []Segment) { c.walk(segs, false) }

func (c *IdealPrefixCache) walk(segs []Segment, matching bool) int {
	node := &c.root
	hit := 0
	for i := range segs {
		s := &segs[i]
		if s.Tokens <= 0 {
			continue
		}
		if node.edges == nil {
			node.edges = map[uint64]*prefixEdge{}
		}
		e := node.edges[s.Key]
		if e == nil {
			e = &prefixEdge{next: map[int]*prefixNode{}}
			node.edges[s.Key] = e
		}
		next := e.next[s.Tokens]
		if matching {
			h := min(s.Tokens, e.maxLen)
			hit += h
			matching = h == s.Tokens && next != nil
		}
		e.maxLen = max(e.maxLen, s.Tokens)
		if next == nil {
			next = &prefixNode{}
			e.next[s.Tokens] = next
		}
		node = next
	}
	return hit
}
