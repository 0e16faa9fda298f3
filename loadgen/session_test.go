package loadgen_test

import (
	"context"
	"fmt"
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

// A cookie the server sets on a reply goes back on that session key's later
// requests and never on another's, as each user's own client keeps its
// cookies: llm-d's session-affinity scorer pins a session that way (it sets
// llm-d-session on the reply). A cookie expired by the server is dropped.
func TestTheServersCookiesFollowTheirSession(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-Session-Id")
		got := ""
		if c, err := r.Cookie("llm-d-session"); err == nil {
			got = c.Value
		}
		_, stale := r.Cookie("stale")
		if got == "" {
			// the first reply to this key pins it
			http.SetCookie(w, &http.Cookie{Name: "llm-d-session", Value: "pod-of-" + key})
			http.SetCookie(w, &http.Cookie{Name: "stale", Value: "x"})
		} else {
			// later replies expire the second cookie
			http.SetCookie(w, &http.Cookie{Name: "stale", MaxAge: -1})
		}
		http.Error(w, fmt.Sprintf("key=%s cookie=%s stale=%v", key, got, stale == nil), http.StatusTeapot)
	}))
	defer srv.Close()
	sink := &collect{}
	r := newRunner(t, srv.URL, loadgen.Options{Users: 3, Duration: 200 * time.Millisecond, SessionHeader: "X-Session-Id", SessionKey: workload.SessionKeyUser})
	if _, err := r.Run(context.Background(), loadgen.SyntheticSource{Turns: 2, MaxTokens: 1}, sink); err != nil {
		t.Fatal(err)
	}
	perUser := map[int][]string{}
	for _, rec := range sink.recs {
		if rec.HTTPStatus == http.StatusTeapot {
			perUser[rec.User] = append(perUser[rec.User], rec.Error)
		}
	}
	if len(perUser) != 3 {
		t.Fatalf("requests from %d users, want 3", len(perUser))
	}
	for user, msgs := range perUser {
		key := workload.SessionKey(workload.SessionKeyUser, user, 0)
		if len(msgs) < 3 {
			t.Fatalf("user %d sent %d requests; the test needs several", user, len(msgs))
		}
		for i, m := range msgs {
			want := fmt.Sprintf("key=%s cookie=pod-of-%s", key, key)
			if i == 0 {
				want = fmt.Sprintf("key=%s cookie= stale=false", key)
			}
			if !strings.Contains(m, want) {
				t.Errorf("user %d request %d: %q, want %q", user, i, m, want)
			}
			if i >= 2 && !strings.Contains(m, "stale=false") {
				t.Errorf("user %d request %d sent a cookie the server expired: %q", user, i, m)
			}
		}
	}
}
