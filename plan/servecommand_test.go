package plan

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/vllm"
)

// TestExternalServerFlagsUnknown plans on a server spoc did not start (a
// third-party stand-in that runs max-num-seqs 64 and says only what vLLM
// says on /v1/models and /metrics): the plan prints no command line built
// from engine.params, it says the flags are unknown and shows what the
// server reveals.
func TestExternalServerFlagsUnknown(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc(vllm.PathModels, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"stand-in","object":"model","max_model_len":32768}]}`)
	})
	mux.HandleFunc(vllm.PathMetrics, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "# TYPE vllm:cache_config_info gauge")
		fmt.Fprintln(w, `vllm:cache_config_info{block_size="16",enable_prefix_caching="True",gpu_memory_utilization="0.85"} 1`)
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	ext, err := engine.NewExternal(ts.URL, "stand-in", "", []string{ts.URL + vllm.PathMetrics})
	if err != nil {
		t.Fatal(err)
	}
	p := &planner{s: Setup{Setup: capacity.Setup{Launcher: ext,
		Deployment: capacity.Deployment{Kind: "external", Model: "gpt-oss-20b", GPUs: 1, TensorParallelSize: 1, MaxModelLen: 131072}}}}
	cmd, flags := p.serveCommand(context.Background(), map[string]any{"max-num-seqs": 256, "max-num-batched-tokens": 8192})
	if cmd != "" {
		t.Errorf("serve command %q for a server spoc did not start, want none", cmd)
	}
	for _, want := range []string{"unknown", "did not start", "max_model_len 32768 (/v1/models)", "block_size=16", "gpu_memory_utilization=0.85"} {
		if !strings.Contains(flags, want) {
			t.Errorf("server flags %q do not say %q", flags, want)
		}
	}
	if strings.Contains(cmd+flags, "max-num-seqs 256") {
		t.Errorf("engine.params shown as the server's flags: %q %q", cmd, flags)
	}
}

// TestServeCommandInSGLangForm: the command to run a chosen configuration
// of flavor sglang is SGLang's launch_server with SGLang's flags, not
// vllm serve.
func TestServeCommandInSGLangForm(t *testing.T) {
	d := capacity.Deployment{Kind: "kubernetes", Flavor: engine.FlavorSGLang, Model: "gpt-oss-120b", GPUs: 8, TensorParallelSize: 4, MaxModelLen: 131072}
	got, err := serveCommand(d, map[string]any{"max-running-requests": 128, "disable-radix-cache": false, "schedule-policy": "lpm"})
	want := "python3 -m sglang.launch_server --model-path openai/gpt-oss-120b --context-length 131072 --dp-size 2 --tp-size 4 --max-running-requests 128 --schedule-policy lpm"
	if err != nil || got != want {
		t.Errorf("serveCommand =\n%s (%v)\nwant\n%s", got, err, want)
	}
	d.Flavor = ""
	if got, err := serveCommand(d, nil); err != nil || !strings.HasPrefix(got, "vllm serve openai/gpt-oss-120b --data-parallel-size 2 --max-model-len 131072 --tensor-parallel-size 4") {
		t.Errorf("flavor vllm: %s (%v)", got, err)
	}
	d.Flavor = engine.FlavorGeneric
	if got, err := serveCommand(d, nil); !errors.Is(err, engine.ErrNoProgram) {
		t.Errorf("flavor generic without its launcher: %q, %v; want ErrNoProgram (spoc knows no program of it)", got, err)
	}
}

// TestServeCommandKubernetesGeneric is the bug of issue 35's last stop:
// on Kubernetes with flavor generic the command to run was a vllm serve
// line. It is the container's args: the template and each parameter's
// own template, nothing else.
func TestServeCommandKubernetesGeneric(t *testing.T) {
	fl, err := engine.Generic(map[string][]string{"max-num-seqs": {"--seqs={{.Value}}"}}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	k, err := engine.NewKubernetes(engine.KubernetesOptions{Flavor: fl, Namespace: "ns", Image: "example/strict:1",
		Args: []string{"--listen", "{{.Port}}"}, Model: "m", Replicas: 1, GPUsPerReplica: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := &planner{s: Setup{Setup: capacity.Setup{Launcher: k,
		Deployment: capacity.Deployment{Kind: "kubernetes", Flavor: engine.FlavorGeneric, Model: "m", GPUs: 1, TensorParallelSize: 1, MaxModelLen: 8192}}}}
	cmd, flags := p.serveCommand(context.Background(), map[string]any{"max-num-seqs": 32})
	if want := "--listen 8000 --seqs=32"; cmd != want || flags != "" {
		t.Errorf("command %q (flags %q), want %q", cmd, flags, want)
	}
}
