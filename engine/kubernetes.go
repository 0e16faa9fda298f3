package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoc-project/spoc/vllm"
)

// Kubernetes defaults, used when the corresponding option is zero.
const (
	DefaultReadyTimeout = 30 * time.Minute
	DefaultGPUResource  = "nvidia.com/gpu"
	DefaultKubePoll     = 5 * time.Second
)

// DefaultKubeArgs start the server in the vllm/vllm-openai image, whose
// entrypoint is the OpenAI-compatible server.
var DefaultKubeArgs = []string{"--model", "{{.Model}}", "--port", "{{.Port}}"}

// KubernetesOptions configure a Kubernetes launcher.
type KubernetesOptions struct {
	// Namespace receives the trial objects; Context selects the kubectl
	// context ("" for the current one).
	Namespace string
	Context   string
	// Image is the server image; Args the container args template
	// (DefaultKubeArgs when empty) before the trial flags.
	Image string
	Args  []string
	Env   map[string]string
	// Model is given to the args template and sent in requests unless
	// ServedModelName is set.
	Model           string
	ServedModelName string
	// BaseParams are flags applied to every trial (tensor-parallel-size,
	// engine.params); trial parameters override them.
	BaseParams Params
	// Replicas data-parallel pods with GPUsPerReplica GPUs each
	// (gpus / tensor_parallel_size and tensor_parallel_size).
	Replicas       int
	GPUsPerReplica int
	GPUResource    string
	NodeSelector   map[string]string
	// ContainerPort is the server's port in the pod (8000).
	ContainerPort int
	HealthPath    string
	MetricsPath   string
	// ReadyTimeout bounds the wait for a ready pod; StopTimeout is the pod's
	// termination grace period; PollInterval spaces status checks.
	ReadyTimeout time.Duration
	StopTimeout  time.Duration
	PollInterval time.Duration
	// PortForward reaches the server through kubectl port-forward to a
	// loopback port instead of the Service's cluster DNS name (which works
	// only when spoc itself runs in the cluster).
	PortForward bool
	// NamePrefix names the objects: NamePrefix-s<n> for the launcher's n-th
	// server (see ObjectName).
	NamePrefix string
	// Dir receives one folder per started server (manifests, server log,
	// port-forward log); a temporary folder per server when empty.
	Dir string
	// Runner runs kubectl; nil means ExecRunner{}.
	Runner Runner
	Logger *slog.Logger
}

// Kubernetes runs each trial's server as a Deployment and Service applied
// with kubectl, and deletes them on Stop.
type Kubernetes struct {
	opts KubernetesOptions
	argv *Process // renders the args template exactly like the process launcher

	slot slot
	dirs *serverDirs
	seq  atomic.Int64
}

var _ Launcher = (*Kubernetes)(nil)

type kubeTrial struct {
	name        string
	logPath     string
	stopForward func() error
	forwardLog  *os.File
}

// NewKubernetes validates opts and returns the launcher.
func NewKubernetes(opts KubernetesOptions) (*Kubernetes, error) {
	if opts.Namespace == "" {
		return nil, errors.New("kubernetes engine: namespace is required")
	}
	if opts.Image == "" {
		return nil, errors.New("kubernetes engine: image is required")
	}
	if len(opts.Args) == 0 {
		opts.Args = DefaultKubeArgs
	}
	if opts.Replicas < 1 {
		opts.Replicas = 1
	}
	if opts.GPUsPerReplica < 1 {
		opts.GPUsPerReplica = 1
	}
	if opts.GPUResource == "" {
		opts.GPUResource = DefaultGPUResource
	}
	if opts.ContainerPort == 0 {
		opts.ContainerPort = DefaultContainerPort
	}
	if opts.HealthPath == "" {
		opts.HealthPath = DefaultHealthPath
	}
	if opts.MetricsPath == "" {
		opts.MetricsPath = DefaultMetricsPath
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultKubePoll
	}
	if opts.NamePrefix == "" {
		opts.NamePrefix = "spoc"
	}
	if opts.Runner == nil {
		opts.Runner = ExecRunner{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	argv, err := NewProcess(ProcessOptions{Command: opts.Args, Model: opts.Model, BaseParams: opts.BaseParams, Host: "0.0.0.0"})
	if err != nil {
		return nil, fmt.Errorf("kubernetes engine: args: %w", err)
	}
	return &Kubernetes{opts: opts, argv: argv, dirs: &serverDirs{root: opts.Dir}}, nil
}

// Check verifies that kubectl can be found when the default runner is used.
func (k *Kubernetes) Check() error {
	if r, ok := k.opts.Runner.(ExecRunner); ok {
		if _, err := exec.LookPath(r.binary()); err != nil {
			return fmt.Errorf("kubernetes engine: %w", err)
		}
	}
	return nil
}

// Kind returns "kubernetes".
func (k *Kubernetes) Kind() string { return "kubernetes" }

// kubectl prefixes args with the context and namespace flags.
func (k *Kubernetes) kubectl(args ...string) []string {
	out := make([]string, 0, len(args)+4)
	if k.opts.Context != "" {
		out = append(out, "--context", k.opts.Context)
	}
	return append(append(out, "--namespace", k.opts.Namespace), args...)
}

func (k *Kubernetes) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return k.opts.Runner.Run(ctx, stdin, k.kubectl(args...)...)
}

// Start applies the trial's Deployment and Service, waits until a pod is
// ready, and returns the Service's address (or a port-forward to it). A pod
// whose server crashes is classified from its log like a process; on any
// error the objects are deleted again.
func (k *Kubernetes) Start(ctx context.Context, params Params) (Server, error) {
	if err := k.slot.take("kubernetes"); err != nil {
		return nil, err
	}
	srv, err := k.start(ctx, params)
	if err != nil {
		k.slot.release()
		return nil, err
	}
	return srv, nil
}

func (k *Kubernetes) start(ctx context.Context, params Params) (*kubeServer, error) {
	name := ObjectName(k.opts.NamePrefix, int(k.seq.Add(1)))
	manifests, err := k.Manifests(name, params)
	if err != nil {
		return nil, err
	}
	dir, err := k.dirs.next("kubernetes")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests.yaml"), manifests, 0o644); err != nil {
		return nil, fmt.Errorf("kubernetes engine: save manifests: %w", err)
	}
	t := &kubeTrial{name: name, logPath: filepath.Join(dir, "server.log")}
	srv := &kubeServer{k: k, t: t}
	fail := func(err error) (*kubeServer, error) {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.opts.StopTimeout+time.Minute)
		defer cancel()
		if serr := k.stop(stopCtx, t); serr != nil {
			k.opts.Logger.Warn("clean up failed server", "name", name, "err", serr)
		}
		return nil, err
	}
	if _, err := k.run(ctx, manifests, "apply", "-f", "-"); err != nil {
		return fail(fmt.Errorf("kubernetes engine: apply %s: %w", name, err))
	}
	k.opts.Logger.Info("server applied", "engine", "kubernetes", "name", name, "namespace", k.opts.Namespace)
	if err := k.awaitReady(ctx, t); err != nil {
		return fail(err)
	}
	srv.ep = Endpoint{Model: vllm.ServedName(k.opts.Model, k.opts.ServedModelName), Log: t.logPath}
	if k.opts.PortForward {
		base, err := k.portForward(ctx, t, dir)
		if err != nil {
			return fail(err)
		}
		srv.ep.BaseURL = base
	} else {
		srv.ep.BaseURL = fmt.Sprintf("http://%s.%s.svc:%d", name, k.opts.Namespace, k.opts.ContainerPort)
	}
	srv.ep.MetricsURLs = []string{srv.ep.BaseURL + k.opts.MetricsPath}
	return srv, nil
}

// kubeServer is one applied Deployment and Service.
type kubeServer struct {
	k    *Kubernetes
	t    *kubeTrial
	ep   Endpoint
	once sync.Once
	err  error
}

// Endpoint returns the Service's address (or the port-forward to it).
func (s *kubeServer) Endpoint() Endpoint { return s.ep }

// ResetCache posts /reset_prefix_cache through the Service.
func (s *kubeServer) ResetCache(ctx context.Context) error {
	return resetPrefixCache(ctx, s.ep.BaseURL)
}

// Stop deletes the server's objects once and frees the launcher.
func (s *kubeServer) Stop(ctx context.Context) error {
	s.once.Do(func() {
		s.err = s.k.stop(ctx, s.t)
		s.k.slot.release()
	})
	return s.err
}

// podList is the part of `kubectl get pods -o json` spoc reads.
type podList struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Status struct {
			Phase      string `json:"phase"`
			Conditions []struct {
				Type    string `json:"type"`
				Status  string `json:"status"`
				Reason  string `json:"reason"`
				Message string `json:"message"`
			} `json:"conditions"`
			ContainerStatuses []struct {
				Name         string         `json:"name"`
				Ready        bool           `json:"ready"`
				RestartCount int            `json:"restartCount"`
				State        containerState `json:"state"`
				LastState    containerState `json:"lastState"`
			} `json:"containerStatuses"`
		} `json:"status"`
	} `json:"items"`
}

type containerState struct {
	Waiting *struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"waiting"`
	Terminated *struct {
		ExitCode int    `json:"exitCode"`
		Reason   string `json:"reason"`
	} `json:"terminated"`
}

// setupWaitReasons are container waiting reasons that no amount of waiting
// fixes and that are not the parameters' fault.
var setupWaitReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "CreateContainerConfigError": true}

// awaitReady polls the trial's pods until one is ready, a server container
// has terminated (crash: classified from its log), or the ready timeout.
func (k *Kubernetes) awaitReady(ctx context.Context, t *kubeTrial) error {
	deadline := time.NewTimer(k.opts.ReadyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(k.opts.PollInterval)
	defer tick.Stop()
	lastStatus := "no pod yet"
	for {
		out, err := k.run(ctx, nil, "get", "pods", "--selector", LabelTrial+"="+t.name, "--output", "json")
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("kubernetes engine: wait for %s: %w", t.name, ctx.Err())
			}
			return fmt.Errorf("kubernetes engine: wait for %s: %w", t.name, err)
		}
		var pods podList
		if err := json.Unmarshal(out, &pods); err != nil {
			return fmt.Errorf("kubernetes engine: wait for %s: decode pod list: %w", t.name, err)
		}
		for _, p := range pods.Items {
			for _, c := range p.Status.ContainerStatuses {
				if c.Ready {
					return nil
				}
				if w := c.State.Waiting; w != nil && setupWaitReasons[w.Reason] {
					return fmt.Errorf("kubernetes engine: pod %s: %s: %s", p.Metadata.Name, w.Reason, w.Message)
				}
				term := c.State.Terminated
				if term == nil {
					term = c.LastState.Terminated
				}
				if term != nil {
					return k.crashFailure(ctx, t, p.Metadata.Name, c.Name, term.ExitCode, term.Reason, c.State.Terminated == nil)
				}
				if w := c.State.Waiting; w != nil {
					lastStatus = fmt.Sprintf("pod %s: %s", p.Metadata.Name, w.Reason)
				}
			}
			if len(p.Status.ContainerStatuses) == 0 && p.Status.Phase != "" {
				lastStatus = fmt.Sprintf("pod %s: %s", p.Metadata.Name, p.Status.Phase)
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == "PodScheduled" && cond.Status == "False" {
					lastStatus = fmt.Sprintf("pod %s not scheduled: %s", p.Metadata.Name, cond.Message)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubernetes engine: wait for %s: %w", t.name, ctx.Err())
		case <-deadline.C:
			k.saveLogs(ctx, t)
			reason, detail := Classify(readTail(t.logPath, logTailBytes))
			if !reason.Infeasible() {
				reason = ReasonHealthTimeout
				detail = fmt.Sprintf("%s not ready within %s (%s)", t.name, k.opts.ReadyTimeout, lastStatus)
			}
			return &Failure{Reason: reason, Detail: detail, ExitCode: -1, Log: t.logPath}
		case <-tick.C:
		}
	}
}

// crashFailure saves the crashed container's log and classifies it.
// OOMKilled (the container's memory limit) counts as out of memory.
func (k *Kubernetes) crashFailure(ctx context.Context, t *kubeTrial, pod, ctr string, exitCode int, reason string, previous bool) error {
	args := []string{"logs", "pod/" + pod, "--container", ctr, "--tail", "-1"}
	if previous {
		args = append(args, "--previous")
	}
	out, err := k.run(ctx, nil, args...)
	if err != nil {
		k.opts.Logger.Warn("fetch crashed server log", "pod", pod, "err", err)
	}
	if werr := os.WriteFile(t.logPath, out, 0o644); werr != nil {
		k.opts.Logger.Warn("save server log", "err", werr)
	}
	r, detail := Classify(string(out))
	if r == ReasonExited && reason == "OOMKilled" {
		r, detail = ReasonOutOfMemory, "container OOMKilled (host memory limit)"
	}
	return &Failure{Reason: r, Detail: detail, ExitCode: exitCode, Log: t.logPath}
}

// portForward forwards a free loopback port to the Service and waits until
// the server answers through it.
func (k *Kubernetes) portForward(ctx context.Context, t *kubeTrial, dir string) (string, error) {
	port, err := freePort("127.0.0.1")
	if err != nil {
		return "", err
	}
	f, err := os.Create(filepath.Join(dir, "port-forward.log"))
	if err != nil {
		return "", fmt.Errorf("kubernetes engine: create port-forward log: %w", err)
	}
	t.forwardLog = f
	stop, err := k.opts.Runner.Start(ctx, f, k.kubectl("port-forward", "service/"+t.name, fmt.Sprintf("%d:%d", port, k.opts.ContainerPort), "--address", "127.0.0.1")...)
	if err != nil {
		return "", fmt.Errorf("kubernetes engine: port-forward %s: %w", t.name, err)
	}
	t.stopForward = stop
	base := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(time.Minute)
	for {
		err := probe(ctx, client, base+k.opts.HealthPath)
		if err == nil {
			return base, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return "", fmt.Errorf("kubernetes engine: port-forward to %s does not answer: %w", t.name, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// saveLogs writes the server pods' logs to the trial's server.log.
func (k *Kubernetes) saveLogs(ctx context.Context, t *kubeTrial) {
	out, err := k.run(ctx, nil, "logs", "--selector", LabelTrial+"="+t.name, "--all-containers", "--prefix", "--tail", "-1")
	if err != nil {
		k.opts.Logger.Warn("fetch server log", "name", t.name, "err", err)
		return
	}
	if err := os.WriteFile(t.logPath, out, 0o644); err != nil {
		k.opts.Logger.Warn("save server log", "err", err)
	}
}

// stop ends the port-forward, saves the server log (unless a crash already
// saved it) and deletes the Deployment and Service, waiting until the pods
// are gone so the next trial gets the GPUs.
func (k *Kubernetes) stop(ctx context.Context, t *kubeTrial) error {
	if t.stopForward != nil {
		if err := t.stopForward(); err != nil {
			k.opts.Logger.Warn("stop port-forward", "err", err)
		}
	}
	if t.forwardLog != nil {
		t.forwardLog.Close()
	}
	if _, err := os.Stat(t.logPath); errors.Is(err, os.ErrNotExist) {
		k.saveLogs(ctx, t)
	}
	timeout := k.opts.StopTimeout + time.Minute
	if _, err := k.run(ctx, nil, "delete", "deployment/"+t.name, "service/"+t.name,
		"--ignore-not-found", "--cascade=foreground", "--wait=true", "--timeout="+timeout.String()); err != nil {
		return fmt.Errorf("kubernetes engine: delete %s: %w", t.name, err)
	}
	return nil
}

// Describe renders a short description of where trials go, for logs and
// dry runs: "kubernetes namespace spoc (context gpu-cluster), 1×4 nvidia.com/gpu".
func (k *Kubernetes) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kubernetes namespace %s", k.opts.Namespace)
	if k.opts.Context != "" {
		fmt.Fprintf(&b, " (context %s)", k.opts.Context)
	}
	fmt.Fprintf(&b, ", %d×%d %s", k.opts.Replicas, k.opts.GPUsPerReplica, k.opts.GPUResource)
	return b.String()
}

// DryRun returns the manifests Start would apply next.
func (k *Kubernetes) DryRun(p Params) (string, error) {
	b, err := k.Manifests(ObjectName(k.opts.NamePrefix, int(k.seq.Load())+1), p)
	return string(b), err
}
