package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spoc-project/spoc/search"
)

// Engine starts one server per trial. Start and Stop are called in pairs from
// one goroutine; an Engine runs at most one server at a time. Stop is safe to
// call when Start failed or was never called.
type Engine interface {
	// Start launches a server configured with p and returns once it is ready
	// to serve. On error nothing is left running.
	Start(ctx context.Context, p search.Params) (Endpoint, error)
	// Stop tears the server down, waiting at most until ctx is done.
	Stop(ctx context.Context) error
}

// Endpoint is where a started server is reached.
type Endpoint struct {
	// BaseURL is the OpenAI-compatible server root (http://127.0.0.1:8000),
	// without a trailing slash.
	BaseURL string `json:"base_url"`
	// MetricsURLs are Prometheus endpoints to scrape during the run (the
	// server's /metrics, GPU exporters).
	MetricsURLs []string `json:"metrics_urls,omitempty"`
	// Model is the model name to send in requests.
	Model string `json:"model,omitempty"`
	// Log is the path of the captured server log; empty when the launcher
	// has none (external servers).
	Log string `json:"log,omitempty"`
}

// Namer is implemented by launchers that report their kind ("sim",
// "process", "external", "kubernetes") for logs and reports.
type Namer interface {
	Kind() string
}

// DryRunner is implemented by launchers that can show what Start would
// launch for a trial without launching anything: the command line of a
// process, the manifests of a Kubernetes trial, the simulated deployment.
type DryRunner interface {
	DryRun(p search.Params, trial int) (string, error)
}

// Checker is implemented by launchers that can verify their setup before a
// study spends trials on it: that the server command or kubectl exists.
type Checker interface {
	Check() error
}

// Reconfigurable reports whether an engine applies trial parameters. An
// External engine does not (it is already running with its own flags), so a
// study over it would evaluate the same server over and over.
func Reconfigurable(e Engine) bool {
	_, external := e.(*External)
	return !external
}

type artifactsKey struct{}

// WithArtifacts returns a context telling launchers where to put the
// server's log and files. It takes precedence over the study's trial
// directory (search.CurrentTrial).
func WithArtifacts(ctx context.Context, dir string) context.Context {
	return context.WithValue(ctx, artifactsKey{}, dir)
}

// ArtifactsDir returns the directory for this start's files: the one set by
// WithArtifacts, else the current trial's artefact directory, else "".
func ArtifactsDir(ctx context.Context) string {
	if d, ok := ctx.Value(artifactsKey{}).(string); ok && d != "" {
		return d
	}
	if tc := search.CurrentTrial(ctx); tc != nil {
		return tc.Artifacts
	}
	return ""
}

// artifactsDir returns ArtifactsDir(ctx), created, or a new temporary
// directory when none is set, so that a server log always exists somewhere.
func artifactsDir(ctx context.Context) (string, error) {
	dir := ArtifactsDir(ctx)
	if dir == "" {
		d, err := os.MkdirTemp("", "spoc-server-")
		if err != nil {
			return "", fmt.Errorf("create server artefact directory: %w", err)
		}
		return d, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create server artefact directory: %w", err)
	}
	return dir, nil
}

// createServerLog opens server.log in this start's artefact directory
// (ArtifactsDir, or a new temporary one) for a launcher of the given kind.
func createServerLog(ctx context.Context, kind string) (path string, f *os.File, err error) {
	dir, err := artifactsDir(ctx)
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "server.log")
	f, err = os.Create(path)
	if err != nil {
		return "", nil, fmt.Errorf("%s engine: create server log: %w", kind, err)
	}
	return path, f, nil
}
