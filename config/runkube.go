package config

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/loadgen"
)

// RunKubernetes places a live run's client in a Kubernetes cluster
// (run.kubernetes): the run.clients shards are the pods of one Indexed
// Job (deploy/kubernetes/spoc-run-job.yaml's shape), started at one
// instant through a ConfigMap, their records streamed back on their logs.
type RunKubernetes struct {
	Namespace        string            `yaml:"namespace,omitempty" doc:"Namespace of the client Job and its ConfigMap (default engine.kubernetes.namespace)."`
	Image            string            `yaml:"image" doc:"spoc's own image (built from the repository's Dockerfile) that runs each shard."`
	Kubectl          string            `yaml:"kubectl,omitempty" doc:"kubectl binary (default engine.kubernetes.kubectl)."`
	Context          string            `yaml:"context,omitempty" doc:"kubectl context (default engine.kubernetes.context)."`
	Kubeconfig       string            `yaml:"kubeconfig,omitempty" doc:"kubeconfig file (default engine.kubernetes.kubeconfig, else $KUBECONFIG or ~/.kube/config)."`
	ServiceAccount   string            `yaml:"service_account,omitempty" doc:"ServiceAccount of the shard pods, allowed to get and watch ConfigMaps (default spoc-client: the Role in deploy/kubernetes/spoc-run-job.yaml)."`
	NodeSelector     map[string]string `yaml:"node_selector,omitempty" doc:"Node selector of the shard pods (client nodes, not the GPU nodes)."`
	Tolerations      []KubeToleration  `yaml:"tolerations,omitempty" doc:"Tolerations of the shard pods."`
	ImagePullSecrets []string          `yaml:"image_pull_secrets,omitempty" doc:"Secrets for pulling spoc's image."`
	CPU              string            `yaml:"cpu,omitempty" doc:"CPU request of each shard pod (default 2)."`
	Memory           string            `yaml:"memory,omitempty" doc:"Memory request of each shard pod (default 1Gi)."`
	CPULimit         string            `yaml:"cpu_limit,omitempty" doc:"CPU limit of each shard pod (default none); a limit below what the shard needs makes it client-bound, which its check reports."`
	MemoryLimit      string            `yaml:"memory_limit,omitempty" doc:"Memory limit of each shard pod (default none)."`
	APIKeySecret     string            `yaml:"api_key_secret,omitempty" doc:"The Secret holding the API key as SECRET/KEY, needed with run.api_key_env: the pods read the key from it; spoc never puts it in the Job or ConfigMap."`
	ReadyTimeout     Duration          `yaml:"ready_timeout,omitempty" doc:"How long spoc waits for every shard pod to run (default 10m: image pulls, scheduling)."`
}

func (k *RunKubernetes) validate(p string, c *Config, errs *Errors) {
	if k.Image == "" {
		errs.Addf(p+".image", "the client pods need spoc's image (built from the repository's Dockerfile)")
	}
	if k.namespace(c.Engine) == "" {
		errs.Addf(p+".namespace", "the client Job needs a namespace")
	}
	for _, q := range []struct{ key, v string }{{"cpu", k.CPU}, {"memory", k.Memory}, {"cpu_limit", k.CPULimit}, {"memory_limit", k.MemoryLimit}} {
		if q.v == "" {
			continue
		}
		if _, err := resource.ParseQuantity(q.v); err != nil {
			errs.Addf(p+"."+q.key, "want a Kubernetes quantity such as 2, 500m or 1Gi, got %q", q.v)
		}
	}
	for i, t := range k.Tolerations {
		if t.Operator != "" && t.Operator != "Exists" && t.Operator != "Equal" {
			errs.Addf(fmt.Sprintf("%s.tolerations[%d].operator", p, i), "want Exists or Equal, got %q", t.Operator)
		}
	}
	if k.APIKeySecret != "" {
		if s, key, ok := strings.Cut(k.APIKeySecret, "/"); !ok || s == "" || key == "" {
			errs.Addf(p+".api_key_secret", "want SECRET/KEY, got %q", k.APIKeySecret)
		}
	} else if c.Run.APIKeyEnv != "" {
		errs.Addf(p+".api_key_secret", "run.api_key_env is set: the client pods take the key from a Secret (SECRET/KEY); spoc does not put it in the cluster")
	}
	if c.Engine.Kind == EngineSim && c.Run.Target == "" {
		errs.Addf(p, "client pods need a live engine: the simulator (engine.kind sim) runs in virtual time and has no client")
	}
}

func (k *RunKubernetes) namespace(e Engine) string {
	if k.Namespace != "" {
		return k.Namespace
	}
	if e.Kind == EngineKubernetes {
		return e.Kubernetes.Namespace
	}
	return ""
}

// podLauncher is the run's client Job launcher, for capacity.Client.Pods.
func (k *RunKubernetes) podLauncher(e Engine, study string) loadgen.PodLauncher {
	o := engine.ClientJobOptions{
		Namespace: k.namespace(e), Context: k.Context, Kubeconfig: k.Kubeconfig, Image: k.Image,
		ServiceAccount: k.ServiceAccount, NodeSelector: k.NodeSelector, ImagePullSecrets: k.ImagePullSecrets,
		CPU: k.CPU, Memory: k.Memory, CPULimit: k.CPULimit, MemoryLimit: k.MemoryLimit,
		Study: study, ReadyTimeout: time.Duration(k.ReadyTimeout),
	}
	kubectl := k.Kubectl
	if e.Kind == EngineKubernetes {
		if o.Context == "" {
			o.Context = e.Kubernetes.Context
		}
		if o.Kubeconfig == "" {
			o.Kubeconfig = e.Kubernetes.Kubeconfig
		}
		if kubectl == "" {
			kubectl = e.Kubernetes.Kubectl
		}
	}
	o.Runner = engine.ExecRunner{Binary: kubectl}
	for _, t := range k.Tolerations {
		o.Tolerations = append(o.Tolerations, engine.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect})
	}
	if s, key, ok := strings.Cut(k.APIKeySecret, "/"); ok {
		o.APIKeySecret = &engine.SecretKey{Name: s, Key: key}
	}
	jobs, err := engine.NewClientJobs(o)
	return func(ctx context.Context, shards int, job []byte) (loadgen.PodJob, error) {
		if err != nil {
			return nil, err
		}
		j, err := jobs.Launch(ctx, shards, job)
		if err != nil {
			return nil, err
		}
		return j, nil
	}
}
