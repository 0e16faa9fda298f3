package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/engine"
)

const kubeConfigYAML = `engine:
  kind: kubernetes
  kubernetes:
    namespace: llm
    image: vllm/vllm-openai:v0.11.0
    pod:
      base_manifest: BASE
      secret_env:
        HF_TOKEN: hf-token/token
      model_cache_pvc: hf-cache
      shm_size: 16Gi
      tolerations:
        - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
      image_pull_secrets: [regcred]
`

const kubeBase = `apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      priorityClassName: gpu-batch
      containers:
        - name: server
`

func loadKube(t *testing.T, base string) (*Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "base.yaml")
	if err := os.WriteFile(path, []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(strings.NewReader(strings.Replace(kubeConfigYAML, "BASE", path, 1)), "spoc.yaml")
}

// The pod settings reach the rendered Deployment: the Secret by
// reference, the cache claim, the base manifest's own fields.
func TestKubernetesPodSettings(t *testing.T) {
	c, err := loadKube(t, kubeBase)
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Engine.Launcher(LauncherOptions{Study: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := l.(engine.DryRunner).DryRun(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"secretKeyRef:", "name: hf-token", "claimName: hf-cache", "sizeLimit: 16Gi", "operator: Exists", "name: regcred", "priorityClassName: gpu-batch", "spoc.dev/study: s1"} {
		if !strings.Contains(out, want) {
			t.Errorf("manifests lack %q:\n%s", want, out)
		}
	}
}

// engine.kubernetes.stop_timeout is the pod's grace period;
// engine.process.stop_timeout (the process group's) does not reach it.
func TestKubernetesStopTimeoutIsItsOwn(t *testing.T) {
	c, err := Load(strings.NewReader(`engine:
  kind: kubernetes
  process: {stop_timeout: 5s}
  kubernetes: {namespace: llm, image: vllm/vllm-openai:v0.11.0, stop_timeout: 2m}
`), "spoc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Engine.Launcher(LauncherOptions{Study: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := l.(engine.DryRunner).DryRun(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "terminationGracePeriodSeconds: 120") {
		t.Errorf("manifests lack the kubernetes stop_timeout as grace period (120 s):\n%s", out)
	}
}

// A misspelt field of the base manifest fails the configuration, naming
// the key, the manifest's line and the field.
func TestKubernetesBaseManifestTypo(t *testing.T) {
	_, err := loadKube(t, strings.Replace(kubeBase, "priorityClassName", "priorityClasName", 1))
	if err == nil || !strings.Contains(err.Error(), "engine.kubernetes.pod.base_manifest") || !strings.Contains(err.Error(), `base.yaml:6: unknown field "priorityClasName"`) {
		t.Fatalf("Load = %v, want the key, the manifest line and the field", err)
	}
}

func TestKubernetesPodValidation(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{"hf-token/token", "hf-token", "engine.kubernetes.pod.secret_env.HF_TOKEN"},
		{"operator: Exists", "operator: Sometimes", "engine.kubernetes.pod.tolerations[0].operator"},
		{"model_cache_pvc: hf-cache", "model_cache_pvc: hf-cache\n      model_cache_host_path: /data", "engine.kubernetes.pod.model_cache_host_path"},
	} {
		path := filepath.Join(t.TempDir(), "base.yaml")
		os.WriteFile(path, []byte(kubeBase), 0o644)
		yml := strings.Replace(strings.Replace(kubeConfigYAML, "BASE", path, 1), tc.from, tc.to, 1)
		if _, err := Load(strings.NewReader(yml), "spoc.yaml"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s: Load = %v, want an error at %s", tc.from, tc.to, err, tc.want)
		}
	}
}
