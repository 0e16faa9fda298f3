package result

import (
	"fmt"
	"strconv"
)

// A stream's token chunks arrive one network read apart when the server
// sends each as it is produced (vLLM flushes every chunk). The load
// generator timestamps each read, so a chunk that came in the same read as
// the one before it has a gap of 0 µs: the two were sent, or forwarded, as
// one burst. When most gaps are such, the inter-token latency the client
// sees is the proxy's, not the server's: ITL is unmeasurable.
const (
	// BurstShare is the share of 0 µs gaps among a run's token gaps at
	// which its ITL is unmeasurable. A direct stream from vLLM or spoc sim
	// serve has next to none (each chunk is its own write, milliseconds
	// apart); a buffering proxy makes nearly all of them 0 (1,090 of 1,090
	// through HAProxy without option http-no-delay). A client so loaded
	// that it reads late sees bursts too (87 % with a dispatch lag p99 of
	// 427 ms against a server streaming a token per millisecond, on 2 busy
	// cores): that run is client-bound already, and below this share its
	// ITL is still reported.
	BurstShare = 0.9
	// BurstMinGaps is the fewest gaps a run needs before it is judged
	// bursty at all.
	BurstMinGaps = 20
)

// StreamReport says whether the run's token timing could be measured.
type StreamReport struct {
	// Gaps counts the gaps between token chunks of successful requests;
	// SameRead those of 0 µs (a chunk read together with the one before).
	Gaps     int64   `json:"token_gaps"`
	SameRead int64   `json:"same_read_gaps"`
	Share    float64 `json:"same_read_share"`
	// ITLUnmeasurable is set when Share ≥ BurstShare over at least
	// BurstMinGaps gaps: the ITL percentiles are the burst pattern's, the
	// SLA's ITL clause is not judged, and Reason names the likely cause.
	ITLUnmeasurable bool   `json:"itl_unmeasurable,omitempty"`
	Reason          string `json:"reason,omitempty"`
}

func (g *group) addStream(r *Record) {
	for _, gap := range r.TokenGapsUS {
		g.gaps++
		if gap == 0 {
			g.sameRead++
		}
	}
}

// stream is the report of the overall group: bursts come from the path
// between client and server, the same for every profile.
func (s *Summary) streamLocked() StreamReport {
	g := s.overall
	st := StreamReport{Gaps: g.gaps, SameRead: g.sameRead}
	if g.gaps > 0 {
		st.Share = float64(g.sameRead) / float64(g.gaps)
	}
	if g.gaps >= BurstMinGaps && st.Share >= BurstShare {
		st.ITLUnmeasurable = true
		st.Reason = fmt.Sprintf("ITL unmeasurable: %s of the %s gaps between token chunks were 0 µs, chunks read in one burst with the chunk before them, which the server does not send (vLLM writes each chunk as it is produced); the likely cause is a proxy between spoc and the server that buffers streamed responses (HAProxy without option http-no-delay, nginx with proxy_buffering on). The ITL clause is not judged; TTFT includes the proxy's delay too",
			fmtPercent(st.Share), strconv.FormatInt(g.gaps, 10))
	}
	return st
}
