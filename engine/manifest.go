package engine

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Labels spoc puts on every object it creates, so that leftovers of an
// interrupted study can be listed and deleted with one selector
// (kubectl delete deploy,svc -l app.kubernetes.io/managed-by=spoc).
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelName      = "app.kubernetes.io/name"
	LabelTrial     = "spoc.dev/trial"
)

// DefaultContainerPort is the port the server listens on inside its pod.
const DefaultContainerPort = 8000

// Minimal Kubernetes object shapes: only the fields spoc sets, in the order
// people write them, so the rendered YAML reads like a hand-written one.
type (
	objectMeta struct {
		Name      string            `yaml:"name,omitempty"`
		Namespace string            `yaml:"namespace,omitempty"`
		Labels    map[string]string `yaml:"labels,omitempty"`
	}
	deployment struct {
		APIVersion string         `yaml:"apiVersion"`
		Kind       string         `yaml:"kind"`
		Metadata   objectMeta     `yaml:"metadata"`
		Spec       deploymentSpec `yaml:"spec"`
	}
	deploymentSpec struct {
		Replicas int             `yaml:"replicas"`
		Selector labelSelector   `yaml:"selector"`
		Strategy map[string]any  `yaml:"strategy"`
		Template podTemplateSpec `yaml:"template"`
	}
	labelSelector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	podTemplateSpec struct {
		Metadata objectMeta `yaml:"metadata"`
		Spec     podSpec    `yaml:"spec"`
	}
	podSpec struct {
		TerminationGracePeriodSeconds int               `yaml:"terminationGracePeriodSeconds"`
		NodeSelector                  map[string]string `yaml:"nodeSelector,omitempty"`
		Containers                    []container       `yaml:"containers"`
		Volumes                       []volume          `yaml:"volumes"`
	}
	container struct {
		Name           string          `yaml:"name"`
		Image          string          `yaml:"image"`
		Args           []string        `yaml:"args"`
		Env            []envVar        `yaml:"env,omitempty"`
		Ports          []containerPort `yaml:"ports"`
		Resources      resources       `yaml:"resources"`
		ReadinessProbe probeSpec       `yaml:"readinessProbe"`
		VolumeMounts   []volumeMount   `yaml:"volumeMounts"`
	}
	envVar struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	}
	containerPort struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	}
	resources struct {
		Limits map[string]string `yaml:"limits,omitempty"`
	}
	probeSpec struct {
		HTTPGet          httpGetAction `yaml:"httpGet"`
		PeriodSeconds    int           `yaml:"periodSeconds"`
		FailureThreshold int           `yaml:"failureThreshold"`
	}
	httpGetAction struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	}
	volumeMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	}
	volume struct {
		Name     string         `yaml:"name"`
		EmptyDir map[string]any `yaml:"emptyDir"`
	}
	service struct {
		APIVersion string      `yaml:"apiVersion"`
		Kind       string      `yaml:"kind"`
		Metadata   objectMeta  `yaml:"metadata"`
		Spec       serviceSpec `yaml:"spec"`
	}
	serviceSpec struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []servicePort     `yaml:"ports"`
	}
	servicePort struct {
		Name       string `yaml:"name"`
		Port       int    `yaml:"port"`
		TargetPort string `yaml:"targetPort"`
	}
)

// ContainerArgs returns the server container's args for params: the
// rendered args template followed by the trial's flags, as for Process.
func (k *Kubernetes) ContainerArgs(params Params) ([]string, error) {
	return k.argv.Argv(params, k.opts.ContainerPort)
}

// Manifests renders the Deployment and Service of the server named name
// (a DNS label; see ObjectName) configured with params, as one YAML stream.
func (k *Kubernetes) Manifests(name string, params Params) ([]byte, error) {
	args, err := k.ContainerArgs(params)
	if err != nil {
		return nil, err
	}
	o := k.opts
	labels := map[string]string{LabelManagedBy: "spoc", LabelName: "spoc-server", LabelTrial: name}
	sel := map[string]string{LabelTrial: name}
	var env []envVar
	for _, kv := range sortedEnv(o.Env) {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, envVar{Name: k, Value: v})
	}
	c := container{
		Name:      "server",
		Image:     o.Image,
		Args:      args,
		Env:       env,
		Ports:     []containerPort{{Name: "http", ContainerPort: o.ContainerPort}},
		Resources: resources{Limits: map[string]string{o.GPUResource: strconv.Itoa(o.GPUsPerReplica)}},
		ReadinessProbe: probeSpec{
			HTTPGet:          httpGetAction{Path: o.HealthPath, Port: "http"},
			PeriodSeconds:    5,
			FailureThreshold: 3,
		},
		// vLLM's tensor-parallel workers exchange tensors through shared
		// memory; the container default of 64 MiB is far too small.
		VolumeMounts: []volumeMount{{Name: "dshm", MountPath: "/dev/shm"}},
	}
	d := deployment{
		APIVersion: "apps/v1",
		Kind:       "Deployment",
		Metadata:   objectMeta{Name: name, Namespace: o.Namespace, Labels: labels},
		Spec: deploymentSpec{
			Replicas: o.Replicas,
			Selector: labelSelector{MatchLabels: sel},
			// Never run two servers of a trial at once: they would compete
			// for the same GPUs.
			Strategy: map[string]any{"type": "Recreate"},
			Template: podTemplateSpec{
				Metadata: objectMeta{Labels: labels},
				Spec: podSpec{
					TerminationGracePeriodSeconds: int(o.StopTimeout.Seconds()),
					NodeSelector:                  o.NodeSelector,
					Containers:                    []container{c},
					Volumes:                       []volume{{Name: "dshm", EmptyDir: map[string]any{"medium": "Memory"}}},
				},
			},
		},
	}
	s := service{
		APIVersion: "v1",
		Kind:       "Service",
		Metadata:   objectMeta{Name: name, Namespace: o.Namespace, Labels: labels},
		Spec: serviceSpec{
			Selector: sel,
			Ports:    []servicePort{{Name: "http", Port: o.ContainerPort, TargetPort: "http"}},
		},
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	for _, obj := range []any{d, s} {
		if err := enc.Encode(obj); err != nil {
			return nil, fmt.Errorf("kubernetes engine: render manifests: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("kubernetes engine: render manifests: %w", err)
	}
	return buf.Bytes(), nil
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
