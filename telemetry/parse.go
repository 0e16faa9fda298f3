package telemetry

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

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
	return parse(r, format, MaxExpositionBytes)
}

func parse(r io.Reader, format expfmt.Format, limit int64) ([]Sample, error) {
	lr := &io.LimitedReader{R: r, N: limit + 1}
	dec := expfmt.NewDecoder(lr, format)
	var out []Sample
	for {
		var mf dto.MetricFamily
		err := dec.Decode(&mf)
		if errors.Is(err, io.EOF) {
			break
		}
		if lr.N <= 0 {
			return nil, ErrExpositionTooLarge
		}
		if err != nil {
			return nil, fmt.Errorf("parse exposition: %w", err)
		}
		out = appendFamily(out, &mf)
	}
	if lr.N <= 0 {
		return nil, ErrExpositionTooLarge
	}
	return dropShadowedAliases(out), nil
}

// appendFamily flattens the catalog part of one metric family into samples.
func appendFamily(out []Sample, mf *dto.MetricFamily) []Sample {
	name := mf.GetName()
	for _, m := range mf.GetMetric() {
		switch {
		case m.GetHistogram() != nil:
			if _, _, _, ok := Lookup(name + SuffixBucket); !ok {
				continue
			}
			out = appendHistogram(out, name, m)
		case m.GetCounter() != nil:
			out = appendValue(out, name, m, m.GetCounter().GetValue())
		case m.GetGauge() != nil:
			out = appendValue(out, name, m, m.GetGauge().GetValue())
		case m.GetUntyped() != nil:
			out = appendValue(out, name, m, m.GetUntyped().GetValue())
		}
	}
	return out
}

func appendValue(out []Sample, name string, m *dto.Metric, v float64) []Sample {
	if _, _, _, ok := Lookup(name); !ok || !finite(v) {
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
