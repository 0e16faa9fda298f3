package telemetry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// JSONLWriter writes scrapes as JSON lines, the telemetry.jsonl format: one
// object per scrape of one target, with its samples or its error. Each line
// goes to the underlying writer in one Write, so a reader never sees half a
// line from a live run. It is safe for concurrent use.
type JSONLWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
	enc *json.Encoder
}

// NewJSONLWriter returns a writer of telemetry.jsonl lines to w.
func NewJSONLWriter(w io.Writer) *JSONLWriter {
	j := &JSONLWriter{w: w}
	j.enc = json.NewEncoder(&j.buf)
	return j
}

// Write appends one scrape as a line.
func (j *JSONLWriter) Write(sc *Scrape) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf.Reset()
	if err := j.enc.Encode(sc); err != nil {
		return fmt.Errorf("encode scrape of %q: %w", sc.Target, err)
	}
	if _, err := j.w.Write(j.buf.Bytes()); err != nil {
		return fmt.Errorf("write telemetry line: %w", err)
	}
	return nil
}

// MaxJSONLLine bounds one line of telemetry.jsonl when reading.
const MaxJSONLLine = 64 << 20

// ReadJSONL reads a telemetry.jsonl stream into a new Store, so signals can be
// derived again after the run (by the report, for instance). Errors name the
// line.
func ReadJSONL(r io.Reader, opts StoreOptions) (*Store, error) {
	st := NewStore(opts)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxJSONLLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var s Scrape
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("telemetry.jsonl line %d: %w", line, err)
		}
		if s.Target == "" {
			return nil, fmt.Errorf("telemetry.jsonl line %d: missing target", line)
		}
		if s.Time.IsZero() {
			return nil, fmt.Errorf("telemetry.jsonl line %d: missing time", line)
		}
		st.AddScrape(s)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("telemetry.jsonl line %d: longer than %d bytes", line+1, MaxJSONLLine)
		}
		return nil, fmt.Errorf("read telemetry.jsonl after line %d: %w", line, err)
	}
	return st, nil
}
