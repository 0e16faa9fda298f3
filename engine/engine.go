package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spoc-project/spoc/vllm"
)

// Params are a server's engine flags by vLLM name ("max-num-batched-tokens":
// 2048). A Launcher renders them as command-line flags over its base flags.
type Params map[string]any

// Launcher starts a server configured with a set of flags. A launcher runs
// at most one server at a time (a Kubernetes or simulator launcher built
// with MaxServers n runs n, one per trial running at once): Start fails
// while that many servers it started are still running (Stop one first).
type Launcher interface {
	// Start launches a server configured with p and returns once it is
	// ready to serve. On error nothing is left running.
	Start(ctx context.Context, p Params) (Server, error)
}

// Server is one started server.
type Server interface {
	// Endpoint is where the server is reached.
	Endpoint() Endpoint
	// ResetCache empties the server's prefix cache, so that a run does not
	// start warm from the previous one. ErrResetUnsupported means the
	// server has no such route (vLLM without VLLM_SERVER_DEV_MODE=1).
	ResetCache(ctx context.Context) error
	// Stop tears the server down, waiting at most until ctx is done. It is
	// safe to call more than once.
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
	// MetricsNames name the MetricsURLs one for one where the launcher
	// knows what each is (the pod of a Kubernetes replica), so samples are
	// labelled by it; empty otherwise.
	MetricsNames []string `json:"metrics_names,omitempty"`
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

// Describer is implemented by launchers that can say in one line what they
// launch (the command template, the image and namespace), for provenance.
type Describer interface {
	Describe() string
}

// DryRunner is implemented by launchers that can show what Start would
// launch without launching anything: the command line of a process, the
// manifests of a Kubernetes server, the simulated deployment.
type DryRunner interface {
	DryRun(p Params) (string, error)
}

// Checker is implemented by launchers that can verify their setup before a
// study spends trials on it: that the server command or kubectl exists.
type Checker interface {
	Check() error
}

// Reconfigurable reports whether a launcher applies the flags it is given.
// An External one does not (it is already running with its own flags), so a
// study over it would evaluate the same server over and over.
func Reconfigurable(l Launcher) bool {
	_, external := l.(*External)
	return !external
}

// ErrResetUnsupported is returned by Server.ResetCache when the server has
// no cache-reset route: the cache state carries over between runs.
var ErrResetUnsupported = errors.New("server cannot reset its prefix cache")

// resetAt posts path to base to empty the prefix cache: a 404 (or 405),
// or no path at all (a flavor without a reset route), is
// ErrResetUnsupported.
func resetAt(ctx context.Context, base, path string) error {
	if path == "" {
		return fmt.Errorf("%w: %w", errNoResetRoute, ErrResetUnsupported)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, nil)
	if err != nil {
		return fmt.Errorf("reset prefix cache: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reset prefix cache: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
		return fmt.Errorf("POST %s%s: HTTP %d: %w", base, path, resp.StatusCode, ErrResetUnsupported)
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("reset prefix cache: POST %s%s: HTTP %d", base, path, resp.StatusCode)
	}
	return nil
}

// serverDirs hands out one directory per started server under a launcher's
// Dir: server-001, server-002, …, after any an earlier run left there (a
// new temporary folder when Dir is empty, so that a server log always
// exists somewhere).
type serverDirs struct {
	root string
	mu   sync.Mutex
	n    int
}

// next creates and returns the next server directory.
func (d *serverDirs) next(kind string) (string, error) {
	if d.root == "" {
		dir, err := os.MkdirTemp("", "spoc-server-")
		if err != nil {
			return "", fmt.Errorf("%s engine: create server folder: %w", kind, err)
		}
		return dir, nil
	}
	if err := os.MkdirAll(d.root, 0o755); err != nil {
		return "", fmt.Errorf("%s engine: create server folder: %w", kind, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		// numbers go on after the folders an earlier run left: a new run
		// never overwrites an old server's log
		d.n++
		dir := filepath.Join(d.root, fmt.Sprintf("server-%03d", d.n))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("%s engine: create server folder: %w", kind, err)
		}
	}
}

// createServerLog opens server.log in the next server directory.
func (d *serverDirs) createServerLog(kind string) (path string, f *os.File, err error) {
	dir, err := d.next(kind)
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

// slot bounds the servers a launcher runs at once: one, or max when it is
// more (parallel trials, each with its own server).
type slot struct {
	mu   sync.Mutex
	busy int
	max  int
}

func (s *slot) take(kind string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if limit := max(s.max, 1); s.busy >= limit {
		if limit == 1 {
			return fmt.Errorf("%s engine: a server is already running; Stop it first", kind)
		}
		return fmt.Errorf("%s engine: %d servers are already running, the most this launcher runs at once; Stop one first", kind, limit)
	}
	s.busy++
	return nil
}

func (s *slot) release() {
	s.mu.Lock()
	if s.busy > 0 {
		s.busy--
	}
	s.mu.Unlock()
}

// Every launcher can say what it would start and describe itself; those
// that own their server can check their setup first.
var (
	_ DryRunner = (*Sim)(nil)
	_ DryRunner = (*Process)(nil)
	_ DryRunner = (*Kubernetes)(nil)
	_ Describer = (*Sim)(nil)
	_ Describer = (*Process)(nil)
	_ Describer = (*Kubernetes)(nil)
	_ Describer = (*External)(nil)
	_ Checker   = (*Process)(nil)
	_ Checker   = (*Kubernetes)(nil)
)

// ErrSetup is matched by a launcher check that failed: the engine cannot
// start anything as configured (a missing command, no kubectl), whatever
// the flags. The configuration must change.
var ErrSetup = errors.New("engine setup")

// Check runs l's own check when it has one (Checker), before any time is
// spent on it; a failure matches ErrSetup.
func Check(l Launcher) error {
	c, ok := l.(Checker)
	if !ok {
		return nil
	}
	if err := c.Check(); err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return nil
}

// ErrServerGone is matched when a started server stopped answering or
// exited: whatever a run measured after that is not the server's capacity.
var ErrServerGone = errors.New("the server is gone")

// Alive checks that a started server still serves: a process that exited
// or a Kubernetes server that lost a replica is gone at once; any other
// server must answer GET /v1/models. A failure
// matches ErrServerGone and carries the end of the server's log.
func Alive(ctx context.Context, s Server) error {
	ep := s.Endpoint()
	if x, ok := s.(interface{ Exited() bool }); ok && x.Exited() {
		return &GoneError{Endpoint: ep.BaseURL, Detail: "the server process exited", Log: ep.Log}
	}
	// a server of several replicas (Kubernetes) may answer through the
	// ones left after losing one: it says itself what it lost
	if x, ok := s.(interface{ Lost(context.Context) error }); ok {
		if err := x.Lost(ctx); err != nil {
			return &GoneError{Endpoint: ep.BaseURL, Detail: err.Error(), Log: ep.Log}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := probe(ctx, &http.Client{}, ep.BaseURL+vllm.PathModels); err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return ctx.Err()
		}
		return &GoneError{Endpoint: ep.BaseURL, Detail: err.Error(), Log: ep.Log}
	}
	return nil
}

// GoneError is a server that stopped serving.
type GoneError struct {
	Endpoint string
	Detail   string
	// Log is the server's log file, when spoc kept one.
	Log string
}

// Error names the server, what happened and the last lines of its log.
func (e *GoneError) Error() string {
	msg := fmt.Sprintf("%s at %s: %s", ErrServerGone, e.Endpoint, e.Detail)
	if tail := LogTail(e.Log, 10); tail != "" {
		msg += "\nlast lines of " + e.Log + ":\n" + tail
	}
	return msg
}

// Is matches ErrServerGone.
func (e *GoneError) Is(target error) bool { return target == ErrServerGone }

// LogTail returns the last n lines of the log at path ("" when it cannot
// be read), for error messages that must say why a server failed.
func LogTail(path string, n int) string {
	if path == "" {
		return ""
	}
	lines := strings.Split(strings.TrimRight(readTail(path, logTailBytes), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
