package engine

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// Labels spoc puts on every object it creates, so that leftovers of an
// interrupted study can be listed and deleted with one selector
// (spoc k8s gc --study NAME, or kubectl delete deploy,svc -l
// app.kubernetes.io/managed-by=spoc).
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelName      = "app.kubernetes.io/name"
	LabelStudy     = "spoc.dev/study"
	LabelTrial     = "spoc.dev/trial"
)

// AnnotationLauncher marks a Deployment with the launcher instance that
// created it (random per launcher): a worker deletes a Deployment whose
// create it cannot confirm only when the mark is its own.
const AnnotationLauncher = "spoc.dev/launcher"

// ManagedBy is the value of LabelManagedBy on spoc's objects.
const ManagedBy = "spoc"

// DefaultContainerPort is the port the server listens on inside its pod.
const DefaultContainerPort = 8000

// DefaultServerContainer names the server container spoc renders, and the
// one it patches in a base manifest with several containers.
const DefaultServerContainer = "server"

// DefaultModelCacheMount is where the model cache volume is mounted: the
// Hugging Face cache of the vllm/vllm-openai image (it runs as root).
const DefaultModelCacheMount = "/root/.cache/huggingface"

// startupProbePeriod spaces the startup probe's checks; its failure
// threshold is the ready timeout over this period, so that a model that
// loads for as long as the ready timeout allows is not restarted.
const startupProbePeriod = 10 * time.Second

// SecretKey names one key of a Kubernetes Secret, whose value spoc never
// reads: the pod gets it through env valueFrom.secretKeyRef.
type SecretKey struct {
	Name string
	Key  string
}

// ModelCache is the volume vLLM keeps downloaded weights in, so that a
// trial does not download the model again: a PersistentVolumeClaim or a
// node's folder (at most one of them).
type ModelCache struct {
	PVC       string
	HostPath  string
	MountPath string // DefaultModelCacheMount when empty
}

// Toleration lets the server pods onto tainted GPU nodes.
type Toleration struct {
	Key, Operator, Value, Effect string
}

// ContainerArgs returns the server container's args for params: the
// rendered args template followed by the trial's flags, as for Process.
func (k *Kubernetes) ContainerArgs(params Params) ([]string, error) {
	return k.argv.Argv(params, k.opts.ContainerPort)
}

// ContainerCommand is ContainerArgs as one line quoted for a POSIX shell:
// what the image's entrypoint runs.
func (k *Kubernetes) ContainerCommand(params Params) (string, error) {
	argv, err := k.ContainerArgs(params)
	if err != nil {
		return "", err
	}
	return quoteArgv(argv), nil
}

// Flavor is the dialect the launcher's servers speak.
func (k *Kubernetes) Flavor() Flavor { return k.argv.opts.Flavor }

// DecodeDeployment decodes a base manifest strictly into the Kubernetes
// API's Deployment type: an unknown or misspelt field is an error naming
// it and its line in source (a file name, for messages).
func DecodeDeployment(source string, data []byte) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %s", locate(source, data, err), strictMessage(err))
	}
	if d.APIVersion != "apps/v1" || d.Kind != "Deployment" {
		return nil, fmt.Errorf("%s: apiVersion %q kind %q: a base manifest is one apps/v1 Deployment", source, d.APIVersion, d.Kind)
	}
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("%s: spec.template.spec.containers: at least one container is needed", source)
	}
	return &d, nil
}

var unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)

// strictMessage drops the decoder's layers from err: "unknown field "x"".
func strictMessage(err error) string {
	msg := err.Error()
	if m := unknownField.FindString(msg); m != "" {
		return m
	}
	msg = strings.TrimPrefix(msg, "error unmarshaling JSON: while decoding JSON: ")
	return strings.TrimPrefix(msg, "error converting YAML to JSON: ")
}

// locate returns "source:LINE" for the unknown field err names (its first
// occurrence as a key), or source.
func locate(source string, data []byte, err error) string {
	m := unknownField.FindStringSubmatch(err.Error())
	if m == nil {
		return source
	}
	name := m[1]
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	key := regexp.MustCompile(`^\s*(-\s+)?"?` + regexp.QuoteMeta(name) + `"?\s*:`)
	for i, line := range strings.Split(string(data), "\n") {
		if key.MatchString(line) {
			return fmt.Sprintf("%s:%d", source, i+1)
		}
	}
	return source
}

// Manifests renders the Deployment and Service of the server named name
// (a DNS label; see ObjectName) configured with params, as one YAML stream.
// The Deployment is the base manifest patched, or spoc's own.
func (k *Kubernetes) Manifests(name string, params Params) ([]byte, error) {
	dep, svc, err := k.render(name, params, false)
	if err != nil {
		return nil, err
	}
	return joinManifests(dep, svc), nil
}

// joinManifests is the YAML stream of a Deployment and a Service.
func joinManifests(dep, svc []byte) []byte {
	return append(append(append([]byte(nil), dep...), "---\n"...), svc...)
}

// render renders the trial's Deployment and Service; with mark the
// Deployment carries this launcher's AnnotationLauncher (what Start
// creates; a dry run cannot know the mark of a later run).
func (k *Kubernetes) render(name string, params Params, mark bool) (dep, svc []byte, err error) {
	d, s, err := k.objects(name, params)
	if err != nil {
		return nil, nil, err
	}
	if mark {
		d.Annotations = mergeLabels(d.Annotations, map[string]string{AnnotationLauncher: k.instance})
	}
	if dep, err = renderObject(d); err != nil {
		return nil, nil, fmt.Errorf("kubernetes engine: render manifests: %w", err)
	}
	if svc, err = renderObject(s); err != nil {
		return nil, nil, fmt.Errorf("kubernetes engine: render manifests: %w", err)
	}
	return dep, svc, nil
}

// objects builds the trial's Deployment and Service.
func (k *Kubernetes) objects(name string, params Params) (*appsv1.Deployment, *corev1.Service, error) {
	args, err := k.ContainerArgs(params)
	if err != nil {
		return nil, nil, err
	}
	o := k.opts
	labels := k.labels(name)
	var d *appsv1.Deployment
	if k.base != nil {
		d = k.base.DeepCopy()
	} else {
		d = &appsv1.Deployment{
			TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: DefaultServerContainer}},
			}}},
		}
	}
	d.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: mergeLabels(d.Labels, labels), Annotations: d.Annotations}
	d.Spec.Replicas = ptrTo(int32(o.Replicas))
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{LabelTrial: name}}
	// Never run two servers of a trial at once: they would compete for
	// the same GPUs.
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	tpl := &d.Spec.Template
	tpl.Labels = mergeLabels(tpl.Labels, labels)
	ps := &tpl.Spec
	ps.TerminationGracePeriodSeconds = ptrTo(int64(o.StopTimeout.Seconds()))
	if len(o.NodeSelector) > 0 {
		ps.NodeSelector = mergeLabels(ps.NodeSelector, o.NodeSelector)
	}
	for _, t := range o.Tolerations {
		ps.Tolerations = append(ps.Tolerations, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	for _, s := range o.ImagePullSecrets {
		if !slices.ContainsFunc(ps.ImagePullSecrets, func(r corev1.LocalObjectReference) bool { return r.Name == s }) {
			ps.ImagePullSecrets = append(ps.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
		}
	}
	c, err := serverContainer(ps, o.Container)
	if err != nil {
		return nil, nil, err
	}
	if o.Image != "" {
		c.Image = o.Image
	}
	c.Args = args
	for _, kv := range sortedEnv(o.Env) {
		n, v, _ := strings.Cut(kv, "=")
		c.Env = setEnv(c.Env, corev1.EnvVar{Name: n, Value: v})
	}
	for _, n := range sortedKeys(o.SecretEnv) {
		ref := o.SecretEnv[n]
		c.Env = setEnv(c.Env, corev1.EnvVar{Name: n, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: ref.Key,
		}}})
	}
	c.Ports = slices.DeleteFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "http" || int(p.ContainerPort) == o.ContainerPort })
	c.Ports = append([]corev1.ContainerPort{{Name: "http", ContainerPort: int32(o.ContainerPort)}}, c.Ports...)
	gpu := corev1.ResourceName(o.GPUResource)
	qty := *resource.NewQuantity(int64(o.GPUsPerReplica), resource.DecimalSI)
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[gpu] = qty
	if c.Resources.Requests != nil {
		c.Resources.Requests[gpu] = qty // an extended resource's request must equal its limit
	}
	health := &corev1.HTTPGetAction{Path: o.HealthPath, Port: intstr.FromString("http")}
	if c.StartupProbe == nil {
		// The model loads before /health answers: the startup probe
		// allows as long as the ready timeout, and no liveness probe
		// runs before it has passed.
		c.StartupProbe = &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: health},
			PeriodSeconds:    int32(startupProbePeriod.Seconds()),
			FailureThreshold: int32(max(1, (o.ReadyTimeout+startupProbePeriod-1)/startupProbePeriod)),
		}
	}
	if c.ReadinessProbe == nil {
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: health.DeepCopy()}, PeriodSeconds: 5, FailureThreshold: 3}
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/dev/shm" }) {
		// vLLM's tensor-parallel workers exchange tensors through shared
		// memory; the container default of 64 MiB is far too small.
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "dshm", MountPath: "/dev/shm"})
		shm := &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
		if o.ShmSize != "" {
			q, err := resource.ParseQuantity(o.ShmSize)
			if err != nil {
				return nil, nil, fmt.Errorf("kubernetes engine: shm size %q: %w", o.ShmSize, err)
			}
			shm.SizeLimit = &q
		}
		ps.Volumes = append(ps.Volumes, corev1.Volume{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: shm}})
	}
	if mc := o.ModelCache; mc.PVC != "" || mc.HostPath != "" {
		mount := mc.MountPath
		if mount == "" {
			mount = DefaultModelCacheMount
		}
		v := corev1.Volume{Name: "model-cache"}
		if mc.PVC != "" {
			v.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: mc.PVC}
		} else {
			v.HostPath = &corev1.HostPathVolumeSource{Path: mc.HostPath, Type: ptrTo(corev1.HostPathDirectoryOrCreate)}
		}
		ps.Volumes = append(ps.Volumes, v)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "model-cache", MountPath: mount})
	}
	s := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{LabelTrial: name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: int32(o.ContainerPort), TargetPort: intstr.FromString("http")}},
		},
	}
	return d, s, nil
}

// labels are the labels of every object of trial name.
func (k *Kubernetes) labels(name string) map[string]string {
	l := map[string]string{LabelManagedBy: ManagedBy, LabelName: "spoc-server", LabelTrial: name}
	if k.opts.Study != "" {
		l[LabelStudy] = LabelValue(k.opts.Study)
	}
	return l
}

// serverContainer returns the container spoc configures: the one named
// want, else the only one.
func serverContainer(ps *corev1.PodSpec, want string) (*corev1.Container, error) {
	if want == "" {
		want = DefaultServerContainer
	}
	for i := range ps.Containers {
		if ps.Containers[i].Name == want {
			return &ps.Containers[i], nil
		}
	}
	if len(ps.Containers) == 1 {
		return &ps.Containers[0], nil
	}
	return nil, fmt.Errorf("kubernetes engine: base manifest has %d containers and none named %q: name the server container with kubernetes.container", len(ps.Containers), want)
}

func setEnv(env []corev1.EnvVar, v corev1.EnvVar) []corev1.EnvVar {
	for i := range env {
		if env[i].Name == v.Name {
			env[i] = v
			return env
		}
	}
	return append(env, v)
}

func mergeLabels(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func ptrTo[T any](v T) *T { return &v }

// renderObject writes obj as YAML without the empty status and creation
// timestamps the API types carry.
func renderObject(obj any) ([]byte, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	prune(m)
	return yaml.Marshal(m)
}

// prune drops null creationTimestamp fields and empty objects the API
// types marshal (resources: {}, status: {}).
func prune(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			prune(val)
			switch y := val.(type) {
			case nil:
				delete(x, k)
			case map[string]any:
				if len(y) == 0 {
					delete(x, k)
				}
			}
		}
	case []any:
		for _, e := range x {
			prune(e)
		}
	}
}

var nonLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// ObjectName returns a DNS-1123 label (lower case alphanumerics and '-',
// at most 63 characters, alphanumeric at both ends) for a launcher's
// seq-th server under prefix: "spoc-default-s12". A negative seq gives the
// prefix alone.
func ObjectName(prefix string, seq int) string {
	suffix := ""
	if seq >= 0 {
		suffix = "-s" + strconv.Itoa(seq)
	}
	p := nonLabel.ReplaceAllString(strings.ToLower(prefix), "-")
	p = strings.Trim(p, "-")
	if p == "" {
		p = "spoc"
	}
	if len(p)+len(suffix) > 63 {
		p = strings.TrimRight(p[:63-len(suffix)], "-")
	}
	return p + suffix
}

var nonLabelValue = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// LabelValue turns a study name into a label value (at most 63 of
// [A-Za-z0-9._-], alphanumeric at both ends), the same for the launcher
// that sets it and `spoc k8s gc` that selects on it.
func LabelValue(s string) string {
	v := nonLabelValue.ReplaceAllString(s, "-")
	if len(v) > 63 {
		v = v[:63]
	}
	return strings.Trim(v, "-._")
}
