package capacity_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/loadgen/testserver"
)

// The preflight refuses, with one clear error, a server that is not an
// OpenAI-compatible one (python -m http.server answers 501 to POST and
// lists no models), one that serves another model (naming what it serves),
// and accepts a real one.
func TestPreflight(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "Unsupported method ('POST')", http.StatusNotImplemented)
			return
		}
		w.Write([]byte("<html>Directory listing for /</html>"))
	}))
	defer plain.Close()
	post501 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			w.Write([]byte(`{"data":[{"id":"m"}]}`))
			return
		}
		http.Error(w, "Unsupported method ('POST')", http.StatusNotImplemented)
	}))
	defer post501.Close()
	good := testserver.Start(testserver.Config{Model: "m"})
	defer good.Close()

	for _, tc := range []struct {
		name, url, model, want string
	}{
		{"not an API", plain.URL, "m", "is not an OpenAI model list"},
		{"501 on completions", post501.URL, "m", "HTTP 501"},
		{"another model", good.URL, "gpt-oss-120b", `serves "m", not "gpt-oss-120b"`},
		{"ok", good.URL, "m", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := capacity.Preflight(context.Background(), engine.Endpoint{BaseURL: tc.url, Model: tc.model}, capacity.Client{Endpoint: "chat"})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Preflight = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Preflight = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
