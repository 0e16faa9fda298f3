package config

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spoc-project/spoc/engine"
)

// KubePod is what a vLLM pod needs beyond its image and args (engine.kubernetes.pod).
type KubePod struct {
	BaseManifest       string            `yaml:"base_manifest,omitempty" doc:"A Deployment YAML file (the platform's own) that spoc patches instead of rendering its own: it sets name, labels, selector, replicas, the server container's image, args, GPUs and port, adds probes and /dev/shm where missing, and keeps everything else (affinity, security context, sidecars, volumes). Decoded strictly: a misspelt field is an error."`
	Container          string            `yaml:"container,omitempty" doc:"The server container of a base manifest with several (default server)."`
	Env                map[string]string `yaml:"env,omitempty" doc:"Environment variables of the server container."`
	SecretEnv          map[string]string `yaml:"secret_env,omitempty" doc:"Environment variables taken from Secrets, as SECRET/KEY (HF_TOKEN: hf-token/token): the pod reads the value, spoc never does."`
	ModelCachePVC      string            `yaml:"model_cache_pvc,omitempty" doc:"PersistentVolumeClaim mounted as the model cache, so trials do not download the weights again."`
	ModelCacheHostPath string            `yaml:"model_cache_host_path,omitempty" doc:"Node folder mounted as the model cache instead of a PVC."`
	ModelCacheMount    string            `yaml:"model_cache_mount,omitempty" doc:"Where the model cache is mounted (default /root/.cache/huggingface)."`
	ShmSize            string            `yaml:"shm_size,omitempty" doc:"Size limit of the /dev/shm memory volume (16Gi); empty for none."`
	Tolerations        []KubeToleration  `yaml:"tolerations,omitempty" doc:"Tolerations of the server pods (tainted GPU nodes)."`
	ImagePullSecrets   []string          `yaml:"image_pull_secrets,omitempty" doc:"Secrets for pulling a private image."`
}

// KubeToleration is one toleration of the server pods.
type KubeToleration struct {
	Key      string `yaml:"key" doc:"Taint key."`
	Operator string `yaml:"operator,omitempty" doc:"Exists or Equal (default Equal)."`
	Value    string `yaml:"value,omitempty" doc:"Taint value (with Equal)."`
	Effect   string `yaml:"effect,omitempty" doc:"NoSchedule, PreferNoSchedule or NoExecute; empty for all."`
}

// validate checks the pod settings; a base manifest is read and decoded
// strictly here, so that --check finds a misspelt field before any trial.
func (k *KubePod) validate(p string, errs *Errors) {
	names := make([]string, 0, len(k.SecretEnv))
	for name := range k.SecretEnv {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		ref := k.SecretEnv[name]
		if secret, key, ok := strings.Cut(ref, "/"); !ok || secret == "" || key == "" {
			errs.Addf(p+".secret_env."+name, "want SECRET/KEY, got %q", ref)
		}
	}
	if k.ModelCachePVC != "" && k.ModelCacheHostPath != "" {
		errs.Addf(p+".model_cache_host_path", "a model cache is a PVC or a host path, not both")
	}
	for i, t := range k.Tolerations {
		if t.Operator != "" && t.Operator != "Exists" && t.Operator != "Equal" {
			errs.Addf(fmt.Sprintf("%s.tolerations[%d].operator", p, i), "want Exists or Equal, got %q", t.Operator)
		}
		if t.Key == "" && t.Operator != "Exists" {
			errs.Addf(fmt.Sprintf("%s.tolerations[%d].key", p, i), "a toleration without a key needs operator Exists")
		}
	}
	if k.BaseManifest != "" {
		data, err := os.ReadFile(k.BaseManifest)
		if err != nil {
			errs.Addf(p+".base_manifest", "%v", err)
		} else if _, err := engine.DecodeDeployment(k.BaseManifest, data); err != nil {
			errs.Addf(p+".base_manifest", "%v", err)
		}
	}
}

// apply sets the pod settings on the launcher's options.
func (k *KubePod) apply(o *engine.KubernetesOptions) error {
	o.Container = k.Container
	o.Env = k.Env
	if len(k.SecretEnv) > 0 {
		o.SecretEnv = map[string]engine.SecretKey{}
		for name, ref := range k.SecretEnv {
			secret, key, _ := strings.Cut(ref, "/")
			o.SecretEnv[name] = engine.SecretKey{Name: secret, Key: key}
		}
	}
	o.ModelCache = engine.ModelCache{PVC: k.ModelCachePVC, HostPath: k.ModelCacheHostPath, MountPath: k.ModelCacheMount}
	o.ShmSize = k.ShmSize
	for _, t := range k.Tolerations {
		o.Tolerations = append(o.Tolerations, engine.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect})
	}
	o.ImagePullSecrets = k.ImagePullSecrets
	if k.BaseManifest != "" {
		data, err := os.ReadFile(k.BaseManifest)
		if err != nil {
			return fmt.Errorf("engine.kubernetes.pod.base_manifest: %w", err)
		}
		o.BaseManifest, o.BaseManifestSource = data, k.BaseManifest
	}
	return nil
}
