package telemetry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The deploy/ files ship with spoc; these tests keep them consistent with the
// catalog, so a renamed metric cannot leave a dashboard panel empty.

const deployDir = "../deploy/"

// metricToken finds metric names in PromQL: vLLM's are prefixed "vllm:" and
// dcgm-exporter's "DCGM_".
var metricToken = regexp.MustCompile(`\b(?:vllm:[a-zA-Z0-9_:]+|DCGM_[A-Z0-9_]+)`)

func TestGrafanaDashboardNamesCatalogMetrics(t *testing.T) {
	b, err := os.ReadFile(deployDir + "grafana/spoc-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title      string `json:"title"`
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			GridPos struct {
				H, W, X, Y int
			} `json:"gridPos"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard is not valid JSON: %v", err)
	}
	if dash.Title == "" || dash.UID == "" {
		t.Error("dashboard needs a title and a uid")
	}
	ids := map[int]bool{}
	graphs := 0
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: grid position %+v outside the 24 columns", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		graphs++
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			checkPromQL(t, "panel "+p.Title+" query "+tg.RefID, tg.Expr)
		}
	}
	if graphs < 15 {
		t.Errorf("dashboard has %d graph panels; the methodology needs the engine, latency and GPU views", graphs)
	}
	for _, v := range dash.Templating.List {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) == nil && q.Query != "" {
			checkPromQL(t, "variable "+v.Name, q.Query)
		}
	}
}

// checkPromQL fails when expr names no metric or one outside the catalog.
func checkPromQL(t *testing.T, where, expr string) {
	t.Helper()
	names := metricToken.FindAllString(expr, -1)
	if len(names) == 0 {
		t.Errorf("%s: %q names no vLLM or DCGM metric", where, expr)
	}
	for _, n := range names {
		if _, _, _, ok := Lookup(n); !ok {
			t.Errorf("%s: metric %q is not in the catalog", where, n)
		}
	}
	if strings.Count(expr, "(") != strings.Count(expr, ")") || strings.Count(expr, "{") != strings.Count(expr, "}") {
		t.Errorf("%s: unbalanced brackets in %q", where, expr)
	}
}

func TestDCGMCountersEnableCatalog(t *testing.T) {
	f, err := os.Open(deployDir + "dcgm-exporter/spoc-counters.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fields := readCounters(t, f)
	for _, m := range Catalog() {
		if m.Source != SourceDCGM {
			continue
		}
		found := fields[m.Name]
		for _, a := range m.Aliases {
			found = found || fields[a]
		}
		if !found {
			t.Errorf("catalog metric %s is not enabled in spoc-counters.csv", m.Name)
		}
	}
	for _, need := range []string{"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
		"DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
		"DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_NVLINK_RX_BYTES"} {
		if !fields[need] {
			t.Errorf("spoc-counters.csv lacks %s", need)
		}
	}
}

// readCounters parses dcgm-exporter's counters format and returns the
// enabled fields; malformed lines fail the test.
func readCounters(t *testing.T, r io.Reader) map[string]bool {
	t.Helper()
	fields := map[string]bool{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		parts := strings.SplitN(l, ",", 3)
		if len(parts) != 3 {
			t.Errorf("counters line %d: want FIELD, TYPE, HELP: %q", line, l)
			continue
		}
		name, kind := strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])
		if !regexp.MustCompile(`^DCGM_FI_[A-Z0-9_]+$`).MatchString(name) {
			t.Errorf("counters line %d: bad field name %q", line, name)
		}
		if kind != "gauge" && kind != "counter" && kind != "label" {
			t.Errorf("counters line %d: type %q is not gauge, counter or label", line, kind)
		}
		if m, _, _, ok := Lookup(name); ok && string(m.Kind) != kind {
			t.Errorf("counters line %d: %s is a %s in the catalog, %s here", line, name, m.Kind, kind)
		}
		if fields[name] {
			t.Errorf("counters line %d: %s enabled twice", line, name)
		}
		fields[name] = true
	}
	return fields
}

func TestKubernetesManifests(t *testing.T) {
	docs := yamlDocs(t, deployDir+"kubernetes/dcgm-exporter.yaml")
	docs = append(docs, yamlDocs(t, deployDir+"kubernetes/servicemonitor.yaml")...)
	kinds := map[string]map[string]any{}
	for _, d := range docs {
		kind, _ := d["kind"].(string)
		if kind == "" || d["apiVersion"] == nil {
			t.Errorf("manifest without kind or apiVersion: %v", d)
			continue
		}
		name := dig(d, "metadata", "name").(string)
		kinds[kind+"/"+name] = d
	}
	for _, want := range []string{"ConfigMap/spoc-dcgm-counters", "DaemonSet/dcgm-exporter", "Service/dcgm-exporter", "ServiceMonitor/dcgm-exporter", "ServiceMonitor/vllm"} {
		if kinds[want] == nil {
			t.Errorf("missing %s", want)
		}
	}
	// The ConfigMap carries the counters file verbatim.
	csv, err := os.ReadFile(deployDir + "dcgm-exporter/spoc-counters.csv")
	if err != nil {
		t.Fatal(err)
	}
	if cm := kinds["ConfigMap/spoc-dcgm-counters"]; cm != nil {
		if got := dig(cm, "data", "spoc-counters.csv"); got != string(csv) {
			t.Error("ConfigMap spoc-dcgm-counters differs from deploy/dcgm-exporter/spoc-counters.csv")
		}
	}
	// The ServiceMonitor's port is a port of the Service it selects.
	if svc, sm := kinds["Service/dcgm-exporter"], kinds["ServiceMonitor/dcgm-exporter"]; svc != nil && sm != nil {
		port := dig(sm, "spec", "endpoints").([]any)[0].(map[string]any)["port"]
		found := false
		for _, p := range dig(svc, "spec", "ports").([]any) {
			found = found || p.(map[string]any)["name"] == port
		}
		if !found {
			t.Errorf("ServiceMonitor port %v is not a port of Service dcgm-exporter", port)
		}
		if dig(sm, "spec", "selector", "matchLabels", "app.kubernetes.io/name") != dig(svc, "metadata", "labels", "app.kubernetes.io/name") {
			t.Error("ServiceMonitor dcgm-exporter does not select the Service's labels")
		}
	}
}

func TestPrometheusConfig(t *testing.T) {
	docs := yamlDocs(t, deployDir+"prometheus/prometheus.yml")
	if len(docs) != 1 {
		t.Fatalf("%d documents", len(docs))
	}
	jobs := map[string]bool{}
	for _, sc := range dig(docs[0], "scrape_configs").([]any) {
		jobs[sc.(map[string]any)["job_name"].(string)] = true
	}
	if !jobs["vllm"] || !jobs["dcgm"] {
		t.Errorf("jobs = %v, want vllm and dcgm", jobs)
	}
	if !testing.Short() {
		// The real Prometheus accepts the file.
		startPrometheusConfigCheck(t, deployDir+"prometheus/prometheus.yml")
	}
}

func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if d != nil {
			out = append(out, d)
		}
	}
	return out
}

func dig(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}
