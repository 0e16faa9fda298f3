// Package metricnames makes a test server expose its Prometheus metrics
// under names of its own: the stand-in for a server spoc knows nothing
// about (flavor generic), whose metric names telemetry's catalog does
// not know.
package metricnames

import (
	"net/http"
	"net/http/httptest"
	"strings"
)

// Rename serves h, with every occurrence of from in the answers on path
// (the metrics endpoint) replaced by to: Rename(h, "/metrics", "vllm:",
// "acme_") turns vllm:num_requests_running into acme_num_requests_running.
// The answer is sent uncompressed, so that the names can be rewritten.
func Rename(h http.Handler, path, from, to string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			h.ServeHTTP(w, r)
			return
		}
		r.Header.Del("Accept-Encoding")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write([]byte(strings.ReplaceAll(rec.Body.String(), from, to)))
	})
}
