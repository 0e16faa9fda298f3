package telemetry

import (
	"sort"
	"sync"
	"time"
)

// Defaults bounding a Store's memory. With the defaults a store holds at most
// DefaultMaxSeries × DefaultMaxPoints points of 16 bytes; a realistic run (one
// vLLM server, one 8-GPU node: about 250 series) needs a few MiB.
const (
	DefaultMaxPoints = 2048
	DefaultMaxSeries = 4096
	DefaultMaxGaps   = 1024
)

// StoreOptions bound a Store. Zero fields take the defaults.
type StoreOptions struct {
	// MaxPoints is the most points one series keeps. When a series is full
	// every other point is dropped and the series keeps one arrival in two
	// from then on, so a long run keeps its whole span at a coarser step;
	// the latest arrival is always kept, so counters' end values are exact.
	MaxPoints int
	// MaxSeries is the most series the store holds; samples of further
	// series are counted in DroppedSeries and otherwise ignored.
	MaxSeries int
	// MaxGaps is the most gaps kept; later ones are only counted.
	MaxGaps int
}

func (o StoreOptions) withDefaults() StoreOptions {
	if o.MaxPoints < 4 {
		o.MaxPoints = DefaultMaxPoints
	}
	if o.MaxSeries <= 0 {
		o.MaxSeries = DefaultMaxSeries
	}
	if o.MaxGaps <= 0 {
		o.MaxGaps = DefaultMaxGaps
	}
	return o
}

// Point is one timestamped value.
type Point struct {
	T time.Time `json:"t"`
	V float64   `json:"v"`
}

// Series is a copy of one stored series: the target it came from, its
// canonical name (histograms with their _bucket/_sum/_count suffix), labels
// and points in time order.
type Series struct {
	Target string            `json:"target"`
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Points []Point           `json:"points"`
}

// Store holds bounded time series from one or more targets. It is safe for
// concurrent use.
type Store struct {
	mu            sync.RWMutex
	opts          StoreOptions
	series        map[string]*series
	order         []*series
	gaps          []Gap
	open          map[string]int // target → index in gaps of its open gap
	droppedSeries int
	droppedGaps   int
}

type series struct {
	target  string
	name    string
	labels  map[string]string
	t       []int64 // unix nanoseconds
	v       []float64
	stride  int // keep one arrival in stride
	skip    int // arrivals since the last kept point
	lastT   int64
	lastV   float64
	hasTail bool // lastT/lastV is newer than the last kept point
	seen    bool // lastT/lastV hold the latest arrival
}

// NewStore returns an empty store with the given bounds.
func NewStore(opts StoreOptions) *Store {
	return &Store{opts: opts.withDefaults(), series: make(map[string]*series), open: make(map[string]int)}
}

// AddScrape records one scrape: its samples when it succeeded, otherwise a gap
// for its target (consecutive failures extend one gap).
func (s *Store) AddScrape(sc Scrape) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc.Error != "" {
		s.addGapLocked(sc)
		return
	}
	delete(s.open, sc.Target)
	s.addLocked(sc.Target, sc.Time, sc.Samples)
}

// Add records samples of one target taken at t, normalising names through the
// catalog; samples of unknown metrics are ignored.
func (s *Store) Add(target string, t time.Time, samples []Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addLocked(target, t, samples)
}

func (s *Store) addLocked(target string, t time.Time, samples []Sample) {
	ts := t.UnixNano()
	for i := range samples {
		name, ok := CanonicalSeriesName(samples[i].Name)
		if !ok || !finite(samples[i].Value) {
			continue
		}
		key := seriesKey(target, name, samples[i].Labels)
		sr := s.series[key]
		if sr == nil {
			if len(s.series) >= s.opts.MaxSeries {
				s.droppedSeries++
				continue
			}
			labels := make(map[string]string, len(samples[i].Labels))
			for k, v := range samples[i].Labels {
				labels[k] = v
			}
			sr = &series{target: target, name: name, labels: labels, stride: 1}
			s.series[key] = sr
			s.order = append(s.order, sr)
		}
		sr.add(ts, samples[i].Value, s.opts.MaxPoints)
	}
}

func (sr *series) add(ts int64, v float64, maxPoints int) {
	if sr.seen && ts <= sr.lastT {
		return // out of order or duplicate: keep the first value seen
	}
	sr.seen = true
	sr.lastT, sr.lastV = ts, v
	sr.skip++
	if sr.skip < sr.stride && len(sr.t) > 0 {
		sr.hasTail = true
		return
	}
	sr.skip = 0
	sr.hasTail = false
	if len(sr.t) >= maxPoints {
		sr.halve()
	}
	sr.t = append(sr.t, ts)
	sr.v = append(sr.v, v)
}

// halve keeps every other point, oldest first, and doubles the stride.
func (sr *series) halve() {
	j := 0
	for i := 0; i < len(sr.t); i += 2 {
		sr.t[j], sr.v[j] = sr.t[i], sr.v[i]
		j++
	}
	sr.t, sr.v = sr.t[:j], sr.v[:j]
	sr.stride *= 2
}

func (sr *series) points() []Point {
	n := len(sr.t)
	if sr.hasTail {
		n++
	}
	out := make([]Point, 0, n)
	for i := range sr.t {
		out = append(out, Point{T: time.Unix(0, sr.t[i]).UTC(), V: sr.v[i]})
	}
	if sr.hasTail {
		out = append(out, Point{T: time.Unix(0, sr.lastT).UTC(), V: sr.lastV})
	}
	return out
}

func (s *Store) addGapLocked(sc Scrape) {
	if i, ok := s.open[sc.Target]; ok {
		g := &s.gaps[i]
		g.End, g.Error = sc.Time, sc.Error
		g.Scrapes++
		return
	}
	if len(s.gaps) >= s.opts.MaxGaps {
		s.droppedGaps++
		return
	}
	s.gaps = append(s.gaps, Gap{Target: sc.Target, Start: sc.Time, End: sc.Time, Scrapes: 1, Error: sc.Error})
	s.open[sc.Target] = len(s.gaps) - 1
}

// Series returns a copy of every series, in order of first appearance.
func (s *Store) Series() []Series {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Series, 0, len(s.order))
	for _, sr := range s.order {
		out = append(out, sr.copy())
	}
	return out
}

func (sr *series) copy() Series {
	labels := make(map[string]string, len(sr.labels))
	for k, v := range sr.labels {
		labels[k] = v
	}
	return Series{Target: sr.target, Name: sr.name, Labels: labels, Points: sr.points()}
}

// Gaps returns the recorded gaps in time order.
func (s *Store) Gaps() []Gap {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := append([]Gap(nil), s.gaps...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// Dropped reports how many series and gaps were not kept because the store
// was full.
func (s *Store) Dropped() (seriesCount, gaps int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.droppedSeries, s.droppedGaps
}

// byName returns copies of the series with a canonical name, for derivation.
func (s *Store) byName(names ...string) []Series {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Series
	for _, sr := range s.order {
		for _, n := range names {
			if sr.name == n {
				out = append(out, sr.copy())
				break
			}
		}
	}
	return out
}
