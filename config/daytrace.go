package config

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/workload"
)

// Day trace columns (day.trace): a header naming timestamp_s and one of
// sessions_per_minute or users.
const (
	dayTraceTime     = "timestamp_s"
	dayTraceSessions = "sessions_per_minute"
	dayTraceUsers    = "users"
)

// readDayTrace reads a day's load from CSV: a header with timestamp_s
// (seconds since the day's start, the first 0, increasing) and either
// sessions_per_minute or users, then one point per line, piecewise linear
// between them like day.rate and day.users. Every error names the file,
// the line and the column.
func readDayTrace(r io.Reader, name string) ([]workload.RatePoint, []plan.UsersPoint, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, nil, fmt.Errorf("day.trace %s: empty; want a header line %s,%s (or %s)", name, dayTraceTime, dayTraceSessions, dayTraceUsers)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("day.trace %s: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	ti, ok := col[dayTraceTime]
	if !ok {
		return nil, nil, fmt.Errorf("day.trace %s:1: no column %q in the header %q", name, dayTraceTime, strings.Join(header, ","))
	}
	si, hasS := col[dayTraceSessions]
	ui, hasU := col[dayTraceUsers]
	switch {
	case hasS && hasU:
		return nil, nil, fmt.Errorf("day.trace %s:1: columns %q and %q: give one, not both", name, dayTraceSessions, dayTraceUsers)
	case !hasS && !hasU:
		return nil, nil, fmt.Errorf("day.trace %s:1: no column %q or %q in the header %q", name, dayTraceSessions, dayTraceUsers, strings.Join(header, ","))
	}
	vi, vname := si, dayTraceSessions
	if hasU {
		vi, vname = ui, dayTraceUsers
	}
	var rate []workload.RatePoint
	var users []plan.UsersPoint
	prev := -1.0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, nil, fmt.Errorf("day.trace %s:%d: %w", name, pe.Line, pe.Err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("day.trace %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		field := func(i int, what string) (float64, error) {
			if i >= len(rec) {
				return 0, fmt.Errorf("day.trace %s:%d: column %q missing (%d fields)", name, line, what, len(rec))
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return 0, fmt.Errorf("day.trace %s:%d: column %q: want a non-negative number, got %q", name, line, what, rec[i])
			}
			return v, nil
		}
		ts, err := field(ti, dayTraceTime)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case prev < 0 && ts != 0:
			return nil, nil, fmt.Errorf("day.trace %s:%d: column %q: the day starts at 0, got %v", name, line, dayTraceTime, ts)
		case prev >= 0 && ts <= prev:
			return nil, nil, fmt.Errorf("day.trace %s:%d: column %q: %v is not after the previous line's %v: times must increase", name, line, dayTraceTime, ts, prev)
		}
		prev = ts
		v, err := field(vi, vname)
		if err != nil {
			return nil, nil, err
		}
		at := time.Duration(math.Round(ts * float64(time.Second)))
		if hasU {
			users = append(users, plan.UsersPoint{At: at, Users: v})
		} else {
			rate = append(rate, workload.RatePoint{At: at, PerSecond: v / 60})
		}
	}
	if prev < 0 {
		return nil, nil, fmt.Errorf("day.trace %s: a header and no points", name)
	}
	return rate, users, nil
}

// loadDayTrace reads day.trace's file.
func loadDayTrace(path string) ([]workload.RatePoint, []plan.UsersPoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("day.trace: %w", err)
	}
	defer f.Close()
	return readDayTrace(f, path)
}
