package engine

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// resetWhenIdle resets the prefix cache of the server at base once its
// metrics (metricsURL) report no request running or waiting. vLLM (and
// spoc sim serve) answer the reset 200 but keep every block a request
// still holds, and right after a run the requests the client cut at the
// window's end may still be aborting: their sessions' histories survived
// the reset, and the next sweep level's same users started warm (measured
// on a fleet of three spoc sim serve replicas: the first requests of a
// level 66 % cached after a reset, 32 % on fresh replicas and in the
// simulator; docs/fleet.md). A server whose metrics cannot be read is
// reset at once: nothing says it is busy.
func resetWhenIdle(ctx context.Context, base, metricsURL string) error {
	return VLLM().resetWhenIdle(ctx, base, metricsURL)
}

// resetWhenIdle is resetWhenIdle for a server of flavor f: its busy
// gauges (none: no wait), its reset route (none: ErrResetUnsupported, at
// once).
func (f Flavor) resetWhenIdle(ctx context.Context, base, metricsURL string) error {
	if f.ResetPath == "" {
		return resetAt(ctx, base, "")
	}
	if metricsURL != "" && len(f.BusyMetrics) > 0 {
		if err := awaitIdle(ctx, metricsURL, idleTimeout, f.BusyMetrics); err != nil {
			return fmt.Errorf("reset prefix cache: %w", err)
		}
	}
	return resetAt(ctx, base, f.ResetPath)
}

// idleTimeout bounds the wait for a replica to finish aborting a run's
// cut requests before its cache is reset.
const idleTimeout = time.Minute

// awaitIdle polls the server's Prometheus metrics until it reports no
// request running or waiting (the flavor's BusyMetrics);
// it fails when they still count requests after timeout, and returns at
// once when the page cannot be read or has neither gauge.
func awaitIdle(ctx context.Context, metricsURL string, timeout time.Duration, gauges []string) error {
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		busy, err := gaugesSum(ctx, client, metricsURL, gauges)
		if err != nil || busy == 0 {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%g requests still running or waiting after %s", busy, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// requestsInFlight sums the running and waiting gauges of a vLLM metrics
// page (over their label sets: one per model or engine).
func requestsInFlight(ctx context.Context, client *http.Client, url string) (float64, error) {
	return gaugesSum(ctx, client, url, VLLM().BusyMetrics)
}

// gaugesSum sums the gauges named on the metrics page at url (over their
// label sets); an error when the page has none of them.
func gaugesSum(ctx context.Context, client *http.Client, url string, gauges []string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		if !slices.Contains(gauges, name) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", line, err)
		}
		sum, found = sum+v, true
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("none of %s", strings.Join(gauges, ", "))
	}
	return sum, nil
}
