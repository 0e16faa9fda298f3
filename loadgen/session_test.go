package loadgen_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/workload"
)

// Every request carries the session header with workload.SessionKey of its
// record's user and session: the value the simulator's session-affinity
// router hashes, so a consistent-hash router places live sessions as the
// simulated fleet does.
func TestEveryRequestCarriesTheSessionKey(t *testing.T) {
	t.Parallel()
	for _, by := range []string{workload.SessionKeyUser, workload.SessionKeySession} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// a failed turn abandons its session: the next request starts
			// the user's next one, so session numbers move on
			http.Error(w, "key="+r.Header.Get("X-Session-Id"), http.StatusTeapot)
		}))
		sink := &collect{}
		r := newRunner(t, srv.URL, loadgen.Options{Users: 3, Duration: 150 * time.Millisecond, SessionHeader: "X-Session-Id", SessionKey: by})
		if _, err := r.Run(context.Background(), loadgen.SyntheticSource{Turns: 2, MaxTokens: 1}, sink); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		sessions, checked := map[int]bool{}, 0
		for _, rec := range sink.recs {
			if rec.HTTPStatus != http.StatusTeapot {
				continue
			}
			want := "key=" + workload.SessionKey(by, rec.User, rec.Session)
			if !strings.Contains(rec.Error, want) {
				t.Fatalf("by %s: user %d session %d sent %q, want %s", by, rec.User, rec.Session, rec.Error, want)
			}
			sessions[rec.Session] = true
			checked++
		}
		if checked < 6 || len(sessions) < 2 {
			t.Fatalf("by %s: %d requests over %d session numbers checked; the test needs several of each", by, checked, len(sessions))
		}
	}
}
