package telemetry

import (
	"math"
	"sort"
	"strconv"
)

// Bucket is one cumulative histogram bucket: the count of observations less
// than or equal to UpperBound.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// HistogramQuantile estimates the q-quantile (0 ≤ q ≤ 1) of cumulative
// buckets with the semantics of PromQL's histogram_quantile: observations are
// assumed spread linearly inside a bucket, the lowest bucket starts at 0 when
// its bound is positive, and a rank falling in the +Inf bucket returns the
// highest finite bound. It returns NaN when there is no +Inf bucket or no
// observation, and ±Inf for q outside [0, 1].
func HistogramQuantile(q float64, buckets []Bucket) float64 {
	if math.IsNaN(q) {
		return math.NaN()
	}
	if q < 0 {
		return math.Inf(-1)
	}
	if q > 1 {
		return math.Inf(1)
	}
	b := append([]Bucket(nil), buckets...)
	sort.Slice(b, func(i, j int) bool { return b[i].UpperBound < b[j].UpperBound })
	b = coalesce(b)
	if len(b) < 2 || !math.IsInf(b[len(b)-1].UpperBound, 1) {
		return math.NaN()
	}
	// Counts taken from independent series (or across a counter reset) may
	// not be monotonic; PromQL repairs that the same way.
	for i := 1; i < len(b); i++ {
		if b[i].Count < b[i-1].Count {
			b[i].Count = b[i-1].Count
		}
	}
	total := b[len(b)-1].Count
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	i := sort.Search(len(b)-1, func(i int) bool { return b[i].Count >= rank })
	if i == len(b)-1 {
		return b[len(b)-2].UpperBound
	}
	if i == 0 && b[0].UpperBound <= 0 {
		return b[0].UpperBound
	}
	start, end := 0.0, b[i].UpperBound
	count := b[i].Count
	if i > 0 {
		start = b[i-1].UpperBound
		count -= b[i-1].Count
		rank -= b[i-1].Count
	}
	if count == 0 {
		return end
	}
	return start + (end-start)*(rank/count)
}

// coalesce merges buckets with equal bounds (written differently, like "1"
// and "1.0", by different exporters) by adding their counts.
func coalesce(b []Bucket) []Bucket {
	out := b[:0]
	for _, x := range b {
		if n := len(out); n > 0 && out[n-1].UpperBound == x.UpperBound {
			out[n-1].Count += x.Count
			continue
		}
		out = append(out, x)
	}
	return out
}

// parseLe reads a bucket's "le" label.
func parseLe(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}
