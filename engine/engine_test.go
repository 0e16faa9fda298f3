package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/sim"
)

func TestServerDirs(t *testing.T) {
	s := newTestSim(t)
	ctx := context.Background()
	// Each Start gets the next folder under Dir, with its own server.log.
	for i, seqs := range []string{"32", "64"} {
		srv, err := s.Start(ctx, Params{"max-num-seqs": seqs})
		if err != nil {
			t.Fatalf("Start %d: %v", i+1, err)
		}
		want := serverLog(s.opts.Dir, i+1)
		if got := srv.Endpoint().Log; got != want {
			t.Errorf("server %d log = %q, want %q", i+1, got, want)
		}
		stop(t, srv)
		b, err := os.ReadFile(want)
		if err != nil {
			t.Fatal(err)
		}
		other := map[string]string{"32": "64", "64": "32"}[seqs]
		if !strings.Contains(string(b), "--max-num-seqs "+seqs) || strings.Contains(string(b), "--max-num-seqs "+other) {
			t.Errorf("server %d log is not its own:\n%s", i+1, b)
		}
	}
	entries, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"server-001", "server-002"}; !slices.Equal(names, want) {
		t.Errorf("Dir holds %q, want %q", names, want)
	}

	// Without Dir, each server gets a temporary folder of its own.
	tmp, err := NewSim(s.base, SimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for i := range 2 {
		srv, err := tmp.Start(ctx, nil)
		if err != nil {
			t.Fatalf("Start %d without Dir: %v", i+1, err)
		}
		log := srv.Endpoint().Log
		t.Cleanup(func() { os.RemoveAll(filepath.Dir(log)) })
		stop(t, srv)
		if filepath.Base(log) != "server.log" || !filepath.IsAbs(log) {
			t.Errorf("server log without Dir = %q", log)
		}
		if _, err := os.Stat(log); err != nil {
			t.Error(err)
		}
		dirs = append(dirs, filepath.Dir(log))
	}
	if dirs[0] == dirs[1] {
		t.Errorf("two servers without Dir share the folder %s", dirs[0])
	}
}

func TestDescribe(t *testing.T) {
	p, err := NewProcess(ProcessOptions{Command: []string{"vllm", "serve", "{{.Model}}", "--port", "{{.Port}}"}})
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewKubernetes(kubeOptions(t, &fakeRunner{}))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewExternal("http://gpu-box:8000/", "m", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := sim.ReferenceDeploymentSpec()
	spec.GPUs = 16 // four replicas, not one engine on 16 GPUs
	fleet := newTestSimOf(t, spec)
	for _, tc := range []struct {
		d    Describer
		want string
	}{
		{p, "vllm serve {{.Model}} --port {{.Port}}"},
		{fleet, "openai/gpt-oss-120b on 16× H100-SXM, 4 replicas of tensor parallel 4"},
		{newTestSim(t), "openai/gpt-oss-120b on 4× H100-SXM, tensor parallel 4"},
		{k, "kubernetes namespace spoc (context gpu), 1×4 nvidia.com/gpu"},
		{e, "http://gpu-box:8000"},
	} {
		if got := tc.d.Describe(); got != tc.want {
			t.Errorf("%T.Describe() = %q, want %q", tc.d, got, tc.want)
		}
	}
}
