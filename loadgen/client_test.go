package loadgen

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoc-project/spoc/result"
)

// TestClientReusesConnection checks that back-to-back streams from one user
// share one connection: the client reads past [DONE] to the end of the body,
// even when the chunked terminator arrives in a later read than [DONE].
func TestClientReusesConnection(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		_, _ = w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"))
		fl.Flush()
		_, _ = w.Write([]byte("data: [DONE]\n\n"))
		fl.Flush()
		time.Sleep(5 * time.Millisecond) // the terminator comes in a later read
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	tr := NewTransport(1)
	defer tr.CloseIdleConnections()
	c := &client{http: &http.Client{Transport: tr}, url: srv.URL, firstByteTimeout: 10 * time.Second, requestTimeout: 10 * time.Second}
	var st stream
	for i := range 5 {
		rec := &result.Record{Scheduled: time.Now()}
		c.do(context.Background(), []byte(`{}`), rec, &st)
		if rec.Status != result.StatusOK || string(st.reply) != "hi" {
			t.Fatalf("request %d: status %s (%s), reply %q", i, rec.Status, rec.Error, st.reply)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("5 sequential streams used %d connections, want 1", n)
	}
}
