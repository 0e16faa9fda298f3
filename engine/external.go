package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// External is a server spoc does not start: Start returns its address and
// the server's Stop does nothing. Parameters are not applied, so External serves run and
// sweep (one configuration) but not tune; see Reconfigurable.
type External struct {
	ep         Endpoint
	healthPath string
	resetPath  string
	devModeEnv string
}

var _ Launcher = (*External)(nil)

// NewExternal returns the launcher for the server at baseURL. healthPath,
// when not empty, is probed on Start so that a server that is down fails
// fast; metricsURLs are scraped during runs.
func NewExternal(baseURL, model, healthPath string, metricsURLs []string) (*External, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("external engine: need an http(s) base URL, got %q", baseURL)
	}
	return &External{
		ep: Endpoint{
			BaseURL:     strings.TrimRight(baseURL, "/"),
			MetricsURLs: append([]string(nil), metricsURLs...),
			Model:       model,
		},
		healthPath: healthPath,
		resetPath:  VLLM().ResetPath,
		devModeEnv: VLLM().DevModeEnv,
	}, nil
}

// WithFlavor makes the server's cache reset the flavor's route (none for
// a generic server without one) and returns e.
func (e *External) WithFlavor(f Flavor) *External {
	e.resetPath, e.devModeEnv = f.or().ResetPath, f.or().DevModeEnv
	return e
}

// Kind returns "external".
func (e *External) Kind() string { return "external" }

// Start checks the server's health path (when configured) and returns it.
// The flags describe the running server and are ignored.
func (e *External) Start(ctx context.Context, _ Params) (Server, error) {
	if e.healthPath == "" {
		return &externalServer{ep: e.ep, resetPath: e.resetPath, devModeEnv: e.devModeEnv}, nil
	}
	client := &http.Client{Timeout: 10 * time.Second}
	u := e.ep.BaseURL + e.healthPath
	if err := probe(ctx, client, u); err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("external engine: check %s: %w", u, err)
		}
		return nil, fmt.Errorf("external engine: server at %s is not healthy: %w", e.ep.BaseURL, err)
	}
	return &externalServer{ep: e.ep, resetPath: e.resetPath, devModeEnv: e.devModeEnv}, nil
}

// Describe is the server's address.
func (e *External) Describe() string { return e.ep.BaseURL }

// externalServer is a server spoc does not own.
type externalServer struct {
	ep                    Endpoint
	resetPath, devModeEnv string
}

// Endpoint returns the configured address.
func (s *externalServer) Endpoint() Endpoint { return s.ep }

// ResetCache asks the server to empty its prefix cache; a vLLM without
// VLLM_SERVER_DEV_MODE=1 answers ErrResetUnsupported.
func (s *externalServer) ResetCache(ctx context.Context) error {
	err := resetAt(ctx, s.ep.BaseURL, s.resetPath)
	if s.devModeEnv != "" && s.resetPath != "" && errors.Is(err, ErrResetUnsupported) {
		// spoc did not start the server, so it could not open the route
		return fmt.Errorf("%w (the server opens it only when started with %s=1)", err, s.devModeEnv)
	}
	return err
}

// Stop does nothing: spoc does not own the server.
func (s *externalServer) Stop(context.Context) error { return nil }
