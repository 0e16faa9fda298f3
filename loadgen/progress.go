package loadgen

import (
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spoc-project/spoc/result"
)

// progressWindow is how far back the rolling percentiles look (between one
// and two windows, as two histograms rotate).
const progressWindow = 10 * time.Second

// Progress is a live view of a run for a terminal display.
type Progress struct {
	// Scheduled counts requests scheduled so far; Requests those finished
	// (records written), Errors the failed ones among them.
	Scheduled int64 `json:"scheduled"`
	Requests  int64 `json:"requests"`
	Errors    int64 `json:"errors"`
	Cancelled int64 `json:"cancelled"`
	// ActiveUsers counts users past their ramp slot and not yet finished;
	// InFlight the requests on the wire (users waiting for a reply).
	ActiveUsers int64 `json:"active_users"`
	InFlight    int64 `json:"in_flight"`
	// TTFTp95 and ITLp95 cover roughly the last 10-20 seconds.
	TTFTp95 time.Duration `json:"ttft_p95"`
	ITLp95  time.Duration `json:"itl_p95"`
}

type progress struct {
	scheduledN, inFlight, active atomic.Int64

	mu                   sync.Mutex
	requests, errs, canc int64
	rotated              time.Time
	ttft, itl            [2]*hdr.Histogram // [current, previous]
}

func newProgress() *progress {
	p := &progress{rotated: time.Now()}
	for i := range 2 {
		p.ttft[i] = hdr.New(1, int64(time.Hour/time.Microsecond), 2)
		p.itl[i] = hdr.New(1, int64(time.Hour/time.Microsecond), 2)
	}
	return p
}

func (p *progress) scheduled() { p.scheduledN.Add(1) }
func (p *progress) started()   { p.inFlight.Add(1) }
func (p *progress) finished()  { p.inFlight.Add(-1) }

func clampUS(d time.Duration) int64 {
	return max(1, min(int64(d/time.Microsecond), int64(time.Hour/time.Microsecond)))
}

func (p *progress) observe(r *result.Record) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rotate(time.Now())
	p.requests++
	switch r.Status {
	case result.StatusOK:
		if ttft, ok := r.TTFT(); ok {
			_ = p.ttft[0].RecordValue(clampUS(ttft))
		}
		for i, g := range r.TokenGapsUS { // per token, as result.Summary counts ITL
			n := r.ChunkTokens(i)
			_ = p.itl[0].RecordValues(clampUS(time.Duration(g/int64(n))*time.Microsecond), int64(n))
		}
	case result.StatusCancelled:
		p.canc++
	default:
		p.errs++
	}
}

func (p *progress) rotate(now time.Time) {
	if now.Sub(p.rotated) < progressWindow {
		return
	}
	p.rotated = now
	for _, h := range []*[2]*hdr.Histogram{&p.ttft, &p.itl} {
		h[0], h[1] = h[1], h[0]
		h[0].Reset()
	}
}

func (p *progress) snapshot() Progress {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rotate(time.Now())
	pr := Progress{
		Scheduled: p.scheduledN.Load(), InFlight: p.inFlight.Load(), ActiveUsers: p.active.Load(),
		Requests: p.requests, Errors: p.errs, Cancelled: p.canc,
	}
	pr.TTFTp95 = p95(p.ttft)
	pr.ITLp95 = p95(p.itl)
	return pr
}

func p95(h [2]*hdr.Histogram) time.Duration {
	m := h[0].Clone()
	m.Merge(h[1])
	if m.TotalCount() == 0 {
		return 0
	}
	return time.Duration(m.ValueAtPercentile(95)) * time.Microsecond
}
