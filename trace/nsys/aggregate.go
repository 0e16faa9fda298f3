package nsys

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
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

// durationExpr is an activity's duration clipped to the window; without a
// window the plain difference is cheaper.
func durationExpr(w trace.Window) string {
	if w.StartNS == 0 && w.EndNS == 0 {
		return `a."end" - a.start`
	}
	return `MIN(a."end", ?2) - MAX(a.start, ?1)`
}

// windowWhere keeps activities that overlap the window, ?1 and ?2 being its
// edges.
const windowWhere = `a."end" > ?1 AND a.start < ?2`

// KernelAggregateQuery is the SQL that aggregates kernels per device and
// name without a window. It is exported so that benchmarks can time the same
// query in the sqlite3 command-line shell.
const KernelAggregateQuery = `SELECT g.dev, d.value, s.value, g.n, g.t, g.gr, g.lo, g.hi FROM (
  SELECT a.deviceId AS dev, a.demangledName AS dn, a.shortName AS sn, COUNT(*) AS n,
         SUM(a."end" - a.start) AS t, SUM(a.graphNodeId IS NOT NULL) AS gr, MIN(a.start) AS lo, MAX(a."end") AS hi
  FROM CUPTI_ACTIVITY_KIND_KERNEL a GROUP BY 1, 2, 3
) g LEFT JOIN StringIds d ON d.id = g.dn LEFT JOIN StringIds s ON s.id = g.sn`

// aggregate groups every activity table by device and name in SQL.
func aggregate(ctx context.Context, db *sql.DB, s *schema, w trace.Window) ([]group, error) {
	lo, hi := bounds(w)
	graph := `0`
	if s.has(tableKernel, "graphNodeId") {
		graph = `SUM(a.graphNodeId IS NOT NULL)`
	}
	kernels := `SELECT g.dev, d.value, s.value, g.n, g.t, g.gr, g.lo, g.hi FROM (
  SELECT a.deviceId AS dev, a.demangledName AS dn, a.shortName AS sn, COUNT(*) AS n,
         SUM(` + durationExpr(w) + `) AS t, ` + graph + ` AS gr, MIN(a.start) AS lo, MAX(a."end") AS hi
  FROM ` + tableKernel + ` a WHERE ` + windowWhere + ` GROUP BY 1, 2, 3
) g LEFT JOIN ` + tableStrings + ` d ON d.id = g.dn LEFT JOIN ` + tableStrings + ` s ON s.id = g.sn`
	var out []group
	err := queryGroups(ctx, db, kernels, lo, hi, func(dev int, names [2]sql.NullString, g group) {
		g.device = dev
		switch {
		case names[0].Valid && names[0].String != "":
			g.name = names[0].String
		case names[1].Valid && names[1].String != "":
			g.name = names[1].String
		default:
			g.name = "[unnamed kernel]"
		}
		out = append(out, g)
	})
	if err != nil {
		return nil, fmt.Errorf("aggregate kernels: %w", err)
	}

	if s.tables[tableMemcpy] {
		labels := map[int64]string{}
		if s.tables[tableCopyKinds] {
			if labels, err = enumLabels(ctx, db, tableCopyKinds); err != nil {
				return nil, err
			}
		}
		kind := `NULL`
		if s.has(tableMemcpy, "copyKind") {
			kind = `a.copyKind`
		}
		q := `SELECT a.deviceId, ` + kind + `, NULL, COUNT(*), SUM(` + durationExpr(w) + `), 0, MIN(a.start), MAX(a."end")
  FROM ` + tableMemcpy + ` a WHERE ` + windowWhere + ` GROUP BY 1, 2`
		err := queryGroups(ctx, db, q, lo, hi, func(dev int, names [2]sql.NullString, g group) {
			g.device = dev
			label := "Unknown"
			if names[0].Valid {
				k, _ := strconv.ParseInt(names[0].String, 10, 64)
				if l, ok := labels[k]; ok {
					label = l
				} else if l, ok := copyKindLabels[k]; ok {
					label = l
				} else {
					label = "kind " + names[0].String
				}
			}
			g.name = "[CUDA memcpy " + label + "]"
			out = append(out, g)
		})
		if err != nil {
			return nil, fmt.Errorf("aggregate memcpy: %w", err)
		}
	}
	for _, t := range []struct{ table, name string }{{tableMemset, memsetName}, {tableGraph, wholeGraphName}} {
		if !s.tables[t.table] {
			continue
		}
		q := `SELECT a.deviceId, NULL, NULL, COUNT(*), SUM(` + durationExpr(w) + `), 0, MIN(a.start), MAX(a."end")
  FROM ` + t.table + ` a WHERE ` + windowWhere + ` GROUP BY 1`
		err := queryGroups(ctx, db, q, lo, hi, func(dev int, _ [2]sql.NullString, g group) {
			g.device, g.name = dev, t.name
			out = append(out, g)
		})
		if err != nil {
			return nil, fmt.Errorf("aggregate %s: %w", t.table, err)
		}
	}
	return out, nil
}

// queryGroups runs an aggregate query whose columns are device, two optional
// texts, count, time, graph count, min start and max end.
func queryGroups(ctx context.Context, db *sql.DB, q string, lo, hi int64, f func(int, [2]sql.NullString, group)) error {
	rows, err := db.QueryContext(ctx, q, lo, hi)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var dev sql.NullInt64
		var names [2]sql.NullString
		var g group
		var t, gr sql.NullInt64
		if err := rows.Scan(&dev, &names[0], &names[1], &g.count, &t, &gr, &g.minStart, &g.maxEnd); err != nil {
			return err
		}
		if !dev.Valid {
			continue // activity without a device (not GPU work)
		}
		g.timeNS, g.graphCount = t.Int64, gr.Int64
		f(int(dev.Int64), names, g)
	}
	return rows.Err()
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
