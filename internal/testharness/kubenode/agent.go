package kubenode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Defaults of Options.
const (
	DefaultNode        = "spoc-node"
	DefaultGPUResource = "nvidia.com/gpu"
	DefaultPoll        = 200 * time.Millisecond
)

// CommandFunc returns the local command line that stands for container c
// of pod, whose pod IP is ip (the address the process must bind). An error
// fails the container (CreateContainerError), as an unknown image would.
type CommandFunc func(pod *corev1.Pod, c *corev1.Container, ip string) ([]string, error)

// Options configure an Agent.
type Options struct {
	// Client reaches the API server.
	Client interface {
		CoreV1() corev1client.CoreV1Interface
	}
	// Node is the Node's name (DefaultNode when empty); Labels are added
	// to its kubernetes.io/hostname and kubernetes.io/os labels.
	Node   string
	Labels map[string]string
	// GPUs is the node's capacity of GPUResource (DefaultGPUResource):
	// pods asking for more than what is free stay pending, as with the
	// scheduler.
	GPUs        int
	GPUResource string
	// Command maps containers to processes; required.
	Command CommandFunc
	// Dir receives each container's output as NAMESPACE_POD_CONTAINER.log.
	Dir string
	// Poll spaces the agent's passes over the pods (DefaultPoll).
	Poll time.Duration
	// APIServer is the API server's host and port for the pods
	// (KUBERNETES_SERVICE_HOST and _PORT, as the kubelet sets them) and
	// CACert the PEM of the CA that signed its serving certificate: the
	// ca.crt of each pod's service-account folder. Empty: pods get neither.
	APIServer string
	CACert    []byte
	Logger    *slog.Logger
}

// Agent is a running node agent.
type Agent struct {
	opts Options

	mu     sync.Mutex
	pods   map[types.UID]*podRun
	nextIP int
	ipBase [2]byte // 127.ipBase[0].ipBase[1]+n/250.n%250

	proxy serviceProxy
}

// New validates opts and returns an agent; Run starts it.
func New(opts Options) (*Agent, error) {
	if opts.Client == nil {
		return nil, errors.New("kubenode: a client is required")
	}
	if opts.Command == nil {
		return nil, errors.New("kubenode: a command mapping is required")
	}
	if opts.Dir == "" {
		return nil, errors.New("kubenode: a log folder is required")
	}
	if opts.Node == "" {
		opts.Node = DefaultNode
	}
	if opts.GPUResource == "" {
		opts.GPUResource = DefaultGPUResource
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("kubenode: %w", err)
	}
	// a random /16-ish block of 127.2.0.0–127.63.255.255 for pod IPs, so
	// that agents of test processes running side by side (each binds port
	// 8000 on its pod IPs) do not collide
	b := rand.N(62*256 - 8)
	return &Agent{opts: opts, pods: map[types.UID]*podRun{}, ipBase: [2]byte{byte(2 + b/256), byte(b % 256)}}, nil
}

// Run registers the node and serves its pods until ctx is done; then it
// stops every process it started (SIGTERM, SIGKILL after two seconds) and
// returns nil.
func (a *Agent) Run(ctx context.Context) error {
	port, stopLogs, err := a.serveLogs()
	if err != nil {
		return fmt.Errorf("kubenode: serve logs: %w", err)
	}
	defer stopLogs()
	if err := a.register(ctx, port); err != nil {
		return err
	}
	defer a.stopAll()
	defer a.proxy.close()
	tick := time.NewTicker(a.opts.Poll)
	defer tick.Stop()
	for {
		if err := a.pass(ctx); err != nil && ctx.Err() == nil {
			a.opts.Logger.Warn("kubenode pass", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// register creates (or replaces the status of) the Node: Ready, with the
// configured GPUs as capacity.
func (a *Agent) register(ctx context.Context, logsPort int) error {
	labels := map[string]string{"kubernetes.io/hostname": a.opts.Node, "kubernetes.io/os": "linux"}
	for k, v := range a.opts.Labels {
		labels[k] = v
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:                      resource.MustParse("64"),
		corev1.ResourceMemory:                   resource.MustParse("512Gi"),
		corev1.ResourcePods:                     resource.MustParse("110"),
		corev1.ResourceName(a.opts.GPUResource): *resource.NewQuantity(int64(a.opts.GPUs), resource.DecimalSI),
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: a.opts.Node, Labels: labels}}
	created, err := a.opts.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = a.opts.Client.CoreV1().Nodes().Get(ctx, a.opts.Node, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("kubenode: register node %s: %w", a.opts.Node, err)
	}
	now := metav1.Now()
	created.Status = corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubenodeReady",
			Message: "spoc test node agent", LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}, // no host name: the API server would try to resolve it
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(logsPort)}},
	}
	if _, err := a.opts.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("kubenode: node %s status: %w", a.opts.Node, err)
	}
	return nil
}

// pass looks at every pod once: binds pending ones that fit, starts, probes
// and reports those bound here, and stops those being deleted.
func (a *Agent) pass(ctx context.Context) error {
	list, err := a.opts.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	seen := map[types.UID]bool{}
	usedGPUs := 0
	for i := range list.Items {
		p := &list.Items[i]
		if p.Spec.NodeName == a.opts.Node && !terminal(p) {
			usedGPUs += a.gpus(p)
		}
	}
	for i := range list.Items {
		p := &list.Items[i]
		switch {
		case p.Spec.NodeName == "" && p.DeletionTimestamp == nil:
			if need := a.gpus(p); usedGPUs+need <= a.opts.GPUs && a.selects(p) {
				if err := a.bind(ctx, p); err != nil {
					a.opts.Logger.Warn("kubenode bind", "pod", p.Namespace+"/"+p.Name, "err", err)
					continue
				}
				usedGPUs += need
			}
		case p.Spec.NodeName == a.opts.Node:
			seen[p.UID] = true
			if err := a.serve(ctx, p); err != nil && ctx.Err() == nil {
				a.opts.Logger.Warn("kubenode pod", "pod", p.Namespace+"/"+p.Name, "err", err)
			}
		}
	}
	// pods deleted behind the agent's back (force deletion): stop them
	a.mu.Lock()
	var gone []*podRun
	for uid, r := range a.pods {
		if !seen[uid] {
			gone = append(gone, r)
			delete(a.pods, uid)
		}
	}
	a.mu.Unlock()
	for _, r := range gone {
		r.kill(0)
	}
	if err := a.proxy.sync(ctx, a, list.Items); err != nil {
		return fmt.Errorf("service proxy: %w", err)
	}
	return nil
}

// gpus is what pod p asks for of the GPU resource (limits, as for extended
// resources requests equal limits).
func (a *Agent) gpus(p *corev1.Pod) int {
	n := 0
	name := corev1.ResourceName(a.opts.GPUResource)
	for _, c := range p.Spec.Containers {
		q, ok := c.Resources.Limits[name]
		if !ok {
			q, ok = c.Resources.Requests[name]
		}
		if ok {
			n += int(q.Value())
		}
	}
	return n
}

// selects reports whether the pod's node selector matches the node.
func (a *Agent) selects(p *corev1.Pod) bool {
	for k, v := range p.Spec.NodeSelector {
		switch k {
		case "kubernetes.io/hostname":
			if v != a.opts.Node {
				return false
			}
		case "kubernetes.io/os":
			if v != "linux" {
				return false
			}
		default:
			if a.opts.Labels[k] != v {
				return false
			}
		}
	}
	return true
}

func (a *Agent) bind(ctx context.Context, p *corev1.Pod) error {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: a.opts.Node},
	}
	return a.opts.Client.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{})
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// allocIP hands out the next loopback pod IP from the agent's block:
// 127.A.B.2, 127.A.B.3, … (every 127/8 address reaches the loopback
// interface on Linux).
func (a *Agent) allocIP() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.nextIP + 2
	a.nextIP++
	hi := int(a.ipBase[0])*256 + int(a.ipBase[1]) + n/250
	return fmt.Sprintf("127.%d.%d.%d", hi/256, hi%256, n%250)
}

// logPath is where container c of pod p writes its output.
func (a *Agent) logPath(p *corev1.Pod, c string) string {
	return a.logPathOf(p.Namespace, p.Name, c)
}

// containerDone is closed once container c of pod ns/pod has exited (or
// never started, or the pod is not this agent's).
func (a *Agent) containerDone(ns, pod, c string) <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.pods {
		if r.namespace != ns || r.name != pod {
			continue
		}
		for _, cr := range r.ctrs {
			if cr.spec.Name == c && cr.done != nil {
				return cr.done
			}
		}
	}
	closed := make(chan struct{})
	close(closed)
	return closed
}

func (a *Agent) logPathOf(ns, pod, c string) string {
	return filepath.Join(a.opts.Dir, fmt.Sprintf("%s_%s_%s.log", ns, pod, c))
}

func (a *Agent) stopAll() {
	a.mu.Lock()
	runs := make([]*podRun, 0, len(a.pods))
	for _, r := range a.pods {
		runs = append(runs, r)
	}
	a.pods = map[types.UID]*podRun{}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.kill(2 * time.Second)
		}()
	}
	wg.Wait()
}
