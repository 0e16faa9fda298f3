package capacity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/vllm"
)

// PreflightTimeout bounds each request of Preflight.
const PreflightTimeout = 30 * time.Second

// Preflight checks a started server before minutes of load are spent on
// it: GET /v1/models must list the model spoc will ask for (else the error
// lists what the server serves), and a one-token request on the run's
// endpoint ("chat" or "completions") must succeed. A server that answers
// something else — a plain HTTP server's 501, an auth error, another model
// — fails here with one clear error instead of a run whose every request
// failed.
//
// A configured API key that would go over plain http to another machine
// stops the preflight before any request (loadgen.CheckKeyTransport).
func Preflight(ctx context.Context, ep engine.Endpoint, c Client) error {
	endpoint, apiKey := c.Endpoint, c.APIKey
	if apiKey != "" {
		if err := loadgen.CheckKeyTransport(ep.BaseURL, c.APIKeyPlainHTTP); err != nil {
			return fmt.Errorf("preflight: run.api_key_env: %w", err)
		}
	}
	client := &http.Client{Timeout: PreflightTimeout}
	models, err := servedModels(ctx, client, ep.BaseURL, apiKey)
	if err != nil {
		return err
	}
	if !slices.Contains(models, ep.Model) {
		return fmt.Errorf("preflight: %s serves %s, not %q; set engine.served_model_name (or --model) to one of them",
			ep.BaseURL, quoteAll(models), ep.Model)
	}
	path, body := vllm.PathChatCompletions, map[string]any{
		"model": ep.Model, "max_tokens": 1, "stream": true,
		"messages": []map[string]string{{"role": "user", "content": "Say OK."}},
	}
	if endpoint == "completions" {
		path, body = vllm.PathCompletions, map[string]any{"model": ep.Model, "max_tokens": 1, "stream": true, "prompt": "Say OK."}
	}
	raw, _ := json.Marshal(body)
	// A loaded server may drop one request; a server that cannot complete
	// one in three tries will not serve a run.
	var last error
	for range preflightTries {
		resp, err := do(ctx, client, http.MethodPost, ep.BaseURL+path, apiKey, raw)
		if err == nil && !hasChoice(resp) {
			err = fmt.Errorf("POST %s%s: the answer has no choices: %s", ep.BaseURL, path, excerpt(resp))
		}
		if err == nil {
			return nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("preflight: one-token request: %w", last)
}

// preflightTries is how often the one-token request is tried.
const preflightTries = 3

// hasChoice reports whether an answer (a JSON completion, or a stream of
// server-sent events) carries at least one choice.
func hasChoice(body []byte) bool {
	var out struct {
		Choices []json.RawMessage `json:"choices"`
	}
	if json.Unmarshal(body, &out) == nil && len(out.Choices) > 0 {
		return true
	}
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:")
		if !ok {
			continue
		}
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &out) == nil && len(out.Choices) > 0 {
			return true
		}
	}
	return false
}

// servedModels lists the model ids of GET /v1/models.
func servedModels(ctx context.Context, client *http.Client, base, apiKey string) ([]string, error) {
	resp, err := do(ctx, client, http.MethodGet, base+vllm.PathModels, apiKey, nil)
	if err != nil {
		return nil, fmt.Errorf("preflight: %w", err)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(resp, &list); err != nil {
		return nil, fmt.Errorf("preflight: GET %s%s is not an OpenAI model list: %s", base, vllm.PathModels, excerpt(resp))
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("preflight: GET %s%s lists no model", base, vllm.PathModels)
	}
	return ids, nil
}

// do sends one request and returns the body of a 2xx answer.
func do(ctx context.Context, client *http.Client, method, url, apiKey string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", method, url, ctx.Err())
		}
		return nil, fmt.Errorf("the server is not reachable (%s %s): %w", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read answer: %w", method, url, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: HTTP %d: %s (is this an OpenAI-compatible server?)", method, url, resp.StatusCode, excerpt(b))
	}
	return b, nil
}

// excerpt is the start of an answer body, on one line.
func excerpt(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}

func quoteAll(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}
