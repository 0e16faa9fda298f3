package result

import (
	"math"
	"slices"
	"time"
)

// Attainment measures how much of a long run met the SLA: the share of
// requests that did (each judged as goodput judges it: ok, TTFT, TPOT and
// E2E within their limits, its own gaps' ITL percentile within the ITL
// limit) and the share of minutes (bins) whose requests met it together
// (the clause percentiles of the bin's TTFTs and of its requests' ITLs
// within their limits, its error rate at most the limit) — per profile
// and overall. A bin without requests misses nothing. Records are binned by
// their scheduled time; warm-up records and those outside the window are
// left out. A request the window's end cut off (cancelled) is judged not
// good but is no error: its TTFT counts when it had a first token, or when
// it had waited past the TTFT limit without one (Record.CutOffWait), and
// its gaps do not. It keeps two float32 per request, so a simulated day of a
// million requests holds 8 MB.
type Attainment struct {
	judge  *Summary
	window Window
	bin    time.Duration
	bins   map[string][]*attainBin // profile → bins; "" overall
}

type attainBin struct {
	n, good, errs int
	ttft, itl     []float32 // seconds
}

// NewAttainment returns an Attainment of sla over w (which must have both
// ends) in bins of the given width (0: one minute).
func NewAttainment(sla SLA, w Window, bin time.Duration) *Attainment {
	if bin <= 0 {
		bin = time.Minute
	}
	return &Attainment{judge: NewSummary(sla, w), window: w, bin: bin, bins: map[string][]*attainBin{}}
}

// BorrowsRecords says an Attainment keeps nothing of a record once added:
// it keeps its TTFT and ITL (Borrower).
func (a *Attainment) BorrowsRecords() {}

// Write adds r.
func (a *Attainment) Write(r *Record) error {
	if r.Warmup || !a.window.Contains(r.Scheduled) {
		return nil
	}
	k := int(r.Scheduled.Sub(a.window.Start) / a.bin)
	scopes := []string{""}
	if r.Profile != "" {
		scopes = append(scopes, r.Profile)
	}
	var good bool
	var ttft, itl time.Duration
	okTTFT, okITL := false, false
	cut := r.Status == StatusCancelled // by the window's end: censored, not failed
	switch {
	case r.Status == StatusOK:
		ttft, okTTFT = r.TTFT()
		itl, okITL = a.requestITL(r)
		if c := a.judge.sla.ITL; c.Max > 0 && c.Percentile > 0 && okITL {
			// the ITL clause judges the percentile just taken: once
			good = a.judge.goodButITL(r) && itl <= c.Max
		} else {
			good, _ = a.judge.isGood(r)
		}
	case cut && !r.FirstToken.IsZero():
		ttft, okTTFT = r.TTFT() // its stream was cut, so its gaps are not all there
	case cut:
		// without a first token: a TTFT of at least its wait, known to
		// miss when that is past the limit (as the summary's exceedance
		// counts it), unknown otherwise
		if w, _ := r.CutOffWait(); a.judge.sla.TTFT.Max > 0 && w > a.judge.sla.TTFT.Max {
			ttft, okTTFT = w, true
		}
	}
	for _, p := range scopes {
		b := a.binOf(p, k)
		b.n++
		if r.Status != StatusOK && !cut {
			b.errs++
			continue
		}
		if good {
			b.good++
		}
		if okTTFT {
			b.ttft = append(b.ttft, float32(ttft.Seconds()))
		}
		if okITL {
			b.itl = append(b.itl, float32(itl.Seconds()))
		}
	}
	return nil
}

// requestITL is r's gaps at the ITL clause's percentile.
func (a *Attainment) requestITL(r *Record) (time.Duration, bool) {
	if len(r.TokenGapsUS) == 0 {
		return 0, false
	}
	pct := a.judge.sla.ITL.Percentile
	if pct <= 0 {
		pct = 95
	}
	return a.judge.requestITL(r, pct), true
}

func (a *Attainment) binOf(profile string, k int) *attainBin {
	bs := a.bins[profile]
	for len(bs) <= k {
		bs = append(bs, nil)
	}
	if bs[k] == nil {
		bs[k] = &attainBin{}
	}
	a.bins[profile] = bs
	return bs[k]
}

// AttainmentRow is one profile's (or the overall) attainment.
type AttainmentRow struct {
	Profile string `json:"profile"`
	// Requests counts the requests judged; RequestShare the fraction that
	// met the SLA.
	Requests     int     `json:"requests"`
	RequestShare float64 `json:"request_share"`
	// Minutes counts the bins of the window; MinuteShare the fraction
	// within the SLA.
	Minutes     int     `json:"minutes"`
	MinuteShare float64 `json:"minute_share"`
}

// AttainmentBin is one bin of the overall series.
type AttainmentBin struct {
	// Start is the bin's start in seconds since the window's start.
	Start    float64 `json:"start_s"`
	Requests int     `json:"requests"`
	// TTFT and ITL are the bin's values at the SLA clauses' percentiles
	// (seconds; 0 without samples).
	TTFT float64 `json:"ttft_s"`
	ITL  float64 `json:"itl_s"`
	// Within says the bin met the SLA.
	Within bool `json:"within_sla"`
}

// Rows returns the overall row first, then one per profile by name.
func (a *Attainment) Rows() []AttainmentRow {
	minutes := int(math.Ceil(float64(a.window.End.Sub(a.window.Start)) / float64(a.bin)))
	names := make([]string, 0, len(a.bins))
	for p := range a.bins {
		if p != "" {
			names = append(names, p)
		}
	}
	slices.Sort(names)
	rows := []AttainmentRow{a.row("", minutes)}
	for _, p := range names {
		rows = append(rows, a.row(p, minutes))
	}
	rows[0].Profile = "overall"
	return rows
}

func (a *Attainment) row(profile string, minutes int) AttainmentRow {
	r := AttainmentRow{Profile: profile, Minutes: minutes}
	good, within := 0, 0
	bs := a.bins[profile]
	for k := range minutes {
		if k < len(bs) && bs[k] != nil {
			r.Requests += bs[k].n
			good += bs[k].good
		}
		if a.withinAt(profile, k) {
			within++
		}
	}
	if r.Requests > 0 {
		r.RequestShare = float64(good) / float64(r.Requests)
	}
	if minutes > 0 {
		r.MinuteShare = float64(within) / float64(minutes)
	}
	return r
}

// Series returns the overall bins, every bin of the window.
func (a *Attainment) Series() []AttainmentBin {
	minutes := int(math.Ceil(float64(a.window.End.Sub(a.window.Start)) / float64(a.bin)))
	bs := a.bins[""]
	out := make([]AttainmentBin, minutes)
	for k := range out {
		out[k] = AttainmentBin{Start: (time.Duration(k) * a.bin).Seconds(), Within: true}
		if k >= len(bs) || bs[k] == nil {
			continue
		}
		b := bs[k]
		out[k].Requests = b.n
		out[k].TTFT = quantile32(b.ttft, a.judge.sla.TTFT.Percentile)
		out[k].ITL = quantile32(b.itl, a.judge.sla.ITL.Percentile)
		out[k].Within = a.withinAt("", k)
	}
	return out
}

// withinAt reports whether bin k of profile ("" overall) met the SLA;
// under a per-profile SLA the overall bin meets it when every profile's
// does.
func (a *Attainment) withinAt(profile string, k int) bool {
	if profile == "" && a.judge.sla.Scope == SLAScopePerProfile {
		for p := range a.bins {
			if p != "" && !a.withinAt(p, k) {
				return false
			}
		}
		return true
	}
	bs := a.bins[profile]
	if k >= len(bs) || bs[k] == nil {
		return true
	}
	return a.within(bs[k])
}

// within reports whether a bin's requests met the SLA together.
func (a *Attainment) within(b *attainBin) bool {
	sla := a.judge.sla
	if b.n > 0 && float64(b.errs)/float64(b.n) > sla.MaxErrorRate {
		return false
	}
	if c := sla.TTFT; c.Max > 0 && len(b.ttft) > 0 && quantile32(b.ttft, c.Percentile) > c.Max.Seconds() {
		return false
	}
	if c := sla.ITL; c.Max > 0 && len(b.itl) > 0 && quantile32(b.itl, c.Percentile) > c.Max.Seconds() {
		return false
	}
	return true
}

// quantile32 is the p-th percentile (nearest rank) of xs, which it sorts.
func quantile32(xs []float32, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	if p <= 0 {
		p = 95
	}
	slices.Sort(xs)
	idx := max(0, min(int(math.Ceil(p/100*float64(len(xs))))-1, len(xs)-1))
	return float64(xs[idx])
}
