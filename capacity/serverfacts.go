package capacity

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/vllm"
)

// ServerFacts is what a server spoc did not start says about its own
// configuration, each fact with its source: the max_model_len of the
// served model (GET /v1/models, a vLLM field) and the cache configuration
// vLLM exposes as the labels of vllm:cache_config_info on its metrics
// endpoint. Neither names the scheduler's flags (--max-num-seqs,
// --max-num-batched-tokens), so those stay unknown. A server that says
// nothing, or does not answer, gives no fact.
func ServerFacts(ctx context.Context, ep engine.Endpoint) []string {
	client := &http.Client{Timeout: 10 * time.Second}
	var facts []string
	if b, err := do(ctx, client, http.MethodGet, ep.BaseURL+vllm.PathModels, "", nil); err == nil {
		var list struct {
			Data []struct {
				ID          string `json:"id"`
				MaxModelLen int    `json:"max_model_len"`
			} `json:"data"`
		}
		if json.Unmarshal(b, &list) == nil {
			for _, m := range list.Data {
				if m.MaxModelLen > 0 && (m.ID == ep.Model || len(list.Data) == 1) {
					facts = append(facts, fmt.Sprintf("max_model_len %d (%s)", m.MaxModelLen, vllm.PathModels))
				}
			}
		}
	}
	for _, u := range ep.MetricsURLs {
		if f := cacheConfig(ctx, client, u); f != "" {
			facts = append(facts, f)
			break
		}
	}
	return facts
}

// cacheConfig is the labels of vllm:cache_config_info at url, in words.
func cacheConfig(ctx context.Context, client *http.Client, url string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return ""
	}
	resp, err := client.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	// the telemetry catalog keeps series spoc charts; an info gauge's
	// labels are read here from the text exposition itself
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 32<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), vllm.MetricCacheConfigInfo+"{")
		if !ok {
			continue
		}
		body, _, ok := strings.Cut(rest, "}")
		if !ok {
			return ""
		}
		kv := parseLabels(body)
		if len(kv) == 0 {
			return ""
		}
		sort.Strings(kv)
		return strings.Join(kv, " ") + " (" + vllm.MetricCacheConfigInfo + " on " + url + ")"
	}
	return ""
}

// parseLabels reads a Prometheus label set (name="value",…) as name=value
// pairs; it stops at the first malformed pair.
func parseLabels(s string) []string {
	var out []string
	for s = strings.TrimSpace(s); s != ""; {
		name, rest, ok := strings.Cut(s, "=")
		if !ok || !strings.HasPrefix(rest, `"`) {
			return out
		}
		rest = rest[1:]
		var v strings.Builder
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
			}
			v.WriteByte(rest[i])
		}
		if i >= len(rest) {
			return out
		}
		out = append(out, strings.TrimSpace(name)+"="+v.String())
		s = strings.TrimLeft(strings.TrimSpace(rest[i+1:]), ",")
		s = strings.TrimSpace(s)
	}
	return out
}
