package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/workload"
)

// Request timeouts used when Options leaves them zero.
const (
	DefaultRequestTimeout   = 10 * time.Minute
	DefaultFirstByteTimeout = 5 * time.Minute
)

var (
	errFirstByteTimeout = errors.New("first byte timeout")
	errRequestTimeout   = errors.New("request timeout")
)

// NewTransport returns an HTTP/1.1 transport tuned for many long streams to
// one host: an idle connection kept per user, keep-alive, no compression
// (which would buffer the stream), large buffers, and no HTTP/2 (one stream
// per connection, so one slow stream cannot stall another's frames). Go's
// transport never retries a POST, so there are no hidden retries.
func NewTransport(users int) *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          users + 16,
		MaxIdleConnsPerHost:   users + 16,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		WriteBufferSize:       64 << 10,
		ReadBufferSize:        64 << 10,
		ExpectContinueTimeout: 0,
	}
}

// client sends one streaming request and fills its record.
type client struct {
	http             *http.Client
	url              string
	apiKey           string
	sessionHeader    string // sent with workload.SessionKey(sessionKey, user, session)
	sessionKey       string
	firstByteTimeout time.Duration
	requestTimeout   time.Duration
	cookies          sessionCookies
}

// sessionCookies are the cookies the server (or the router in front of it)
// set, kept per session key (fleet.session_key: the user, or the user's
// session) and sent back on that key's later requests, as each user's own
// client would. A router that pins sessions with a cookie rather than a
// header then sees live sessions as they are: llm-d's session-affinity
// scorer sets llm-d-session on a reply and routes the next request that
// carries it to the same pod (docs/fleet.md). Nothing is kept when no
// server sets a cookie.
type sessionCookies struct {
	mu sync.Mutex
	by map[string][]*http.Cookie
}

// attach adds key's cookies to req.
func (s *sessionCookies) attach(req *http.Request, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.by[key] {
		req.AddCookie(c)
	}
}

// keep stores the cookies a reply set for key, replacing those of the
// same name; a cookie set with Max-Age < 0 (or an expiry in the past) is
// dropped, as a client drops it.
func (s *sessionCookies) keep(key string, set []*http.Cookie) {
	if len(set) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[string][]*http.Cookie{}
	}
	now := time.Now()
	for _, c := range set {
		kept := s.by[key][:0:0]
		for _, old := range s.by[key] {
			if old.Name != c.Name {
				kept = append(kept, old)
			}
		}
		if c.MaxAge >= 0 && (c.Expires.IsZero() || c.Expires.After(now)) {
			kept = append(kept, &http.Cookie{Name: c.Name, Value: c.Value})
		}
		s.by[key] = kept
	}
}

// do sends body at its scheduled time (rec.Scheduled is already set) and
// fills rec. The reply's content and reasoning are left in st (valid until
// the next do on the same stream value). runCtx ends the whole run: a request cut by it is cancelled.
func (c *client) do(runCtx context.Context, body []byte, rec *result.Record, st *stream) {
	*st = stream{gapsUS: st.gapsUS[:0], counts: st.counts[:0], reply: st.reply[:0], reasoning: st.reasoning[:0], sse: st.sse}
	ctx, cancel := context.WithCancelCause(runCtx)
	defer cancel(nil)
	reqTimer := time.AfterFunc(c.requestTimeout, func() { cancel(errRequestTimeout) })
	defer reqTimer.Stop()
	fbTimer := time.AfterFunc(c.firstByteTimeout, func() { cancel(errFirstByteTimeout) })
	defer fbTimer.Stop()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		c.fail(rec, runCtx, ctx, result.StatusHTTPError, fmt.Errorf("build request: %w", err))
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if rec.RequestID != "" {
		req.Header.Set("X-Request-Id", rec.RequestID)
	}
	key := workload.SessionKey(c.sessionKey, rec.User, rec.Session)
	if c.sessionHeader != "" {
		req.Header.Set(c.sessionHeader, key)
	}
	c.cookies.attach(req, key)
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	rec.Sent = time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		rec.Done = time.Now()
		c.fail(rec, runCtx, ctx, result.StatusHTTPError, err)
		return
	}
	defer resp.Body.Close()
	c.cookies.keep(key, resp.Cookies())
	rec.HTTPStatus = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		rec.Done = time.Now()
		// The server answered with an error: that stays an error even when
		// the window ended while its body was read, never "cancelled".
		rec.Status = result.StatusHTTPError
		rec.Error = c.redact(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg))))
		return
	}
	if st.sse == nil {
		st.sse = NewSSEReader(resp.Body)
	} else {
		st.sse.Reset(resp.Body)
	}
	sr := st.sse
	sr.OnFirstByte(func(time.Time) { fbTimer.Stop() })
	err = readStream(sr, st)
	c.fill(rec, st)
	rec.Done = time.Now()
	if err != nil {
		c.fail(rec, runCtx, ctx, result.StatusStreamError, err)
		return
	}
	if !st.end.IsZero() {
		rec.Done = st.end
	}
	rec.Status = result.StatusOK
	// Read the body to its end (the chunked terminator that follows
	// [DONE]) so the transport can reuse the connection: a body closed
	// early makes it dial a new one, with fresh buffers, for the next turn.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
}

// drainLimit bounds what is read after [DONE] to keep a connection reusable;
// a server sending more than that loses the connection instead.
const drainLimit = 4 << 10

// fill copies what the stream delivered into rec, including after failures.
func (c *client) fill(rec *result.Record, st *stream) {
	rec.FirstToken = st.first
	rec.TokenGapsUS = append(rec.TokenGapsUS[:0], st.gapsUS...)
	rec.TokenCounts = rec.TokenCounts[:0]
	if st.multi {
		rec.TokenCounts = append(rec.TokenCounts, st.counts...)
	}
	if extra := st.completed - st.tokens; st.usage && extra > 0 && len(st.gapsUS) > 0 {
		// The server sent more tokens than chunks (several per chunk, as
		// vLLM does with a stream interval or speculative decoding) without
		// saying how many each: spread what usage reports over the chunks
		// after the first, so the inter-token latency is per token, not
		// per chunk.
		if !st.multi {
			rec.TokenCounts = rec.TokenCounts[:0]
			for range st.gapsUS {
				rec.TokenCounts = append(rec.TokenCounts, 1)
			}
		}
		n := len(rec.TokenCounts)
		for i := range rec.TokenCounts {
			rec.TokenCounts[i] += extra / n
			if i < extra%n {
				rec.TokenCounts[i]++
			}
		}
	}
	rec.OutputTokens = st.tokens
	rec.ReasoningTokens = st.reasoningTokens
	if st.usage {
		rec.PromptTokens = st.prompt
		rec.CachedTokens = st.cached
		rec.OutputTokens = max(st.completed, st.tokens)
		if st.completed > st.tokens && st.tokens > 0 {
			// several tokens a chunk without counts: the reasoning chunks
			// carried as many tokens each as the others
			rec.ReasoningTokens = int(math.Round(float64(st.reasoningTokens) * float64(st.completed) / float64(st.tokens)))
		}
	}
}

// fail classifies err: the run ending makes it cancelled, our own timers make
// it a timeout, otherwise it keeps class.
func (c *client) fail(rec *result.Record, runCtx, ctx context.Context, class result.Status, err error) {
	switch cause := context.Cause(ctx); {
	case runCtx.Err() != nil:
		rec.Status = result.StatusCancelled
		err = context.Cause(runCtx)
	case errors.Is(cause, errFirstByteTimeout) || errors.Is(cause, errRequestTimeout):
		rec.Status = result.StatusTimeout
		err = cause
	case errors.Is(err, errServerStream):
		rec.Status = result.StatusStreamError
	default:
		rec.Status = class
	}
	if rec.Done.IsZero() {
		rec.Done = time.Now()
	}
	rec.Error = c.redact(err.Error())
}

// redact keeps the API key out of records even if a server echoes it.
func (c *client) redact(s string) string {
	if c.apiKey != "" {
		s = strings.ReplaceAll(s, c.apiKey, "[redacted]")
	}
	return s
}
