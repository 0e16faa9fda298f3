package nsys

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spoc-project/spoc/trace"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// SupportedSchemaMajor is the major EXPORT_SCHEMA_VERSION this reader
// understands. Nsight Systems bumps the major version when it renames or
// removes tables or columns; minor versions only add.
const SupportedSchemaMajor = 3

// Table and column names of the documented nsys SQLite export schema.
const (
	tableMeta      = "META_DATA_EXPORT"
	tableStrings   = "StringIds"
	tableKernel    = "CUPTI_ACTIVITY_KIND_KERNEL"
	tableMemcpy    = "CUPTI_ACTIVITY_KIND_MEMCPY"
	tableMemset    = "CUPTI_ACTIVITY_KIND_MEMSET"
	tableGraph     = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
	tableNVTX      = "NVTX_EVENTS"
	tableGPU       = "TARGET_INFO_GPU"
	tableCopyKinds = "ENUM_CUDA_MEMCPY_OPER"
)

// ErrNotExport reports a file that is not an nsys SQLite export.
var ErrNotExport = errors.New("not an Nsight Systems SQLite export")

// Options select what ReadSQLite reads.
type Options struct {
	// Window restricts the analysis to [StartNS, EndNS) in the trace's time
	// base; EndNS == 0 means to the end. Activity crossing an edge is clipped.
	Window trace.Window
	// NVTX, when set, takes the window from the NVTX ranges with this text:
	// from the earliest start to the latest end. It excludes Window.
	NVTX string
}

// sqliteMagic starts every SQLite 3 database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// IsSQLite reports whether the file at path starts with the SQLite header.
func IsSQLite(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, head); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, err
	}
	return bytes.Equal(head, sqliteMagic), nil
}

// ReadSQLite reads the nsys SQLite export at path into a Profile.
func ReadSQLite(ctx context.Context, path string, opt Options) (*trace.Profile, error) {
	p, err := readSQLite(ctx, path, opt)
	if err != nil {
		return nil, fmt.Errorf("read nsys export %s: %w", path, err)
	}
	return p, nil
}

func readSQLite(ctx context.Context, path string, opt Options) (*trace.Profile, error) {
	if opt.NVTX != "" && (opt.Window.StartNS != 0 || opt.Window.EndNS != 0) {
		return nil, errors.New("a time window and an NVTX range exclude each other")
	}
	ok, err := IsSQLite(path)
	if err != nil {
		return nil, err
	}
	if !ok {
		hint := ""
		if strings.HasSuffix(path, ".nsys-rep") || strings.HasSuffix(path, ".qdrep") {
			hint = "; export the report first: nsys export --type sqlite " + path
		}
		return nil, fmt.Errorf("%w: no SQLite header%s", ErrNotExport, hint)
	}
	db, err := openReadOnly(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()

	s, err := inspect(ctx, db)
	if err != nil {
		return nil, err
	}
	w := opt.Window
	if opt.NVTX != "" {
		if w, err = nvtxWindow(ctx, db, s, opt.NVTX); err != nil {
			return nil, err
		}
	}
	p := &trace.Profile{Source: path, Window: w, Warnings: s.warnings}

	groups, busy, err := scanActivity(ctx, db, s, w)
	if err != nil {
		return nil, err
	}
	var devName map[int]string
	if s.tables[tableGPU] {
		if devName, err = gpuNames(ctx, db); err != nil {
			return nil, err
		}
	}
	buildProfile(p, groups, busy, devName)
	if len(p.Devices) == 0 {
		p.Warnings = append(p.Warnings, "no GPU activity in the window")
	}
	return p, nil
}

// openReadOnly opens path read-only; mode=ro also stops SQLite from creating
// a missing file.
func openReadOnly(path string) (*sql.DB, error) {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	dsn := "file:" + r.Replace(path) + "?mode=ro" +
		"&_pragma=query_only(1)&_pragma=temp_store(2)&_pragma=cache_size(-131072)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(2)
	return db, nil
}

// schema is what inspect learned about the export.
type schema struct {
	version  string
	tables   map[string]bool
	columns  map[string]map[string]bool
	warnings []string
}

func (s *schema) has(table, column string) bool { return s.columns[table][column] }

// inspect checks the schema version and the tables and columns the reader
// relies on.
func inspect(ctx context.Context, db *sql.DB) (*schema, error) {
	s := &schema{tables: map[string]bool{}, columns: map[string]map[string]bool{}}
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type IN ('table','view')`)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list tables: %w", err)
		}
		s.tables[name] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	if !s.tables[tableMeta] {
		return nil, fmt.Errorf("%w: table %s is missing", ErrNotExport, tableMeta)
	}
	if s.version, err = schemaVersion(ctx, db); err != nil {
		return nil, err
	}
	for _, t := range []string{tableStrings, tableKernel} {
		if !s.tables[t] {
			hint := ""
			if t == tableKernel {
				hint = " (no CUDA kernels were traced; capture with --trace=cuda)"
			}
			return nil, fmt.Errorf("table %s is missing%s", t, hint)
		}
	}
	for t := range s.tables {
		if t == tableKernel || t == tableMemcpy || t == tableMemset || t == tableGraph || t == tableNVTX || t == tableGPU || t == tableStrings {
			cols, err := tableColumns(ctx, db, t)
			if err != nil {
				return nil, err
			}
			s.columns[t] = cols
		}
	}
	for _, c := range []string{"start", "end", "deviceId", "demangledName", "shortName"} {
		if !s.has(tableKernel, c) {
			return nil, fmt.Errorf("table %s has no column %s (export schema %s)", tableKernel, c, s.version)
		}
	}
	for _, c := range []string{"id", "value"} {
		if !s.has(tableStrings, c) {
			return nil, fmt.Errorf("table %s has no column %s (export schema %s)", tableStrings, c, s.version)
		}
	}
	for _, t := range []string{tableMemcpy, tableMemset, tableGraph} {
		if s.tables[t] && !(s.has(t, "start") && s.has(t, "end") && s.has(t, "deviceId")) {
			s.warnings = append(s.warnings, fmt.Sprintf("table %s lacks start/end/deviceId; ignored", t))
			delete(s.tables, t)
		}
	}
	if s.tables[tableGraph] {
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+tableGraph).Scan(&n); err != nil {
			return nil, fmt.Errorf("count %s: %w", tableGraph, err)
		}
		if n == 0 {
			delete(s.tables, tableGraph)
		} else {
			s.warnings = append(s.warnings, fmt.Sprintf("%d CUDA graph launches were traced as whole graphs "+
				"(--cuda-graph-trace=graph), so their kernels are invisible and their time is reported as "+
				"%q under other; capture with --cuda-graph-trace=node", n, wholeGraphName))
		}
	}
	return s, nil
}

// schemaVersion reads EXPORT_SCHEMA_VERSION ("3.15.1") and rejects a major
// version this reader does not know.
func schemaVersion(ctx context.Context, db *sql.DB) (string, error) {
	var v sql.NullString
	err := db.QueryRowContext(ctx, `SELECT value FROM `+tableMeta+` WHERE name = 'EXPORT_SCHEMA_VERSION'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !v.Valid) {
		return "", fmt.Errorf("%w: %s has no EXPORT_SCHEMA_VERSION", ErrNotExport, tableMeta)
	}
	if err != nil {
		return "", fmt.Errorf("read export schema version: %w", err)
	}
	major, _, _ := strings.Cut(strings.TrimSpace(v.String), ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return "", fmt.Errorf("%w: EXPORT_SCHEMA_VERSION %q is not a version", ErrNotExport, v.String)
	}
	if n != SupportedSchemaMajor {
		return "", fmt.Errorf("unsupported export schema version %s (spoc reads major version %d; "+
			"export with an Nsight Systems release that writes it)", v.String, SupportedSchemaMajor)
	}
	return v.String, nil
}

func tableColumns(ctx context.Context, db *sql.DB, table string) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	defer rows.Close()
	cols := map[string]bool{}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, fmt.Errorf("columns of %s: %w", table, err)
		}
		cols[c] = true
	}
	return cols, rows.Err()
}

// nvtxWindow spans the NVTX ranges whose text is name.
func nvtxWindow(ctx context.Context, db *sql.DB, s *schema, name string) (trace.Window, error) {
	if !s.tables[tableNVTX] {
		return trace.Window{}, fmt.Errorf("NVTX range %q: table %s is missing (capture with --trace=nvtx)", name, tableNVTX)
	}
	text := nvtxText(s)
	if text == "" {
		return trace.Window{}, fmt.Errorf("NVTX range %q: %s has neither text nor textId", name, tableNVTX)
	}
	q := `SELECT MIN(n.start), MAX(n."end"), COUNT(*) FROM ` + tableNVTX + ` n ` + nvtxJoin(s) +
		` WHERE n."end" IS NOT NULL AND n."end" > n.start AND ` + text + ` = ?`
	var lo, hi sql.NullInt64
	var count int64
	if err := db.QueryRowContext(ctx, q, name).Scan(&lo, &hi, &count); err != nil {
		return trace.Window{}, fmt.Errorf("NVTX range %q: %w", name, err)
	}
	if count == 0 {
		names, err := nvtxNames(ctx, db, s, 10)
		if err != nil {
			return trace.Window{}, err
		}
		return trace.Window{}, fmt.Errorf("NVTX range %q not found (ranges in the trace include: %s)", name, strings.Join(names, ", "))
	}
	return trace.Window{StartNS: lo.Int64, EndNS: hi.Int64, NVTX: name}, nil
}

func nvtxText(s *schema) string {
	switch {
	case s.has(tableNVTX, "text") && s.has(tableNVTX, "textId"):
		return `COALESCE(n.text, t.value)`
	case s.has(tableNVTX, "textId"):
		return `t.value`
	case s.has(tableNVTX, "text"):
		return `n.text`
	}
	return ""
}

func nvtxJoin(s *schema) string {
	if s.has(tableNVTX, "textId") {
		return `LEFT JOIN ` + tableStrings + ` t ON t.id = n.textId`
	}
	return ""
}

func nvtxNames(ctx context.Context, db *sql.DB, s *schema, limit int) ([]string, error) {
	q := `SELECT DISTINCT ` + nvtxText(s) + ` AS name FROM ` + tableNVTX + ` n ` + nvtxJoin(s) +
		` WHERE n."end" IS NOT NULL AND name IS NOT NULL ORDER BY name LIMIT ?`
	rows, err := db.QueryContext(ctx, q, limit)
	if err != nil {
		return nil, fmt.Errorf("list NVTX ranges: %w", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("list NVTX ranges: %w", err)
		}
		names = append(names, strconv.Quote(n))
	}
	if len(names) == 0 {
		names = []string{"none"}
	}
	return names, rows.Err()
}

func gpuNames(ctx context.Context, db *sql.DB) (map[int]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, name FROM `+tableGPU)
	if err != nil {
		// Older exports have a different TARGET_INFO_GPU; names are optional.
		return nil, nil
	}
	defer rows.Close()
	names := map[int]string{}
	for rows.Next() {
		var id sql.NullInt64
		var name sql.NullString
		if err := rows.Scan(&id, &name); err != nil {
			return nil, fmt.Errorf("read %s: %w", tableGPU, err)
		}
		if id.Valid && name.Valid {
			names[int(id.Int64)] = name.String
		}
	}
	return names, rows.Err()
}

// unbounded is the upper window edge for "to the end of the trace".
const unbounded = math.MaxInt64

func bounds(w trace.Window) (lo, hi int64) {
	hi = w.EndNS
	if hi == 0 {
		hi = unbounded
	}
	return w.StartNS, hi
}

// buildProfile merges the SQL groups (several string ids may resolve to one
// name) into per-device kernel lists and fixes the window.
func buildProfile(p *trace.Profile, groups []group, busy map[int]int64, names map[int]string) {
	type key struct {
		dev  int
		name string
	}
	merged := map[key]*trace.KernelStat{}
	devs := map[int]bool{}
	var minStart, maxEnd int64 = math.MaxInt64, math.MinInt64
	for _, g := range groups {
		k := key{g.device, g.name}
		st := merged[k]
		if st == nil {
			st = &trace.KernelStat{Name: g.name}
			merged[k] = st
		}
		st.Count += g.count
		st.TimeNS += g.timeNS
		st.GraphCount += g.graphCount
		devs[g.device] = true
		minStart = min(minStart, g.minStart)
		maxEnd = max(maxEnd, g.maxEnd)
	}
	if len(groups) > 0 {
		if p.Window.EndNS == 0 {
			p.Window.EndNS = maxEnd
		}
		if p.Window.StartNS == 0 && p.Window.NVTX == "" {
			p.Window.StartNS = minStart
		}
	}
	for dev := range devs {
		d := trace.DeviceProfile{Device: dev, Name: names[dev], BusyNS: busy[dev]}
		for k, st := range merged {
			if k.dev == dev {
				d.Kernels = append(d.Kernels, *st)
			}
		}
		slices.SortFunc(d.Kernels, func(a, b trace.KernelStat) int { return strings.Compare(a.Name, b.Name) })
		p.Devices = append(p.Devices, d)
	}
	slices.SortFunc(p.Devices, func(a, b trace.DeviceProfile) int { return a.Device - b.Device })
}
