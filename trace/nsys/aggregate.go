package nsys

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/spoc-project/spoc/trace"
)

// wholeGraphName names the time of CUDA graphs traced without node detail.
const wholeGraphName = "[CUDA graph, traced whole]"

// memsetName names memset activity; memcpy names carry the copy kind.
const memsetName = "[CUDA memset]"

// copyKindLabels are the documented ENUM_CUDA_MEMCPY_OPER values, used when an
// export lacks the enum table.
var copyKindLabels = map[int64]string{
	0: "Unknown", 1: "Host-to-Device", 2: "Device-to-Host", 3: "Host-to-Array", 4: "Array-to-Host",
	5: "Array-to-Array", 6: "Array-to-Device", 7: "Device-to-Array", 8: "Device-to-Device",
	9: "Host-to-Host", 10: "Peer-to-Peer",
}

// group is one aggregated row: a (device, name) pair inside the window.
type group struct {
	device     int
	name       string
	count      int64
	timeNS     int64
	graphCount int64
	minStart   int64
	maxEnd     int64
}

// KernelAggregateQuery is the SQL equivalent of the kernel aggregation
// ReadSQLite performs (count, time, graph kernels and extent per device and
// name). ReadSQLite streams the rows instead (see scanner); the query is
// exported so that benchmarks can time it in the sqlite3 shell.
const KernelAggregateQuery = `SELECT g.dev, d.value, s.value, g.n, g.t, g.gr, g.lo, g.hi FROM (
  SELECT a.deviceId AS dev, a.demangledName AS dn, a.shortName AS sn, COUNT(*) AS n,
         SUM(a."end" - a.start) AS t, SUM(a.graphNodeId IS NOT NULL) AS gr, MIN(a.start) AS lo, MAX(a."end") AS hi
  FROM CUPTI_ACTIVITY_KIND_KERNEL a GROUP BY 1, 2, 3
) g LEFT JOIN StringIds d ON d.id = g.dn LEFT JOIN StringIds s ON s.id = g.sn`

// windowWhere keeps activities that overlap the window, ?1 and ?2 being its
// edges.
const windowWhere = `a."end" > ?1 AND a.start < ?2`

// scanActivity aggregates every activity table per device and name and
// computes each device's busy time.
func scanActivity(ctx context.Context, db *sql.DB, s *schema, w trace.Window) ([]group, map[int]int64, error) {
	sc := newScanner(w)
	labels := map[int64]string{}
	if s.tables[tableMemcpy] {
		if s.tables[tableCopyKinds] {
			var err error
			if labels, err = enumLabels(ctx, db, tableCopyKinds); err != nil {
				return nil, nil, err
			}
		}
		kind := ""
		if s.has(tableMemcpy, "copyKind") {
			kind = "copyKind"
		}
		if err := sc.scanSide(ctx, db, tableMemcpy, kind); err != nil {
			return nil, nil, err
		}
	}
	for _, t := range []string{tableMemset, tableGraph} {
		if s.tables[t] {
			if err := sc.scanSide(ctx, db, t, ""); err != nil {
				return nil, nil, err
			}
		}
	}
	sc.mergeSide()
	if err := sc.scanKernels(ctx, db, s.has(tableKernel, "graphNodeId")); err != nil {
		return nil, nil, err
	}
	groups, err := sc.groups(ctx, db, labels)
	if err != nil {
		return nil, nil, err
	}
	busy, ok := sc.busy()
	if !ok {
		if busy, err = busyTime(ctx, db, s, w); err != nil {
			return nil, nil, err
		}
	}
	return groups, busy, nil
}

func enumLabels(ctx context.Context, db *sql.DB, table string) (map[int64]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT * FROM `+table)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	idI, labelI := -1, -1
	for i, c := range cols {
		switch strings.ToLower(c) {
		case "id":
			idI = i
		case "label":
			labelI = i
		case "name":
			if labelI < 0 {
				labelI = i
			}
		}
	}
	out := map[int64]string{}
	if idI < 0 || labelI < 0 {
		return out, nil
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("read %s: %w", table, err)
		}
		id, ok := vals[idI].(int64)
		if ok {
			out[id] = fmt.Sprint(vals[labelI])
		}
	}
	return out, rows.Err()
}

// busyTime computes, per device, the length of the union of kernel, memcpy
// and memset intervals inside the window. The running maximum of earlier end
// times (a window function) leaves each interval only the part that sticks
// out beyond everything before it, so overlapping streams count once.
func busyTime(ctx context.Context, db *sql.DB, s *schema, w trace.Window) (map[int]int64, error) {
	lo, hi := bounds(w)
	var parts []string
	for _, t := range []string{tableKernel, tableMemcpy, tableMemset, tableGraph} {
		if !s.tables[t] {
			continue
		}
		parts = append(parts, `SELECT a.deviceId AS dev, MAX(a.start, ?1) AS s, MIN(a."end", ?2) AS e FROM `+t+` a WHERE `+windowWhere)
	}
	q := `WITH a AS (` + strings.Join(parts, " UNION ALL ") + `),
w AS (SELECT dev, s, e, MAX(e) OVER (PARTITION BY dev ORDER BY s ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev FROM a)
SELECT dev, SUM(MAX(0, e - MAX(s, COALESCE(prev, s)))) FROM w WHERE dev IS NOT NULL GROUP BY dev`
	rows, err := db.QueryContext(ctx, q, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("busy time: %w", err)
	}
	defer rows.Close()
	busy := map[int]int64{}
	for rows.Next() {
		var dev, ns int64
		if err := rows.Scan(&dev, &ns); err != nil {
			return nil, fmt.Errorf("busy time: %w", err)
		}
		busy[int(dev)] = ns
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("busy time: %w", err)
	}
	return busy, nil
}
