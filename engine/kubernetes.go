package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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

	appsv1 "k8s.io/api/apps/v1"

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
	// context ("" for the current one) of Kubeconfig ("" for kubectl's
	// default: $KUBECONFIG or ~/.kube/config).
	Namespace  string
	Context    string
	Kubeconfig string
	// Study labels every object (LabelStudy), for `spoc k8s gc --study`.
	Study string
	// BaseManifest is a user's Deployment (YAML, decoded strictly into
	// the API types; BaseManifestSource names it in errors) that spoc
	// patches instead of rendering its own: name, labels, selector,
	// replicas, the server container's image, args, GPUs, port and env;
	// probes and /dev/shm where it has none. Everything else (affinity,
	// security context, sidecars, volumes) is kept.
	BaseManifest       []byte
	BaseManifestSource string
	// Container names the server container in a base manifest with
	// several (DefaultServerContainer).
	Container string
	// Image is the server image; Args the container args template
	// (DefaultKubeArgs when empty) before the trial flags.
	Image string
	Args  []string
	Env   map[string]string
	// SecretEnv are variables taken from Secrets (HF_TOKEN, for one): the
	// pod reads them, spoc never does, so no value is ever printed.
	SecretEnv map[string]SecretKey
	// ModelCache mounts a PVC or host folder as the model cache; ShmSize
	// bounds the /dev/shm memory volume ("" for no limit).
	ModelCache ModelCache
	ShmSize    string
	// Tolerations and ImagePullSecrets are added to the pod's.
	Tolerations      []Toleration
	ImagePullSecrets []string
	// Model is given to the args template and sent in requests unless
	// ServedModelName is set.
	Model           string
	ServedModelName string
	// BaseParams are flags applied to every trial (tensor-parallel-size,
	// engine.params); trial parameters override them.
	BaseParams Params
	// Flavor renders the parameters as the container's args (the zero
	// Flavor is vLLM's) and names the cache-reset route.
	Flavor Flavor
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
	// loopback port (the Service for load, one per pod for metrics)
	// instead of the Service's cluster IP and the pod IPs, which work only
	// when spoc itself runs in the cluster.
	PortForward bool
	// NamePrefix names the objects: NamePrefix-s<n> for the launcher's n-th
	// server (see ObjectName). A name another worker of the study already
	// holds in the namespace is skipped: the Deployment is created, never
	// applied over an existing one.
	NamePrefix string
	// MaxServers is how many servers (Deployments) the launcher runs at
	// once: search.parallel, one per trial running at the same time; 1
	// when 0.
	MaxServers int
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
	argv *Process           // renders the args template exactly like the process launcher
	base *appsv1.Deployment // the decoded base manifest, or nil

	slot slot
	dirs *serverDirs
	seq  atomic.Int64
	// instance marks the Deployments this launcher created
	// (AnnotationLauncher), random per launcher.
	instance string
}

var _ Launcher = (*Kubernetes)(nil)

type kubeTrial struct {
	name         string
	logPath      string
	stopForwards []func() error
	forwardLogs  []*os.File
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
	if opts.ModelCache.PVC != "" && opts.ModelCache.HostPath != "" {
		return nil, errors.New("kubernetes engine: model cache: a PVC or a host path, not both")
	}
	argv, err := NewProcess(ProcessOptions{Command: opts.Args, Model: opts.Model, BaseParams: opts.BaseParams, Host: "0.0.0.0", Flavor: opts.Flavor})
	if err != nil {
		return nil, fmt.Errorf("kubernetes engine: args: %w", err)
	}
	argv.anyHost = true
	if opts.MaxServers < 1 {
		opts.MaxServers = 1
	}
	k := &Kubernetes{opts: opts, argv: argv, dirs: &serverDirs{root: opts.Dir}, slot: slot{max: opts.MaxServers},
		instance: fmt.Sprintf("%016x", rand.Uint64())}
	if len(opts.BaseManifest) > 0 {
		src := opts.BaseManifestSource
		if src == "" {
			src = "base manifest"
		}
		if k.base, err = DecodeDeployment(src, opts.BaseManifest); err != nil {
			return nil, fmt.Errorf("kubernetes engine: %w", err)
		}
	}
	// render once, so that what cannot be rendered (a base manifest
	// without a recognisable server container, a bad shm size) is an error
	// before any trial
	if _, _, err := k.objects(ObjectName(opts.NamePrefix, 0), nil); err != nil {
		return nil, err
	}
	return k, nil
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
	out := make([]string, 0, len(args)+6)
	if k.opts.Kubeconfig != "" {
		out = append(out, "--kubeconfig", k.opts.Kubeconfig)
	}
	if k.opts.Context != "" {
		out = append(out, "--context", k.opts.Context)
	}
	return append(append(out, "--namespace", k.opts.Namespace), args...)
}

func (k *Kubernetes) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	out, err := k.opts.Runner.Run(ctx, stdin, k.kubectl(args...)...)
	if err != nil && ctx.Err() != nil {
		// kubectl killed by Ctrl-C: the caller sees the interruption
		return out, fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return out, err
}

// Start applies the trial's Deployment and Service, waits until every
// replica has every container ready, and returns the Service's address for
// load (or a port-forward to it) and each pod's /metrics, named by pod. A
// pod whose server crashes is classified from its log like a process; on
// any error the objects are deleted again.
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

// maxNameClaims bounds the names a Start tries: each one taken is a
// Deployment of another worker (or one a killed run left behind).
const maxNameClaims = 100

// claimName creates the Deployment of the launcher's next free name and
// returns that name with the server's rendered Deployment and Service. The Deployment
// is created, not applied: a name held by another worker sharing the
// study (its own launcher counts from s1 too) or left by a killed run
// makes the API server answer AlreadyExists, and the next number is tried,
// so no worker ever reconfigures or deletes another's server.
func (k *Kubernetes) claimName(ctx context.Context, params Params) (name string, dep, svc []byte, err error) {
	for range maxNameClaims {
		name = ObjectName(k.opts.NamePrefix, int(k.seq.Add(1)))
		if dep, svc, err = k.render(name, params, true); err != nil {
			return "", nil, nil, err
		}
		_, err = k.run(ctx, dep, "create", "-f", "-")
		if err != nil && alreadyExists(err) {
			k.opts.Logger.Info("object name taken, trying the next", "engine", "kubernetes", "name", name, "namespace", k.opts.Namespace)
			continue
		}
		if err != nil {
			err = fmt.Errorf("kubernetes engine: create deployment %s: %w", name, err)
			// Interrupted or failed, the create may still have gone
			// through: the name is this launcher's (to delete) only when
			// the Deployment carries its mark.
			if !k.holds(ctx, name) {
				return "", nil, nil, err
			}
			return name, nil, nil, err
		}
		return name, dep, svc, nil
	}
	return "", nil, nil, fmt.Errorf("kubernetes engine: %d names %s-s<n> in a row are taken in namespace %s; delete leftovers with spoc k8s gc", maxNameClaims, k.opts.NamePrefix, k.opts.Namespace)
}

// holds reports whether the Deployment name exists and was created by
// this launcher (AnnotationLauncher).
func (k *Kubernetes) holds(ctx context.Context, name string) bool {
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	out, err := k.run(gctx, nil, "get", "deployment/"+name, "--ignore-not-found", "--output", `jsonpath={.metadata.annotations.spoc\.dev/launcher}`)
	if err != nil {
		k.opts.Logger.Warn("cannot tell whether a Deployment is this launcher's; leaving it (spoc k8s gc deletes leftovers)", "name", name, "err", err)
		return false
	}
	return strings.TrimSpace(string(out)) == k.instance
}

// alreadyExists reports whether kubectl failed because the object exists.
func alreadyExists(err error) bool {
	return strings.Contains(err.Error(), "(AlreadyExists)")
}

func (k *Kubernetes) start(ctx context.Context, params Params) (*kubeServer, error) {
	dir, err := k.dirs.next("kubernetes")
	if err != nil {
		return nil, err
	}
	name, dep, svc, err := k.claimName(ctx, params)
	if name == "" {
		return nil, err
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
	if err != nil {
		// a create that failed otherwise (or was interrupted) may still
		// have created the Deployment: the name is this launcher's to
		// delete
		return fail(err)
	}
	manifests := joinManifests(dep, svc)
	if err := os.WriteFile(filepath.Join(dir, "manifests.yaml"), manifests, 0o644); err != nil {
		return fail(fmt.Errorf("kubernetes engine: save manifests: %w", err))
	}
	if _, err := k.run(ctx, svc, "apply", "-f", "-"); err != nil {
		return fail(fmt.Errorf("kubernetes engine: apply service %s: %w", name, err))
	}
	k.opts.Logger.Info("server applied", "engine", "kubernetes", "name", name, "namespace", k.opts.Namespace)
	pods, err := k.awaitReady(ctx, t)
	if err != nil {
		return fail(err)
	}
	srv.pods = pods
	srv.ep = Endpoint{Model: vllm.ServedName(k.opts.Model, k.opts.ServedModelName), Log: t.logPath}
	if k.opts.PortForward {
		base, err := k.portForward(ctx, t, dir, "service/"+name, "")
		if err != nil {
			return fail(err)
		}
		srv.ep.BaseURL = base
		for _, p := range pods {
			// one forward per pod: a forward to the Service would scrape
			// whichever pod it picked
			pbase, err := k.portForward(ctx, t, dir, "pod/"+p.name, "-"+p.name)
			if err != nil {
				return fail(err)
			}
			srv.ep.MetricsURLs = append(srv.ep.MetricsURLs, pbase+k.opts.MetricsPath)
			srv.ep.MetricsNames = append(srv.ep.MetricsNames, p.name)
		}
		return srv, nil
	}
	base, err := k.serviceURL(ctx, t)
	if err != nil {
		return fail(err)
	}
	if err := k.awaitAnswer(ctx, t, base); err != nil {
		return fail(err)
	}
	srv.ep.BaseURL = base
	for _, p := range pods {
		srv.ep.MetricsURLs = append(srv.ep.MetricsURLs, "http://"+net.JoinHostPort(p.ip, strconv.Itoa(k.opts.ContainerPort))+k.opts.MetricsPath)
		srv.ep.MetricsNames = append(srv.ep.MetricsNames, p.name)
	}
	return srv, nil
}

// kubeServer is one applied Deployment and Service.
type kubeServer struct {
	k    *Kubernetes
	t    *kubeTrial
	ep   Endpoint
	pods []readyPod // the replicas as they were when the server was ready
	once sync.Once
	err  error
}

// Endpoint returns the Service's address (or the port-forward to it).
func (s *kubeServer) Endpoint() Endpoint { return s.ep }

// ResetCache posts the flavor's reset route (vLLM's /reset_prefix_cache)
// through the Service.
func (s *kubeServer) ResetCache(ctx context.Context) error {
	return resetAt(ctx, s.ep.BaseURL, s.k.argv.opts.Flavor.ResetPath)
}

// Stop deletes the server's objects once and frees the launcher.
func (s *kubeServer) Stop(ctx context.Context) error {
	s.once.Do(func() {
		s.err = s.k.stop(ctx, s.t)
		s.k.slot.release()
	})
	return s.err
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

// portForward forwards a free loopback port to target (service/NAME or
// pod/NAME), logging to port-forward<suffix>.log, and waits until the
// server answers through it.
func (k *Kubernetes) portForward(ctx context.Context, t *kubeTrial, dir, target, suffix string) (string, error) {
	port, err := freePort("127.0.0.1")
	if err != nil {
		return "", err
	}
	f, err := os.Create(filepath.Join(dir, "port-forward"+suffix+".log"))
	if err != nil {
		return "", fmt.Errorf("kubernetes engine: create port-forward log: %w", err)
	}
	t.forwardLogs = append(t.forwardLogs, f)
	stop, err := k.opts.Runner.Start(ctx, f, k.kubectl("port-forward", target, fmt.Sprintf("%d:%d", port, k.opts.ContainerPort), "--address", "127.0.0.1")...)
	if err != nil {
		return "", fmt.Errorf("kubernetes engine: port-forward %s: %w", target, err)
	}
	t.stopForwards = append(t.stopForwards, stop)
	base := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := k.awaitAnswer(ctx, t, base); err != nil {
		return "", fmt.Errorf("kubernetes engine: port-forward to %s: %w", target, err)
	}
	return base, nil
}

// serviceURL is the trial Service's address inside the cluster: its
// cluster IP, or its DNS name for a headless Service.
func (k *Kubernetes) serviceURL(ctx context.Context, t *kubeTrial) (string, error) {
	out, err := k.run(ctx, nil, "get", "service/"+t.name, "--output", "jsonpath={.spec.clusterIP}")
	if err != nil {
		return "", fmt.Errorf("kubernetes engine: service %s: %w", t.name, err)
	}
	host := strings.TrimSpace(string(out))
	if host == "" || host == "None" {
		host = fmt.Sprintf("%s.%s.svc", t.name, k.opts.Namespace)
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(k.opts.ContainerPort)), nil
}

// awaitAnswer waits (a minute at most) until base answers the health
// path: a Service routes to a pod a moment after the pod is ready.
func (k *Kubernetes) awaitAnswer(ctx context.Context, t *kubeTrial, base string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(time.Minute)
	for {
		err := probe(ctx, client, base+k.opts.HealthPath)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("kubernetes engine: %s does not answer at %s: %w", t.name, base, err)
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
	for _, stop := range t.stopForwards {
		if err := stop(); err != nil {
			k.opts.Logger.Warn("stop port-forward", "err", err)
		}
	}
	for _, f := range t.forwardLogs {
		f.Close()
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
