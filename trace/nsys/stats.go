package nsys

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spoc-project/spoc/trace"
)

// maxStatsLine bounds one line of stats output; kernel names with long
// template arguments reach tens of kilobytes.
const maxStatsLine = 4 << 20

// maxStatsTotalNS bounds the summed kernel time of a summary (about 36 GPU
// years), far beyond any capture and far from int64 overflow.
const maxStatsTotalNS = 1 << 60

// ReadStatsCSV reads the output of
//
//	nsys stats --report cuda_gpu_kern_sum --format csv REPORT
//
// into a Profile with a single AllDevices entry (the report sums all GPUs and
// has no timeline, so neither per-GPU shares nor idle time are known). Lines
// before the header (nsys prints "Generating SQLite file …" and "Processing
// […] with […]" there) are skipped; the header is the first CSV line with a
// "Total Time" column and a "Name" column. Data ends at the first blank line
// or at end of input. Times in µs, ms or s columns are converted to ns.
func ReadStatsCSV(r io.Reader, source string) (*trace.Profile, error) {
	p, err := readStatsCSV(r, source)
	if err != nil {
		return nil, fmt.Errorf("read nsys stats %s: %w", source, err)
	}
	return p, nil
}

type statsColumns struct {
	total, instances, name int
	unitNS                 float64
}

func readStatsCSV(r io.Reader, source string) (*trace.Profile, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxStatsLine)
	var cols *statsColumns
	line := 0
	var kernels []trace.KernelStat
	var total int64
	index := map[string]int{}
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
		if cols == nil {
			if c, ok := parseStatsHeader(text); ok {
				cols = c
			}
			continue
		}
		if strings.TrimSpace(text) == "" {
			break
		}
		rec, err := csvFields(text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		k, err := parseStatsRow(rec, cols)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if total += k.TimeNS; total > maxStatsTotalNS || k.Count > maxStatsTotalNS {
			return nil, fmt.Errorf("line %d: times add up beyond %d ns; not a kernel summary", line, int64(maxStatsTotalNS))
		}
		if i, ok := index[k.Name]; ok {
			kernels[i].Count += k.Count
			kernels[i].TimeNS += k.TimeNS
			continue
		}
		index[k.Name] = len(kernels)
		kernels = append(kernels, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if cols == nil {
		return nil, errors.New("no header with \"Total Time\" and \"Name\" columns found " +
			"(want the output of nsys stats --report cuda_gpu_kern_sum --format csv)")
	}
	p := &trace.Profile{
		Source:   source,
		Devices:  []trace.DeviceProfile{{Device: trace.AllDevices, Kernels: kernels}},
		Warnings: []string{"nsys stats summary: all GPUs summed, no per-GPU split, idle time or window"},
	}
	if len(kernels) == 0 {
		p.Warnings = append(p.Warnings, "the summary lists no kernels")
	}
	return p, nil
}

func csvFields(text string) ([]string, error) {
	cr := csv.NewReader(strings.NewReader(text))
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	rec, err := cr.Read()
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// parseStatsHeader recognises the report's header line and the unit of its
// time column.
func parseStatsHeader(text string) (*statsColumns, bool) {
	if !strings.Contains(text, "Name") || !strings.Contains(strings.ToLower(text), "total time") {
		return nil, false
	}
	rec, err := csvFields(text)
	if err != nil {
		return nil, false
	}
	c := &statsColumns{total: -1, instances: -1, name: -1}
	for i, f := range rec {
		f = strings.TrimSpace(f)
		lf := strings.ToLower(f)
		switch {
		case lf == "name":
			c.name = i
		case strings.HasPrefix(lf, "total time"):
			c.total = i
			c.unitNS = unitOf(lf)
		case lf == "instances" || lf == "calls" || lf == "count":
			c.instances = i
		}
	}
	if c.name < 0 || c.total < 0 || c.unitNS == 0 {
		return nil, false
	}
	return c, true
}

// unitOf returns nanoseconds per unit of a "Total Time (unit)" header.
func unitOf(h string) float64 {
	_, u, ok := strings.Cut(h, "(")
	if !ok {
		return 1 // older reports: nanoseconds without a unit
	}
	u = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(u), ")"))
	switch u {
	case "ns":
		return 1
	case "us", "µs", "μs":
		return 1e3
	case "ms":
		return 1e6
	case "s", "sec":
		return 1e9
	}
	return 0
}

func parseStatsRow(rec []string, c *statsColumns) (trace.KernelStat, error) {
	var k trace.KernelStat
	need := max(c.total, c.name, c.instances)
	if len(rec) <= need {
		return k, fmt.Errorf("%d fields, want at least %d", len(rec), need+1)
	}
	k.Name = rec[c.name]
	if strings.TrimSpace(k.Name) == "" {
		return k, errors.New("empty kernel name")
	}
	total, err := parseNumber(rec[c.total])
	if err != nil {
		return k, fmt.Errorf("total time: %w", err)
	}
	ns := total * c.unitNS
	if ns > maxStatsTotalNS {
		return k, fmt.Errorf("total time %q out of range", rec[c.total])
	}
	k.TimeNS = int64(math.Round(ns))
	if c.instances >= 0 {
		n, err := parseNumber(rec[c.instances])
		if err != nil {
			return k, fmt.Errorf("instances: %w", err)
		}
		if n != math.Trunc(n) || n > maxStatsTotalNS {
			return k, fmt.Errorf("instances %q is not a count", rec[c.instances])
		}
		k.Count = int64(n)
	}
	return k, nil
}

// parseNumber accepts plain or thousands-separated non-negative numbers.
func parseNumber(s string) (float64, error) {
	s = strings.ReplaceAll(strings.TrimSpace(s), ",", "")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a non-negative number", s)
	}
	return v, nil
}
