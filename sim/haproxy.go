package sim

import (
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
	"strings"
)

// HAProxy's consistent-hash ring, as HAProxy 2.6 (Debian 12's haproxy
// 2.6.12) builds it for a backend with
//
//	balance hdr(X-Session-Id)
//	hash-type consistent [sdbm|djb2|wt6|crc32] [avalanche]
//	hash-balance-factor F        # optional: bounded loads
//	server r1 ... [id N] [weight W]
//
// so that a simulated fleet sends each session to the replica HAProxy would
// send it to. Written from HAProxy's sources and its configuration manual
// (no code copied):
//
//   - src/lb_chash.c, chash_init_server_tree: every server gets
//     weight × BE_WEIGHT_SCALE (16) points ("nodes") on a 32-bit ring; node
//     j of the server with numeric id puid sits at
//     full_hash(puid × SRV_EWGHT_RANGE + j), SRV_EWGHT_RANGE = 256 × 16.
//     Server ids are the "id" keyword's, else assigned 1, 2, … in
//     declaration order skipping ids already taken (cfgparse.c, "assign
//     automatic UIDs to servers"). HAProxy 2.6 has no "hash-key" keyword;
//     the ring depends on ids and weights only, never on addresses or names.
//   - include/haproxy/tools.h, full_hash: one of Bob Jenkins' 32-bit full
//     avalanche integer hashes, times 3221225473.
//   - src/backend.c, get_server_hh: the header's value (its first
//     comma-separated value, whitespace trimmed) is hashed with the
//     backend's function (src/hash.c: sdbm by default, djb2, wt6, crc32),
//     then passed through full_hash when the "avalanche" modifier is set.
//     "hash-type consistent" without a function means sdbm with avalanche
//     (configuration manual, "hash-type"); naming a function turns
//     avalanche off unless it is named too. A missing or empty header falls
//     back to round robin over the ring.
//   - src/lb_chash.c, chash_get_server_hash: the chosen point is the closer
//     of the first point at or after the hash and the one before it
//     (wrapping around; the earlier one on a tie), not simply the
//     successor. With hash-balance-factor, a server that is not eligible
//     is skipped by walking the ring forward (chash_server_is_eligible, the
//     "Consistent Hashing with Bounded Loads" of Mirrokni, Thorup and
//     Zadimoghaddam): the backend's requests in flight plus this one, times
//     the factor / 100 rounded up, are shared out as slots in proportion to
//     the servers' effective weights; a server is eligible while it serves
//     fewer requests than its slots (never fewer than one slot).
//
// TestHAProxyRingMatchesHAProxy checks the choices against a real HAProxy.

// HAProxy hash functions (hash-type consistent <function>).
const (
	HashSDBM  = "sdbm"
	HashDJB2  = "djb2"
	HashWT6   = "wt6"
	HashCRC32 = "crc32"
)

// HashFunctions lists the hash functions HAProxyRing implements.
var HashFunctions = []string{HashSDBM, HashDJB2, HashWT6, HashCRC32}

// HAProxy constants (include/haproxy/backend-t.h, server-t.h).
const (
	haproxyWeightScale  = 16                       // BE_WEIGHT_SCALE
	haproxyEWeightRange = 256 * haproxyWeightScale // SRV_EWGHT_RANGE
	haproxyMaxWeight    = 256                      // SRV_UWGHT_MAX
	haproxyMaxID        = 1<<31 - 1                // ids are positive ints
	haproxyNoServer     = -1                       // no server chosen
)

// HAProxyServer is one "server" line of the backend.
type HAProxyServer struct {
	// ID is the server's "id" keyword; 0 lets HAProxy number it.
	ID int
	// Weight is the server's "weight" (1–256); 0 means HAProxy's default, 1.
	Weight int
}

// HAProxyHash is a backend's "hash-type consistent" function and modifier.
type HAProxyHash struct {
	// Function is sdbm, djb2, wt6 or crc32; empty means what "hash-type
	// consistent" alone means: sdbm with avalanche.
	Function string
	// Avalanche applies full_hash to the function's result. It is implied
	// when Function is empty.
	Avalanche bool
}

// String is the hash as a hash-type line spells it.
func (h HAProxyHash) String() string {
	if h.Function == "" {
		return "consistent"
	}
	s := "consistent " + h.Function
	if h.Avalanche {
		s += " avalanche"
	}
	return s
}

// HAProxyRing is a backend's consistent-hash ring: which server a hash
// lands on, optionally with bounded loads. It is immutable and safe for
// concurrent use; the loads are the caller's.
type HAProxyRing struct {
	keys   []uint32 // node keys, sorted (stable by insertion order)
	server []int32  // server index of each node
	ids    []int    // servers' numeric ids
	// effective weights (weight × 16) and their running sums in server order
	eweight, cumulative []int
	totWeight           int
	fn                  func(string) uint32
	avalanche           bool
	factor              int
}

// NewHAProxyRing builds the ring of servers (in declaration order) hashed
// with h; balanceFactor is hash-balance-factor (0: off, else > 100).
func NewHAProxyRing(servers []HAProxyServer, h HAProxyHash, balanceFactor int) (*HAProxyRing, error) {
	if len(servers) == 0 {
		return nil, errors.New("haproxy ring: no servers")
	}
	if balanceFactor != 0 && balanceFactor <= 100 {
		return nil, fmt.Errorf("haproxy ring: hash-balance-factor %d must be 0 (off) or above 100", balanceFactor)
	}
	r := &HAProxyRing{factor: balanceFactor}
	switch strings.ToLower(h.Function) {
	case "":
		r.fn, r.avalanche = hashSDBM, true
	case HashSDBM:
		r.fn, r.avalanche = hashSDBM, h.Avalanche
	case HashDJB2:
		r.fn, r.avalanche = hashDJB2, h.Avalanche
	case HashWT6:
		r.fn, r.avalanche = hashWT6, h.Avalanche
	case HashCRC32:
		r.fn, r.avalanche = hashCRC32, h.Avalanche
	default:
		return nil, fmt.Errorf("haproxy ring: unknown hash function %q (one of %s)", h.Function, strings.Join(HashFunctions, ", "))
	}
	// Server ids: explicit ones first, then automatic numbering in
	// declaration order from the first spare id.
	used := map[int]bool{}
	for i, s := range servers {
		if s.ID < 0 || s.ID > haproxyMaxID {
			return nil, fmt.Errorf("haproxy ring: server %d: id %d is not positive", i, s.ID)
		}
		if s.ID > 0 {
			if used[s.ID] {
				return nil, fmt.Errorf("haproxy ring: server %d: id %d is used twice", i, s.ID)
			}
			used[s.ID] = true
		}
		if s.Weight < 0 || s.Weight > haproxyMaxWeight {
			return nil, fmt.Errorf("haproxy ring: server %d: weight %d is not in [0, %d]", i, s.Weight, haproxyMaxWeight)
		}
	}
	next := 1
	r.ids = make([]int, len(servers))
	for i, s := range servers {
		id := s.ID
		if id == 0 {
			for used[next] {
				next++
			}
			id = next
			used[id] = true
		}
		next++
		r.ids[i] = id
	}
	type node struct {
		key uint32
		srv int32
	}
	var nodes []node
	r.eweight = make([]int, len(servers))
	r.cumulative = make([]int, len(servers))
	for i, s := range servers {
		w := s.Weight
		if w == 0 {
			w = 1
		}
		r.cumulative[i] = r.totWeight
		r.eweight[i] = w * haproxyWeightScale
		r.totWeight += r.eweight[i]
		for j := range r.eweight[i] {
			nodes = append(nodes, node{key: fullHash(uint32(r.ids[i]*haproxyEWeightRange + j)), srv: int32(i)})
		}
	}
	sort.SliceStable(nodes, func(a, b int) bool { return nodes[a].key < nodes[b].key })
	r.keys = make([]uint32, len(nodes))
	r.server = make([]int32, len(nodes))
	for i, n := range nodes {
		r.keys[i], r.server[i] = n.key, n.srv
	}
	return r, nil
}

// Servers is the number of servers.
func (r *HAProxyRing) Servers() int { return len(r.ids) }

// ID is server i's numeric id (the one HAProxy reports in its stats).
func (r *HAProxyRing) ID(i int) int { return r.ids[i] }

// Hash is the ring position of a header value: the backend's function, then
// full_hash under avalanche.
func (r *HAProxyRing) Hash(value string) uint32 {
	h := r.fn(firstHeaderValue(value))
	if r.avalanche {
		h = fullHash(h)
	}
	return h
}

// Pick returns the index of the server that gets a request whose header
// has value, given served[i], the requests server i serves now (nil: none;
// only read with a balance factor). It returns -1 for an empty value, which
// HAProxy sends round robin instead.
func (r *HAProxyRing) Pick(value string, served []int) int {
	if firstHeaderValue(value) == "" {
		return haproxyNoServer
	}
	return r.Lookup(r.Hash(value), served)
}

// Lookup returns the server for ring position hash.
func (r *HAProxyRing) Lookup(hash uint32, served []int) int {
	n := len(r.keys)
	next := sort.Search(n, func(i int) bool { return r.keys[i] >= hash })
	if next == n {
		next = 0 // wrap to the first point
	}
	prev := next - 1
	if prev < 0 {
		prev = n - 1
	}
	// closer of the two (uint32 arithmetic wraps around the ring)
	if hash-r.keys[prev] <= r.keys[next]-hash {
		next = prev
	}
	srv := int(r.server[next])
	if r.factor == 0 || served == nil {
		return srv
	}
	total := 0
	for _, s := range served {
		total += s
	}
	for loops := 0; !r.eligible(srv, served, total); {
		next++
		if next == n {
			next = 0
			if loops++; loops > 1 {
				break // HAProxy's guard against looping forever
			}
		}
		srv = int(r.server[next])
	}
	return srv
}

// eligible is chash_server_is_eligible for server s.
func (r *HAProxyRing) eligible(s int, served []int, total int) bool {
	slots := ((total+1)*r.factor + 99) / 100
	perWeight, rem := slots/r.totWeight, slots%r.totWeight
	mine := r.eweight[s] * perWeight
	mine += (r.cumulative[s]+r.eweight[s])*rem/r.totWeight - r.cumulative[s]*rem/r.totWeight
	if mine == 0 {
		mine = 1
	}
	return served[s] < mine
}

// firstHeaderValue is what HAProxy hashes of a header: its first
// comma-separated value without surrounding spaces and tabs.
func firstHeaderValue(v string) string {
	if i := strings.IndexByte(v, ','); i >= 0 {
		v = v[:i]
	}
	return strings.Trim(v, " \t")
}

// fullHash is HAProxy's full_hash (tools.h): a Bob Jenkins full-avalanche
// 32-bit integer hash, spread by a large prime.
func fullHash(a uint32) uint32 {
	a = (a + 0x7ed55d16) + (a << 12)
	a = (a ^ 0xc761c23c) ^ (a >> 19)
	a = (a + 0x165667b1) + (a << 5)
	a = (a + 0xd3a2646c) ^ (a << 9)
	a = (a + 0xfd7046c5) + (a << 3)
	a = (a ^ 0xb55a4f09) ^ (a >> 16)
	return a * 3221225473
}

// hashSDBM is HAProxy's hash_sdbm. Its C input is char; spoc's header
// values are ASCII, where signed and unsigned char agree.
func hashSDBM(s string) uint32 {
	var h uint32
	for i := 0; i < len(s); i++ {
		h = uint32(s[i]) + (h << 6) + (h << 16) - h
	}
	return h
}

// hashCRC32 is HAProxy's hash_crc32: the IEEE CRC-32 of Ethernet and gzip.
func hashCRC32(s string) uint32 { return crc32.ChecksumIEEE([]byte(s)) }

// hashDJB2 is HAProxy's hash_djb2: h = h×33 + c from 5381.
func hashDJB2(s string) uint32 {
	h := uint32(5381)
	for i := 0; i < len(s); i++ {
		h = (h << 5) + h + uint32(s[i])
	}
	return h
}

// hashWT6 is HAProxy's hash_wt6: two 32-bit lanes rotated by amounts that
// depend on the data.
func hashWT6(s string) uint32 {
	h0, h1 := uint32(0xa53c965a), uint32(0x5ca6953a)
	step0, step1 := uint32(6), uint32(18)
	for i := 0; i < len(s); i++ {
		t := uint32(s[i])
		h0 = ^(h0 ^ t)
		h1 = ^(h1 + t)
		t = h1<<step0 | h1>>(32-step0)
		h1 = h0<<step1 | h0>>(32-step1)
		h0 = t
		t = (h0>>16 ^ h1) & 0xffff
		step0 = t & 0x1f
		step1 = t >> 11
	}
	return h0 ^ h1
}
