package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The client shards of a split run on Kubernetes (run.kubernetes) are the
// pods of one Indexed Job, in the shape of deploy/kubernetes/spoc-run-job.yaml:
// completions = parallelism = shards, backoffLimit 0 and restartPolicy Never
// (a shard that dies is never retried: the run fails), the pod's completion
// index is its shard. Their one start goes through a ConfigMap of the same
// name: spoc writes the run's shard job into it before the Job exists, waits
// until every pod is Running and ready, then writes the agreed start instant
// (ClientKeyStart) that every shard watches for; Ctrl-C writes ClientKeyStop.
// The shards' records come back on their logs, which spoc follows.
const (
	// ClientKeyJob holds the run's loadgen shard job (JSON, without the
	// API key, which the pods read from a Secret).
	ClientKeyJob = "job.json"
	// ClientKeyStart holds the agreed start instant (RFC 3339, ns).
	ClientKeyStart = "start"
	// ClientKeyStop, once present, stops every shard, keeping what it
	// measured (Ctrl-C).
	ClientKeyStop = "stop"
	// LabelRun names the run's Job on its ConfigMap and pods.
	LabelRun = "spoc.dev/run"
	// ClientContainer names the shard container.
	ClientContainer = "spoc"
	// DefaultClientServiceAccount is the shards' ServiceAccount, which may
	// get and watch ConfigMaps in the namespace (the Role in
	// deploy/kubernetes/spoc-run-job.yaml).
	DefaultClientServiceAccount = "spoc-client"
	// DefaultClientCPU and DefaultClientMemory are each shard pod's
	// requests (the shipped manifest's).
	DefaultClientCPU    = "2"
	DefaultClientMemory = "1Gi"
	// ConfigMapFlag is the client-shard flag naming the ConfigMap.
	ConfigMapFlag = "--kubernetes-configmap"
	// ServiceAccountDirFlag is the client-shard flag naming the folder of
	// the pod's service-account token, CA and namespace; the kubelet
	// mounts them at DefaultServiceAccountDir.
	ServiceAccountDirFlag    = "--service-account-dir"
	DefaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	// APIKeyEnvVar is the shard container's variable holding the API key
	// (from ClientJobOptions.APIKeySecret).
	APIKeyEnvVar = "SPOC_API_KEY"
	// annotationIndex is the completion index the Job controller gives
	// each pod of an Indexed Job.
	annotationIndex = "batch.kubernetes.io/job-completion-index"
)

// ClientJobOptions configure where the client shards of a split run run
// (run.kubernetes).
type ClientJobOptions struct {
	// Namespace, Context and Kubeconfig select the cluster as for the
	// kubernetes engine; Runner runs kubectl (ExecRunner{} when nil).
	Namespace  string
	Context    string
	Kubeconfig string
	Runner     Runner
	// Image is spoc's own image (the repository's Dockerfile).
	Image string
	// ServiceAccount runs the pods (DefaultClientServiceAccount).
	ServiceAccount string
	// NodeSelector, Tolerations and ImagePullSecrets place the pods.
	NodeSelector     map[string]string
	Tolerations      []Toleration
	ImagePullSecrets []string
	// CPU and Memory are each pod's requests (DefaultClientCPU,
	// DefaultClientMemory); CPULimit and MemoryLimit its limits ("" none).
	CPU, Memory           string
	CPULimit, MemoryLimit string
	// APIKeySecret, when set, gives the pods the API key from a Secret.
	APIKeySecret *SecretKey
	// Study labels the objects (LabelStudy), for spoc k8s gc.
	Study string
	// ReadyTimeout bounds the wait for every pod to be ready
	// (DefaultClientReadyTimeout); PollInterval spaces the status checks
	// (time.Second).
	ReadyTimeout time.Duration
	PollInterval time.Duration
	// NamePrefix starts the Job's name ("spoc-run"); a random suffix
	// makes it unique.
	NamePrefix string
	Logger     *slog.Logger
}

// DefaultClientReadyTimeout bounds the wait for the shard pods (image
// pull, scheduling).
const DefaultClientReadyTimeout = 10 * time.Minute

// ClientJobs starts the Jobs of split runs.
type ClientJobs struct {
	opts ClientJobOptions
}

// NewClientJobs validates o.
func NewClientJobs(o ClientJobOptions) (*ClientJobs, error) {
	if o.Namespace == "" {
		return nil, errors.New("run.kubernetes: namespace is required")
	}
	if o.Image == "" {
		return nil, errors.New("run.kubernetes: image (spoc's own) is required")
	}
	if o.Runner == nil {
		o.Runner = ExecRunner{}
	}
	if o.ServiceAccount == "" {
		o.ServiceAccount = DefaultClientServiceAccount
	}
	if o.CPU == "" {
		o.CPU = DefaultClientCPU
	}
	if o.Memory == "" {
		o.Memory = DefaultClientMemory
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = DefaultClientReadyTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.NamePrefix == "" {
		o.NamePrefix = "spoc-run"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &ClientJobs{opts: o}
	if _, _, err := c.Manifests("spoc-run-check", 2, []byte("{}")); err != nil {
		return nil, err
	}
	return c, nil
}

// Check verifies that kubectl can be found when the default runner is used.
func (c *ClientJobs) Check() error {
	if r, ok := c.opts.Runner.(ExecRunner); ok {
		if _, err := exec.LookPath(r.binary()); err != nil {
			return fmt.Errorf("run.kubernetes: %w", err)
		}
	}
	return nil
}

// Manifests renders the run's ConfigMap (holding job) and its Indexed Job
// of shards pods, both named name.
func (c *ClientJobs) Manifests(name string, shards int, job []byte) (cm, jb []byte, err error) {
	m, j, err := c.objects(name, shards, job)
	if err != nil {
		return nil, nil, err
	}
	if cm, err = renderObject(m); err != nil {
		return nil, nil, err
	}
	if jb, err = renderObject(j); err != nil {
		return nil, nil, err
	}
	return cm, jb, nil
}

func (c *ClientJobs) objects(name string, shards int, job []byte) (*corev1.ConfigMap, *batchv1.Job, error) {
	o := c.opts
	if shards < 1 {
		return nil, nil, fmt.Errorf("run.kubernetes: %d shards", shards)
	}
	labels := map[string]string{LabelManagedBy: ManagedBy, LabelName: "spoc-run", LabelRun: name}
	if o.Study != "" {
		labels[LabelStudy] = LabelValue(o.Study)
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels},
		Data:       map[string]string{ClientKeyJob: string(job)},
	}
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{}}
	for _, q := range []struct {
		field, v string
		list     *corev1.ResourceList
		name     corev1.ResourceName
	}{{"cpu", o.CPU, &res.Requests, corev1.ResourceCPU}, {"memory", o.Memory, &res.Requests, corev1.ResourceMemory},
		{"cpu_limit", o.CPULimit, &res.Limits, corev1.ResourceCPU}, {"memory_limit", o.MemoryLimit, &res.Limits, corev1.ResourceMemory}} {
		if q.v == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.v)
		if err != nil {
			return nil, nil, fmt.Errorf("run.kubernetes.%s: %q: %w", q.field, q.v, err)
		}
		if *q.list == nil {
			*q.list = corev1.ResourceList{}
		}
		(*q.list)[q.name] = v
	}
	ctr := corev1.Container{
		Name:    ClientContainer,
		Image:   o.Image,
		Command: []string{"spoc", "client-shard"},
		Args:    []string{ConfigMapFlag, name, ServiceAccountDirFlag, DefaultServiceAccountDir},
		Env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
		Resources: res,
	}
	if s := o.APIKeySecret; s != nil {
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: APIKeyEnvVar, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.Name}, Key: s.Key}}})
	}
	ps := corev1.PodSpec{
		RestartPolicy:      corev1.RestartPolicyNever,
		ServiceAccountName: o.ServiceAccount,
		NodeSelector:       o.NodeSelector,
		Containers:         []corev1.Container{ctr},
	}
	for _, t := range o.Tolerations {
		ps.Tolerations = append(ps.Tolerations, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	for _, s := range o.ImagePullSecrets {
		ps.ImagePullSecrets = append(ps.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	indexed := batchv1.IndexedCompletion
	j := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode: &indexed,
			Completions:    ptrTo(int32(shards)),
			Parallelism:    ptrTo(int32(shards)),
			BackoffLimit:   ptrTo(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       ps,
			},
		},
	}
	return cm, j, nil
}

// kubectl prefixes args with the cluster and namespace flags.
func (c *ClientJobs) kubectl(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	var pre []string
	if c.opts.Kubeconfig != "" {
		pre = append(pre, "--kubeconfig", c.opts.Kubeconfig)
	}
	if c.opts.Context != "" {
		pre = append(pre, "--context", c.opts.Context)
	}
	pre = append(pre, "--namespace", c.opts.Namespace)
	return c.opts.Runner.Run(ctx, stdin, append(pre, args...)...)
}

// ClientJob is one split run's ConfigMap and Job.
type ClientJob struct {
	c      *ClientJobs
	name   string
	shards int
}

// Launch creates the run's ConfigMap holding job, then its Job of shards
// pods. On error nothing is left.
func (c *ClientJobs) Launch(ctx context.Context, shards int, job []byte) (*ClientJob, error) {
	name := fmt.Sprintf("%s-%08x", ObjectName(c.opts.NamePrefix, -1), rand.Uint32())
	cm, jb, err := c.Manifests(name, shards, job)
	if err != nil {
		return nil, err
	}
	j := &ClientJob{c: c, name: name, shards: shards}
	if _, err := c.kubectl(ctx, cm, "create", "-f", "-"); err != nil {
		j.cleanUp(ctx)
		return nil, fmt.Errorf("run.kubernetes: create configmap %s: %w", name, err)
	}
	if _, err := c.kubectl(ctx, jb, "create", "-f", "-"); err != nil {
		j.cleanUp(ctx)
		return nil, fmt.Errorf("run.kubernetes: create job %s: %w", name, err)
	}
	c.opts.Logger.Info("client job created", "job", name, "namespace", c.opts.Namespace, "shards", shards)
	return j, nil
}

// Name is the Job's (and ConfigMap's) name.
func (j *ClientJob) Name() string { return j.name }

func (j *ClientJob) cleanUp(ctx context.Context) {
	if err := j.Delete(ctx); err != nil {
		j.c.opts.Logger.Warn("delete client job", "job", j.name, "err", err)
	}
}

// pods lists the Job's pods by completion index.
func (j *ClientJob) pods(ctx context.Context) (map[int]pod, error) {
	out, err := j.c.kubectl(ctx, nil, "get", "pods", "--selector", LabelRun+"="+j.name, "--output", "json")
	if err != nil {
		return nil, err
	}
	var list podList
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("decode pod list: %w", err)
	}
	byIndex := map[int]pod{}
	for _, p := range list.Items {
		idx, err := strconv.Atoi(p.Metadata.Annotations[annotationIndex])
		if err != nil {
			continue
		}
		if old, ok := byIndex[idx]; ok && old.Metadata.DeletionTimestamp == "" && p.Metadata.DeletionTimestamp != "" {
			continue
		}
		byIndex[idx] = p
	}
	return byIndex, nil
}

// AwaitReady waits until every shard's pod is Running with its container
// ready and returns the pods' names by shard. A pod that cannot start (its
// image, its configuration), ends, or is not ready within the ready timeout
// fails the wait, naming it.
func (j *ClientJob) AwaitReady(ctx context.Context) ([]string, error) {
	o := j.c.opts
	deadline := time.Now().Add(o.ReadyTimeout)
	status := "no pod yet"
	for {
		pods, err := j.pods(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("run.kubernetes: job %s: %w", j.name, err)
		}
		names := make([]string, j.shards)
		ready := 0
		for idx, p := range pods {
			if idx < 0 || idx >= j.shards {
				continue
			}
			names[idx] = p.Metadata.Name
			if p.Status.Phase == "Succeeded" || p.Status.Phase == "Failed" {
				return nil, fmt.Errorf("run.kubernetes: pod %s (shard %d) ended before the start: %s", p.Metadata.Name, idx, podEnd(&p))
			}
			for _, c := range p.Status.ContainerStatuses {
				if w := c.State.Waiting; w != nil && setupWaitReasons[w.Reason] {
					return nil, fmt.Errorf("run.kubernetes: pod %s (shard %d): %s: %s", p.Metadata.Name, idx, w.Reason, w.Message)
				}
				if t := c.State.Terminated; t != nil {
					return nil, fmt.Errorf("run.kubernetes: pod %s (shard %d) ended before the start: %s", p.Metadata.Name, idx, podEnd(&p))
				}
			}
			if p.Status.Phase == "Running" && p.ready() {
				ready++
			} else {
				status = fmt.Sprintf("pod %s: %s", p.Metadata.Name, p.Status.Phase)
			}
		}
		if ready == j.shards {
			o.Logger.Info("client pods ready", "job", j.name, "pods", names)
			return names, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("run.kubernetes: job %s: %d of %d pods ready after %s (%s)", j.name, ready, j.shards, o.ReadyTimeout, status)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(o.PollInterval):
		}
	}
}

// podEnd says how a pod ended: its phase and its container's exit.
func podEnd(p *pod) string {
	parts := []string{"phase " + p.Status.Phase}
	if p.Status.Reason != "" {
		parts = append(parts, p.Status.Reason)
	}
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			parts = append(parts, fmt.Sprintf("container %s exited with code %d (%s)", c.Name, t.ExitCode, t.Reason))
		}
	}
	return strings.Join(parts, ", ")
}

// streamer is a Runner that can follow a long output (ExecRunner).
type streamer interface {
	Stream(ctx context.Context, w io.Writer, args ...string) error
}

// Follow copies the log of pod to w until the pod's container ends (or
// ctx does).
func (j *ClientJob) Follow(ctx context.Context, pod string, w io.Writer) error {
	s, ok := j.c.opts.Runner.(streamer)
	if !ok {
		return fmt.Errorf("run.kubernetes: the kubectl runner %T cannot follow a log", j.c.opts.Runner)
	}
	o := j.c.opts
	var pre []string
	if o.Kubeconfig != "" {
		pre = append(pre, "--kubeconfig", o.Kubeconfig)
	}
	if o.Context != "" {
		pre = append(pre, "--context", o.Context)
	}
	pre = append(pre, "--namespace", o.Namespace)
	return s.Stream(ctx, w, append(pre, "logs", "--follow", "pod/"+pod, "--container", ClientContainer)...)
}

// Signal writes value under key in the run's ConfigMap (ClientKeyStart,
// ClientKeyStop).
func (j *ClientJob) Signal(ctx context.Context, key, value string) error {
	patch, err := json.Marshal(map[string]any{"data": map[string]string{key: value}})
	if err != nil {
		return err
	}
	if _, err := j.c.kubectl(ctx, nil, "patch", "configmap/"+j.name, "--type", "merge", "--patch", string(patch)); err != nil {
		return fmt.Errorf("run.kubernetes: write %s to configmap %s: %w", key, j.name, err)
	}
	return nil
}

// Ended says how pod ended: nil when it succeeded, else an error naming
// it (failed with its exit, deleted, still running when its log ended).
func (j *ClientJob) Ended(ctx context.Context, name string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := j.c.kubectl(ctx, nil, "get", "pod/"+name, "--ignore-not-found", "--output", "json")
		if err != nil {
			return fmt.Errorf("pod %s: %w", name, err)
		}
		if len(strings.TrimSpace(string(out))) == 0 {
			return fmt.Errorf("pod %s was deleted", name)
		}
		var p pod
		if err := json.Unmarshal(out, &p); err != nil {
			return fmt.Errorf("pod %s: decode: %w", name, err)
		}
		switch {
		case p.Status.Phase == "Succeeded":
			return nil
		case p.Status.Phase == "Failed":
			return fmt.Errorf("pod %s failed: %s", name, podEnd(&p))
		case p.Metadata.DeletionTimestamp != "":
			return fmt.Errorf("pod %s was deleted", name)
		}
		// the log ends a moment before the phase is written
		if time.Now().After(deadline) {
			return fmt.Errorf("pod %s: its log ended but the pod is %s", name, podEnd(&p))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Pods lists the names of every pod the Job has had, sorted (a pod that
// was retried would show as a second pod of its index).
func (j *ClientJob) Pods(ctx context.Context) ([]string, error) {
	out, err := j.c.kubectl(ctx, nil, "get", "pods", "--selector", LabelRun+"="+j.name, "--output", "name")
	if err != nil {
		return nil, err
	}
	names := strings.Fields(string(out))
	sort.Strings(names)
	return names, nil
}

// Delete deletes the Job (its pods with it) and the ConfigMap, waiting
// until they are gone.
func (j *ClientJob) Delete(ctx context.Context) error {
	if _, err := j.c.kubectl(ctx, nil, "delete", "job/"+j.name, "configmap/"+j.name,
		"--ignore-not-found", "--cascade=foreground", "--wait=true", "--timeout=2m"); err != nil {
		return fmt.Errorf("run.kubernetes: delete job %s: %w", j.name, err)
	}
	return nil
}

// Start writes the agreed start instant every shard waits for.
func (j *ClientJob) Start(ctx context.Context, at time.Time) error {
	return j.Signal(ctx, ClientKeyStart, at.UTC().Format(time.RFC3339Nano))
}

// Stop tells every shard to stop now, keeping what it measured.
func (j *ClientJob) Stop(ctx context.Context) error {
	return j.Signal(ctx, ClientKeyStop, time.Now().UTC().Format(time.RFC3339Nano))
}
