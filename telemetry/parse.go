package telemetry

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// MaxExpositionBytes bounds how much of one response Parse reads: a vLLM
// server with many models or a node with many GPUs stays far below it, while a
// misconfigured target cannot exhaust memory.
const MaxExpositionBytes = 32 << 20

// ErrExpositionTooLarge reports a response over MaxExpositionBytes.
var ErrExpositionTooLarge = errors.New("exposition larger than 32 MiB")

// TextFormat is the Prometheus text exposition format, the one vLLM and
// dcgm-exporter serve by default.
var TextFormat = expfmt.NewFormat(expfmt.TypeTextPlain)

// Parse reads one exposition in the given format (TextFormat, OpenMetrics or
// delimited protobuf; an unknown format is read as text) and returns the
// samples of catalog metrics, histograms flattened into their _bucket, _sum and
// _count series the way Prometheus stores them. Metrics outside the catalog,
// non-finite values and exposition timestamps are dropped; a metric exposed
// under both its current and an older name keeps the current one only.
func Parse(r io.Reader, format expfmt.Format) ([]Sample, error) {
	return parse(r, format, MaxExpositionBytes, byName)
}

// ParseServer is Parse for a server that names its engine metrics its own
// way (Target.Metrics): the names metrics maps by role and DCGM's are
// read, and their samples are named as the catalog names them
// (vllm:num_requests_running for the role running), so that the store
// and the signals read them as they read vLLM's. An unknown role is an
// error.
func ParseServer(r io.Reader, format expfmt.Format, metrics map[string]string) ([]Sample, error) {
	n, err := serverNames(metrics)
	if err != nil {
		return nil, err
	}
	return parse(r, format, MaxExpositionBytes, n)
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func parse(r io.Reader, format expfmt.Format, limit int64, n nameIndex) ([]Sample, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 4<<20 {
			buf.Reset()
			bufPool.Put(buf)
		}
	}()
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(r, limit+1)); err != nil {
		return nil, fmt.Errorf("read exposition: %w", err)
	}
	if int64(buf.Len()) > limit {
		return nil, ErrExpositionTooLarge
	}
	in := buf.Bytes()
	ft := format.FormatType()
	if ft != expfmt.TypeOpenMetrics && ft != expfmt.TypeProtoDelim {
		in = keepCatalogLines(in, n)
	}
	dec := expfmt.NewDecoder(bytes.NewReader(in), format)
	var out []Sample
	for {
		var mf dto.MetricFamily
		err := dec.Decode(&mf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parse exposition: %w", err)
		}
		out = appendFamily(out, &mf, n)
	}
	if n.server {
		// a server's own names: stored under the catalog's
		for i := range out {
			e, _ := n.lookup(out[i].Name)
			out[i].Name = e.metric.Name + e.suffix
		}
	}
	return dropShadowedAliases(out), nil
}

// keepCatalogLines compacts a text exposition in place to the lines expfmt
// needs: samples, HELP and TYPE lines of catalog metrics, and every line it
// cannot classify (so that garbage still fails the parse). A real vLLM
// exposition is mostly other metrics; skipping them before the parser cuts
// the scrape's CPU cost several times.
func keepCatalogLines(in []byte, n nameIndex) []byte {
	out := in[:0]
	for len(in) > 0 {
		line := in
		next := len(in)
		if i := bytes.IndexByte(in, '\n'); i >= 0 {
			line, next = in[:i], i+1
		}
		if keepLine(line, n) {
			out = append(out, in[:next]...)
		}
		in = in[next:]
	}
	return out
}

func keepLine(line []byte, n nameIndex) bool {
	l := bytes.TrimLeft(line, " \t")
	if len(l) == 0 {
		return false
	}
	if l[0] == '#' {
		f := bytes.Fields(l[1:])
		if len(f) < 2 || (string(f[0]) != "HELP" && string(f[0]) != "TYPE") {
			return false // a plain comment
		}
		return !validName(f[1]) || known(f[1], n)
	}
	end := bytes.IndexAny(l, "{ \t")
	if end < 0 {
		end = len(l)
	}
	name := l[:end]
	return !validName(name) || known(name, n)
}

func known(b []byte, n nameIndex) bool {
	_, ok := n.lookup(string(b))
	return ok
}

// validName reports whether b is a classic metric name; lines whose name is
// not (quoted UTF-8 names, garbage) are left to the parser.
func validName(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for i, c := range b {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// appendFamily flattens the catalog part of one metric family into samples.
func appendFamily(out []Sample, mf *dto.MetricFamily, n nameIndex) []Sample {
	name := mf.GetName()
	for _, m := range mf.GetMetric() {
		switch {
		case m.GetHistogram() != nil:
			if _, ok := n.lookup(name + SuffixBucket); !ok {
				continue
			}
			out = appendHistogram(out, name, m)
		case m.GetCounter() != nil:
			out = appendValue(out, name, m, m.GetCounter().GetValue(), n)
		case m.GetGauge() != nil:
			out = appendValue(out, name, m, m.GetGauge().GetValue(), n)
		case m.GetUntyped() != nil:
			out = appendValue(out, name, m, m.GetUntyped().GetValue(), n)
		}
	}
	return out
}

func appendValue(out []Sample, name string, m *dto.Metric, v float64, n nameIndex) []Sample {
	if _, ok := n.lookup(name); !ok || !finite(v) {
		return out
	}
	return append(out, Sample{Name: name, Labels: labelMap(m, 0), Value: v})
}

func appendHistogram(out []Sample, name string, m *dto.Metric) []Sample {
	h := m.GetHistogram()
	count := float64(h.GetSampleCount())
	if h.SampleCountFloat != nil {
		count = h.GetSampleCountFloat()
	}
	sawInf := false
	for _, b := range h.GetBucket() {
		ub := b.GetUpperBound()
		c := float64(b.GetCumulativeCount())
		if b.CumulativeCountFloat != nil {
			c = b.GetCumulativeCountFloat()
		}
		if math.IsNaN(ub) || !finite(c) {
			continue
		}
		sawInf = sawInf || math.IsInf(ub, 1)
		l := labelMap(m, 1)
		l["le"] = formatLe(ub)
		out = append(out, Sample{Name: name + SuffixBucket, Labels: l, Value: c})
	}
	if !sawInf && finite(count) {
		l := labelMap(m, 1)
		l["le"] = "+Inf"
		out = append(out, Sample{Name: name + SuffixBucket, Labels: l, Value: count})
	}
	if s := h.GetSampleSum(); finite(s) {
		out = append(out, Sample{Name: name + SuffixSum, Labels: labelMap(m, 0), Value: s})
	}
	if finite(count) {
		out = append(out, Sample{Name: name + SuffixCount, Labels: labelMap(m, 0), Value: count})
	}
	return out
}

func labelMap(m *dto.Metric, extra int) map[string]string {
	l := make(map[string]string, len(m.GetLabel())+extra)
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// formatLe writes a bucket bound the way Prometheus client libraries do.
func formatLe(ub float64) string {
	if math.IsInf(ub, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(ub, 'g', -1, 64)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
