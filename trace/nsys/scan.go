package nsys

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spoc-project/spoc/trace"
)

// maxSideIntervals bounds the memcpy/memset/whole-graph intervals kept in
// memory for the busy-time union; beyond it the union is computed in SQL.
const maxSideIntervals = 2_000_000

// aggKey identifies one aggregate: a device and, for kernels, the two name
// string ids; for memcpy the copy kind; nothing more for memset and graphs.
type aggKey struct {
	table  string
	device int64
	a, b   int64
}

type aggVal struct {
	count, timeNS, graph, minStart, maxEnd int64
}

type span struct{ start, end int64 }

// scanner aggregates activity rows streamed from SQLite and keeps, per
// device, a running union of kernel intervals.
//
// Why not GROUP BY: SQLite aggregates a GROUP BY by sorting every row, and in
// the pure-Go SQLite driver that sort costs about three times as much as
// streaming the rows once into a hash map (see BenchmarkQueries1M); the busy
// union needs every row's interval anyway. The stream also lets the union run
// in constant memory when, as in nsys exports, each device's rows come in
// start order; otherwise the union falls back to a window-function query.
type scanner struct {
	lo, hi int64
	aggs   map[aggKey]*aggVal

	side      map[int64][]span // memcpy/memset/graph intervals, then their union
	sideCount int

	blocks   map[int64]*kernelUnion
	unsorted bool // kernel rows were not in start order per device
}

type kernelUnion struct {
	started    bool
	bs, be     int64 // current merged block
	lastStart  int64
	busy       int64 // length of finished blocks
	overlap    int64 // finished blocks' overlap with the side union
	sidePtr    int
	sideSpans  []span
	sideLength int64
}

func newScanner(w trace.Window) *scanner {
	lo, hi := bounds(w)
	return &scanner{lo: lo, hi: hi, aggs: map[aggKey]*aggVal{}, side: map[int64][]span{}, blocks: map[int64]*kernelUnion{}}
}

// add records one activity clipped to the window; it reports the clipped
// interval, empty when outside.
func (s *scanner) add(k aggKey, start, end int64, graph bool) (int64, int64, bool) {
	cs, ce := max(start, s.lo), min(end, s.hi)
	if ce <= cs {
		return 0, 0, false
	}
	v := s.aggs[k]
	if v == nil {
		v = &aggVal{minStart: start, maxEnd: end}
		s.aggs[k] = v
	}
	v.count++
	v.timeNS += ce - cs
	if graph {
		v.graph++
	}
	v.minStart = min(v.minStart, start)
	v.maxEnd = max(v.maxEnd, end)
	return cs, ce, true
}

// scanSide reads a memcpy, memset or whole-graph table.
func (s *scanner) scanSide(ctx context.Context, db *sql.DB, table, kindColumn string) error {
	kind := `0`
	if kindColumn != "" {
		kind = `COALESCE(` + kindColumn + `, -1)`
	}
	rows, err := db.QueryContext(ctx, `SELECT deviceId, `+kind+`, start, "end" FROM `+table+
		` WHERE "end" > ?1 AND start < ?2 AND deviceId IS NOT NULL`, s.lo, s.hi)
	if err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	defer rows.Close()
	var dev, a, start, end int64
	for rows.Next() {
		if err := rows.Scan(&dev, &a, &start, &end); err != nil {
			return fmt.Errorf("read %s: %w", table, err)
		}
		if cs, ce, ok := s.add(aggKey{table: table, device: dev, a: a}, start, end, false); ok && s.sideCount <= maxSideIntervals {
			s.side[dev] = append(s.side[dev], span{cs, ce})
			s.sideCount++
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	return nil
}

// mergeSide turns each device's side intervals into a sorted disjoint union.
func (s *scanner) mergeSide() {
	for dev, ivs := range s.side {
		slices.SortFunc(ivs, func(x, y span) int { return cmp.Compare(x.start, y.start) })
		out := ivs[:0]
		for _, iv := range ivs {
			if n := len(out); n > 0 && iv.start <= out[n-1].end {
				out[n-1].end = max(out[n-1].end, iv.end)
				continue
			}
			out = append(out, iv)
		}
		s.side[dev] = out
	}
}

// scanKernels streams the kernel table.
func (s *scanner) scanKernels(ctx context.Context, db *sql.DB, hasGraph bool) error {
	graph := `0`
	if hasGraph {
		graph = `graphNodeId IS NOT NULL`
	}
	// Without a window every row counts, and a WHERE clause would cost a
	// comparison per row in the SQLite VM for nothing.
	where := ` WHERE "end" > ?1 AND start < ?2`
	args := []any{s.lo, s.hi}
	if s.lo <= 0 && s.hi == unbounded {
		where, args = "", nil
	}
	rows, err := db.QueryContext(ctx, `SELECT IFNULL(deviceId, -1), IFNULL(demangledName, -1), IFNULL(shortName, -1), start, "end", `+graph+
		` FROM `+tableKernel+where, args...)
	if err != nil {
		return fmt.Errorf("read kernels: %w", err)
	}
	defer rows.Close()
	var dev, dn, sn, start, end int64
	var g bool
	var u *kernelUnion
	lastDev := int64(-1 << 62)
	for rows.Next() {
		if err := rows.Scan(&dev, &dn, &sn, &start, &end, &g); err != nil {
			return fmt.Errorf("read kernels: %w", err)
		}
		if dev < 0 {
			continue // not GPU work
		}
		cs, ce, ok := s.add(aggKey{table: tableKernel, device: dev, a: dn, b: sn}, start, end, g)
		if !ok || s.unsorted {
			continue
		}
		if dev != lastDev {
			u = s.union(dev)
			lastDev = dev
		}
		if start < u.lastStart {
			s.unsorted = true
			continue
		}
		u.lastStart = start
		switch {
		case !u.started:
			u.started, u.bs, u.be = true, cs, ce
		case cs > u.be:
			u.finish()
			u.bs, u.be = cs, ce
		case ce > u.be:
			u.be = ce
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read kernels: %w", err)
	}
	return nil
}

func (s *scanner) union(dev int64) *kernelUnion {
	u := s.blocks[dev]
	if u == nil {
		u = &kernelUnion{sideSpans: s.side[dev], lastStart: -1 << 62}
		for _, sp := range u.sideSpans {
			u.sideLength += sp.end - sp.start
		}
		s.blocks[dev] = u
	}
	return u
}

// finish closes the current block: its length counts, minus what the side
// union already covers.
func (u *kernelUnion) finish() {
	u.busy += u.be - u.bs
	sp := u.sideSpans
	for u.sidePtr < len(sp) && sp[u.sidePtr].end <= u.bs {
		u.sidePtr++
	}
	for j := u.sidePtr; j < len(sp) && sp[j].start < u.be; j++ {
		u.overlap += min(sp[j].end, u.be) - max(sp[j].start, u.bs)
	}
}

// busy returns each device's busy time, or ok=false when the streamed union
// is not valid (unsorted kernel rows or too many side intervals).
func (s *scanner) busy() (map[int]int64, bool) {
	if s.unsorted || s.sideCount > maxSideIntervals {
		return nil, false
	}
	out := map[int]int64{}
	for dev := range s.side {
		s.union(dev)
	}
	for dev, u := range s.blocks {
		if u.started {
			u.finish()
		}
		out[int(dev)] = u.busy + u.sideLength - u.overlap
	}
	return out, true
}

// groups resolves names and returns the aggregates.
func (s *scanner) groups(ctx context.Context, db *sql.DB, copyLabels map[int64]string) ([]group, error) {
	var ids []int64
	seen := map[int64]bool{}
	for k := range s.aggs {
		if k.table != tableKernel {
			continue
		}
		for _, id := range []int64{k.a, k.b} {
			if id >= 0 && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	names, err := lookupStrings(ctx, db, ids)
	if err != nil {
		return nil, err
	}
	out := make([]group, 0, len(s.aggs))
	for k, v := range s.aggs {
		g := group{device: int(k.device), count: v.count, timeNS: v.timeNS, graphCount: v.graph, minStart: v.minStart, maxEnd: v.maxEnd}
		switch k.table {
		case tableKernel:
			g.name = cmp.Or(names[k.a], names[k.b], "[unnamed kernel]")
		case tableMemcpy:
			label, ok := copyLabels[k.a]
			if !ok {
				label, ok = copyKindLabels[k.a]
			}
			if !ok {
				label = "kind " + strconv.FormatInt(k.a, 10)
			}
			g.name = "[CUDA memcpy " + label + "]"
		case tableMemset:
			g.name = memsetName
		default:
			g.name = wholeGraphName
		}
		out = append(out, g)
	}
	return out, nil
}

// lookupStrings resolves StringIds ids in batches.
func lookupStrings(ctx context.Context, db *sql.DB, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	const batch = 500
	for len(ids) > 0 {
		n := min(batch, len(ids))
		args := make([]any, n)
		for i, id := range ids[:n] {
			args[i] = id
		}
		q := `SELECT id, value FROM ` + tableStrings + ` WHERE id IN (?` + strings.Repeat(",?", n-1) + `)`
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("resolve kernel names: %w", err)
		}
		for rows.Next() {
			var id int64
			var v sql.NullString
			if err := rows.Scan(&id, &v); err != nil {
				rows.Close()
				return nil, fmt.Errorf("resolve kernel names: %w", err)
			}
			out[id] = v.String
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("resolve kernel names: %w", err)
		}
		ids = ids[n:]
	}
	return out, nil
}
