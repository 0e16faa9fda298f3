package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/spoc-project/spoc/vllm"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestExternalResetCache(t *testing.T) {
	var status, resets atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/health":
		case r.Method == http.MethodPost && r.URL.Path == vllm.PathResetPrefixCache:
			resets.Add(1)
			w.WriteHeader(int(status.Load()))
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	e, err := NewExternal(ts.URL+"/", "m", "/health", []string{ts.URL + "/metrics"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv, err := e.Start(ctx, Params{"max-num-seqs": 8})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if ep := srv.Endpoint(); ep.BaseURL != ts.URL || ep.Model != "m" || ep.Log != "" || len(ep.MetricsURLs) != 1 {
		t.Errorf("endpoint = %+v", ep)
	}
	for _, tc := range []struct {
		code        int
		ok          bool
		unsupported bool
	}{
		{http.StatusOK, true, false},
		{http.StatusNoContent, true, false},
		{http.StatusNotFound, false, true},         // vLLM without VLLM_SERVER_DEV_MODE=1
		{http.StatusMethodNotAllowed, false, true}, // the route exists for other methods only
		{http.StatusInternalServerError, false, false},
	} {
		status.Store(int32(tc.code))
		before := resets.Load()
		err := srv.ResetCache(ctx)
		if (err == nil) != tc.ok || errors.Is(err, ErrResetUnsupported) != tc.unsupported {
			t.Errorf("HTTP %d: ResetCache = %v, want ok=%v unsupported=%v", tc.code, err, tc.ok, tc.unsupported)
		}
		// a vLLM spoc did not start: the error says how to open the route
		if tc.unsupported && !strings.Contains(fmt.Sprint(err), vllm.EnvServerDevMode+"=1") {
			t.Errorf("HTTP %d: ResetCache = %v, want the hint to start the server with %s=1", tc.code, err, vllm.EnvServerDevMode)
		}
		if resets.Load() != before+1 {
			t.Errorf("HTTP %d: ResetCache did not POST %s", tc.code, vllm.PathResetPrefixCache)
		}
	}
	// spoc does not own the server: Stop leaves it running.
	for range 2 {
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}
	status.Store(http.StatusOK)
	if err := srv.ResetCache(ctx); err != nil {
		t.Errorf("ResetCache after Stop: %v", err)
	}
}

func TestExternalStartChecksHealth(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "loading", http.StatusServiceUnavailable)
	}))
	e, err := NewExternal(ts.URL, "m", "/health", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Start(context.Background(), nil); err == nil {
		t.Error("Start of an unhealthy server succeeded")
	}
	ts.Close()
	if _, err := e.Start(context.Background(), nil); err == nil {
		t.Error("Start of a server that is down succeeded")
	}
	unchecked, err := NewExternal(ts.URL, "m", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unchecked.Start(context.Background(), nil); err != nil {
		t.Errorf("Start without a health path: %v", err)
	}
	if _, err := NewExternal("gpu-box:8000", "m", "", nil); err == nil {
		t.Error("NewExternal accepted a URL without scheme")
	}
}
