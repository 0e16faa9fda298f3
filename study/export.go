package study

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/spoc-project/spoc/search"
)

// Format is an export format.
type Format string

// Export formats.
const (
	CSV  Format = "csv"
	JSON Format = "json"
)

// ParseFormat accepts "csv" or "json".
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case CSV, JSON:
		return Format(s), nil
	}
	return "", fmt.Errorf("unknown export format %q (want csv or json)", s)
}

// pandasTime is how pandas prints a datetime64 column in CSV.
const pandasTime = "2006-01-02 15:04:05.000000"

// Columns returns the export's column names in Optuna's trials_dataframe
// order: number, value (one objective) or values_0…, datetime_start,
// datetime_complete, duration, params_<name>…, user_attrs_<key>…,
// system_attrs_<key>… (generation included), constraints, state. Parameter
// and attribute columns are the sorted union over trials.
func Columns(directions []search.Direction, trials []search.Trial) []string {
	cols := []string{"number"}
	if len(directions) == 1 {
		cols = append(cols, "value")
	} else {
		for i := range directions {
			cols = append(cols, "values_"+strconv.Itoa(i))
		}
	}
	cols = append(cols, "datetime_start", "datetime_complete", "duration")
	params, uattrs, sattrs := map[string]bool{}, map[string]bool{}, map[string]bool{"generation": true}
	for _, t := range trials {
		for k := range t.Params {
			params[k] = true
		}
		for k := range t.UserAttrs {
			uattrs[k] = true
		}
		for k := range t.SystemAttrs {
			sattrs[k] = true
		}
	}
	cols = append(cols, prefixed("params_", params)...)
	cols = append(cols, prefixed("user_attrs_", uattrs)...)
	cols = append(cols, prefixed("system_attrs_", sattrs)...)
	return append(cols, "constraints", "state")
}

func prefixed(prefix string, set map[string]bool) []string {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = prefix + k
	}
	return keys
}

// row returns one trial's typed cell values by column; nil means missing.
func row(directions []search.Direction, t search.Trial) map[string]any {
	r := map[string]any{"number": t.Number, "state": string(t.State), "system_attrs_generation": t.Generation}
	if len(t.Values) == len(directions) {
		if len(directions) == 1 {
			r["value"] = t.Values[0]
		} else {
			for i, v := range t.Values {
				r["values_"+strconv.Itoa(i)] = v
			}
		}
	}
	if !t.Start.IsZero() {
		r["datetime_start"] = t.Start
	}
	if !t.Complete.IsZero() {
		r["datetime_complete"] = t.Complete
		r["duration"] = t.Duration()
	}
	for k, v := range t.Params {
		r["params_"+k] = v
	}
	for k, v := range t.UserAttrs {
		r["user_attrs_"+k] = v
	}
	for k, v := range t.SystemAttrs {
		r["system_attrs_"+k] = v
	}
	if t.Constraints != nil {
		r["constraints"] = t.Constraints
	}
	return r
}

// Export writes trials as an Optuna-style trials dataframe. CSV cells are
// formatted the way pandas writes them (datetimes "2006-01-02
// 15:04:05.000000" UTC, durations "0 days 00:00:01.500000", booleans
// True/False, lists as JSON) so pandas.read_csv loads them; JSON is an
// array of records with the same keys, datetimes in RFC 3339 and durations
// in seconds.
func Export(w io.Writer, f Format, directions []search.Direction, trials []search.Trial) error {
	cols := Columns(directions, trials)
	switch f {
	case CSV:
		cw := csv.NewWriter(w)
		if err := cw.Write(cols); err != nil {
			return fmt.Errorf("export trials: %w", err)
		}
		rec := make([]string, len(cols))
		for _, t := range trials {
			r := row(directions, t)
			for i, c := range cols {
				rec[i] = csvCell(r[c])
			}
			if err := cw.Write(rec); err != nil {
				return fmt.Errorf("export trials: %w", err)
			}
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return fmt.Errorf("export trials: %w", err)
		}
		return nil
	case JSON:
		out := make([]orderedRecord, len(trials))
		for i, t := range trials {
			out[i] = orderedRecord{cols: cols, values: row(directions, t)}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("export trials: %w", err)
		}
		return nil
	}
	return fmt.Errorf("export trials: unknown format %q", f)
}

func csvCell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Time:
		return x.UTC().Format(pandasTime)
	case time.Duration:
		return pandasDuration(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// pandasDuration formats d like pandas' Timedelta: "1 days 02:03:04.500000".
func pandasDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	d -= m * time.Minute
	s := d / time.Second
	d -= s * time.Second
	out := fmt.Sprintf("%d days %02d:%02d:%02d.%06d", days, h, m, s, d/time.Microsecond)
	if neg {
		out = "-" + out
	}
	return out
}

// orderedRecord encodes one record with keys in column order and missing
// cells as null.
type orderedRecord struct {
	cols   []string
	values map[string]any
}

func (o orderedRecord) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, c := range o.cols {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(c)
		b = append(b, k...)
		b = append(b, ':')
		var v any = o.values[c]
		switch x := v.(type) {
		case time.Time:
			v = x.UTC().Format(time.RFC3339Nano)
		case time.Duration:
			v = x.Seconds()
		}
		vb, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c, err)
		}
		b = append(b, vb...)
	}
	return append(b, '}'), nil
}
