package result

import "time"

// Status classifies how a request ended.
type Status string

// Request outcomes. Every scheduled request ends in exactly one of them, so
// ok + errors + cancelled = scheduled.
const (
	StatusOK          Status = "ok"
	StatusHTTPError   Status = "http_error"
	StatusTimeout     Status = "timeout"
	StatusStreamError Status = "stream_error"
	StatusCancelled   Status = "cancelled"
)

// Record is one request as the client (or the simulator, in virtual time) saw
// it. Times are absolute; latencies are derived from the scheduled send time so
// that queueing in front of the server is never hidden (no coordinated
// omission). One Record is one JSON line.
type Record struct {
	RunID   string `json:"run_id"`
	User    int    `json:"user"`
	Session int    `json:"session"`
	Profile string `json:"profile"`
	Turn    int    `json:"turn"`
	// Shard is the client process (or pod) that sent the request when a
	// run is split over several (run.clients); 0 for a single client.
	Shard int `json:"shard,omitempty"`
	// RequestID identifies the request to the server (sent as X-Request-Id)
	// so that client and server logs can be joined; empty when unknown.
	RequestID string `json:"request_id,omitempty"`
	// Warmup marks a request scheduled before the measured window; summaries
	// exclude it when they are not given the window explicitly.
	Warmup bool `json:"warmup,omitempty"`

	// Scheduled is when the request was due (previous reply + think time, or
	// the ramp slot for a user's first request).
	Scheduled time.Time `json:"scheduled"`
	// Sent is when the request bytes started going out; Sent-Scheduled is the
	// client's dispatch lag. Zero when the run stopped before it was sent.
	Sent time.Time `json:"sent,omitzero"`
	// FirstToken is when the first content chunk was read; zero if none.
	FirstToken time.Time `json:"first_token,omitzero"`
	// Done is when the response ended (or failed).
	Done time.Time `json:"done"`

	// TokenGapsUS are the gaps in microseconds between consecutive token
	// chunks (content or reasoning) after the first; TokenCounts, when
	// present, gives the number of tokens each chunk after the first carried
	// (1 if absent). Summaries spread a chunk's gap evenly over its tokens,
	// so ITL is per token (see ChunkTokens).
	TokenGapsUS []int64 `json:"token_gaps_us,omitempty"`
	TokenCounts []int   `json:"token_counts,omitempty"`

	PromptTokensTarget int `json:"prompt_tokens_target"`
	PromptTokens       int `json:"prompt_tokens"`           // server-reported; 0 if unknown
	CachedTokens       int `json:"cached_tokens,omitempty"` // server-reported prefix-cache hits
	OutputTokens       int `json:"output_tokens"`
	MaxTokens          int `json:"max_tokens,omitempty"`
	// ReasoningTokens counts the output tokens streamed as reasoning
	// (delta.reasoning or delta.reasoning_content) rather than content; they
	// are part of OutputTokens. Whether they reach the next turn's prompt
	// depends on the runner's history policy and on the server's template.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`

	Status Status `json:"status"`
	Error  string `json:"error,omitempty"`
	// HTTPStatus is the response code when one was received.
	HTTPStatus int `json:"http_status,omitempty"`
}

// TTFT is the time from the scheduled send to the first content token; false
// when no token arrived.
func (r *Record) TTFT() (time.Duration, bool) {
	if r.FirstToken.IsZero() {
		return 0, false
	}
	return r.FirstToken.Sub(r.Scheduled), true
}

// CutOffWait is how long a request the window's end cut off before its
// first token had waited (from its scheduled send): a lower bound of its
// TTFT and E2E. ok is false for any other record.
func (r *Record) CutOffWait() (waited time.Duration, ok bool) {
	if r.Status != StatusCancelled || !r.FirstToken.IsZero() {
		return 0, false
	}
	return r.Done.Sub(r.Scheduled), true
}

// E2E is the time from the scheduled send to the end of the response.
func (r *Record) E2E() time.Duration { return r.Done.Sub(r.Scheduled) }

// DispatchLag is how late the client sent the request.
func (r *Record) DispatchLag() time.Duration { return r.Sent.Sub(r.Scheduled) }

// TPOT is (E2E-TTFT)/(output tokens-1); false with fewer than two tokens.
func (r *Record) TPOT() (time.Duration, bool) {
	ttft, ok := r.TTFT()
	if !ok || r.OutputTokens < 2 {
		return 0, false
	}
	return (r.E2E() - ttft) / time.Duration(r.OutputTokens-1), true
}

// ChunkTokens is the number of tokens carried by the chunk that ended gap i
// of TokenGapsUS: TokenCounts[i], or 1 when it is absent or not positive.
func (r *Record) ChunkTokens(i int) int {
	if i < len(r.TokenCounts) && r.TokenCounts[i] > 0 {
		return r.TokenCounts[i]
	}
	return 1
}

// Sink consumes records as a run produces them.
type Sink interface {
	Write(*Record) error
}

// Borrower is a Sink that only borrows each record: it reads the record
// while its Write runs and keeps neither it nor any of its slices after
// Write returns, so the producer may reuse them for its next record. A
// producer that does (a simulated day writes 4 GB of token gaps) checks
// Borrows first; any other Sink keeps every record it is given.
type Borrower interface {
	Sink
	// BorrowsRecords marks the contract; it does nothing.
	BorrowsRecords()
}

// Borrows reports whether s only borrows the records written to it.
func Borrows(s Sink) bool {
	_, ok := s.(Borrower)
	return ok
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(*Record) error

// Write calls f(r).
func (f SinkFunc) Write(r *Record) error { return f(r) }
