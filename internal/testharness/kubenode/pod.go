package kubenode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// podRun is a pod bound to this node and the processes standing for its
// containers.
type podRun struct {
	namespace, name string
	ip              string
	started         metav1.Time
	ctrs            []*ctrRun

	killing  atomic.Bool
	stopOnce sync.Once
	stopped  chan struct{} // closed once every process has exited after kill
	reported string        // the last status written, to write only changes
}

// ctrRun is one container: its process, or why it could not start.
type ctrRun struct {
	spec corev1.Container

	cmd        *exec.Cmd
	done       chan struct{} // closed when the process has exited
	exitCode   int
	startedAt  metav1.Time
	finishedAt metav1.Time
	ready      bool

	waitReason, waitMessage string // set while the container cannot start
}

// serve moves one pod bound to this node a step: starts it, probes it,
// reports its status, or stops and removes it once it is being deleted.
func (a *Agent) serve(ctx context.Context, p *corev1.Pod) error {
	a.mu.Lock()
	r := a.pods[p.UID]
	a.mu.Unlock()
	if p.DeletionTimestamp != nil {
		if r != nil {
			grace := 30 * time.Second
			if p.DeletionGracePeriodSeconds != nil {
				grace = time.Duration(*p.DeletionGracePeriodSeconds) * time.Second
			}
			if r.killing.CompareAndSwap(false, true) {
				go r.kill(grace)
			}
			select {
			case <-r.stopped:
			default:
				return nil // next pass
			}
		}
		// the kubelet's last word: the pod's containers are gone
		err := a.opts.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &p.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete: %w", err)
		}
		a.mu.Lock()
		delete(a.pods, p.UID)
		a.mu.Unlock()
		return nil
	}
	if r == nil {
		if terminal(p) {
			return nil
		}
		r = &podRun{namespace: p.Namespace, name: p.Name, ip: a.allocIP(), started: metav1.Now(), stopped: make(chan struct{})}
		for _, c := range p.Spec.Containers {
			r.ctrs = append(r.ctrs, &ctrRun{spec: c})
		}
		a.mu.Lock()
		a.pods[p.UID] = r
		a.mu.Unlock()
	}
	for _, c := range r.ctrs {
		if c.cmd == nil && !r.stopping() {
			a.startContainer(ctx, p, r, c)
		}
		if c.cmd != nil && !c.ready && !exited(c) {
			c.ready = probe(ctx, r.ip, &c.spec)
		}
	}
	return a.report(ctx, p, r)
}

// startContainer resolves c's environment and command and starts its
// process; what fails leaves the container waiting with the kubelet's
// reason for it.
func (a *Agent) startContainer(ctx context.Context, p *corev1.Pod, r *podRun, c *ctrRun) {
	env, err := a.env(ctx, p, r.ip, &c.spec)
	if err != nil {
		c.waitReason, c.waitMessage = "CreateContainerConfigError", err.Error()
		return
	}
	argv, err := a.opts.Command(p, &c.spec, r.ip)
	if err == nil && len(argv) == 0 {
		err = errors.New("no command")
	}
	if err != nil {
		c.waitReason, c.waitMessage = "CreateContainerError", err.Error()
		return
	}
	log, err := os.OpenFile(a.logPath(p, c.spec.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.waitReason, c.waitMessage = "CreateContainerError", err.Error()
		return
	}
	wd := filepath.Join(a.opts.Dir, "pods", p.Namespace+"_"+p.Name+"_"+string(p.UID))
	if err := os.MkdirAll(wd, 0o755); err != nil {
		log.Close()
		c.waitReason, c.waitMessage = "CreateContainerError", err.Error()
		return
	}
	mounts, err := a.volumeDirs(ctx, p, wd, &c.spec)
	if err != nil {
		// the kubelet's pod stays ContainerCreating until it can mount
		log.Close()
		c.waitReason, c.waitMessage = "ContainerCreating", "FailedMount: "+err.Error()
		return
	}
	argv = mapPaths(argv, mounts)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = wd
	// a pipe, as from a container runtime, not the log file itself: a
	// process that opens /dev/stdout (spoc run --out /dev/stdout) must
	// append to the stream, not truncate and overwrite a file
	out := pipeWriter{log}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		c.waitReason, c.waitMessage = "StartError", err.Error()
		return
	}
	c.cmd, c.done, c.startedAt = cmd, make(chan struct{}), metav1.Now()
	c.waitReason, c.waitMessage = "", ""
	go func() {
		err := cmd.Wait()
		log.Close()
		c.exitCode = 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			c.exitCode = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				c.exitCode = 128 + int(ws.Signal())
			}
		} else if err != nil {
			c.exitCode = 128
		}
		c.finishedAt = metav1.Now()
		close(c.done)
	}()
	a.opts.Logger.Info("kubenode started container", "pod", p.Namespace+"/"+p.Name, "container", c.spec.Name, "ip", r.ip, "argv", argv)
}

// pipeWriter hides the *os.File from exec.Cmd, which then gives the
// process a pipe and copies it.
type pipeWriter struct{ w io.Writer }

func (p pipeWriter) Write(b []byte) (int, error) { return p.w.Write(b) }

// metaField is a fieldRef to one annotation or label:
// metadata.annotations['batch.kubernetes.io/job-completion-index'].
var metaField = regexp.MustCompile(`^metadata\.(annotations|labels)\['([^']+)'\]$`)

// env is the container's environment: PATH and HOME of the agent, then the
// container's variables with secretKeyRef, configMapKeyRef and the pod's
// own fields resolved through the API, as the kubelet does.
func (a *Agent) env(ctx context.Context, p *corev1.Pod, ip string, c *corev1.Container) ([]string, error) {
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if host, port, err := net.SplitHostPort(a.opts.APIServer); err == nil {
		// the kubelet's service variables of the kubernetes Service
		out = append(out, "KUBERNETES_SERVICE_HOST="+host, "KUBERNETES_SERVICE_PORT="+port)
	}
	for _, e := range c.Env {
		v := e.Value
		if src := e.ValueFrom; src != nil {
			switch {
			case src.SecretKeyRef != nil:
				ref := src.SecretKeyRef
				s, err := a.opts.Client.CoreV1().Secrets(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
				if err != nil {
					if apierrors.IsNotFound(err) && ref.Optional != nil && *ref.Optional {
						continue
					}
					return nil, fmt.Errorf("env %s: %w", e.Name, err)
				}
				b, ok := s.Data[ref.Key]
				if !ok {
					return nil, fmt.Errorf("env %s: couldn't find key %s in Secret %s/%s", e.Name, ref.Key, p.Namespace, ref.Name)
				}
				v = string(b)
			case src.ConfigMapKeyRef != nil:
				ref := src.ConfigMapKeyRef
				m, err := a.opts.Client.CoreV1().ConfigMaps(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
				if err != nil {
					return nil, fmt.Errorf("env %s: %w", e.Name, err)
				}
				v = m.Data[ref.Key]
			case src.FieldRef != nil:
				switch src.FieldRef.FieldPath {
				case "metadata.name":
					v = p.Name
				case "metadata.namespace":
					v = p.Namespace
				case "status.podIP":
					v = ip
				case "spec.nodeName":
					v = a.opts.Node
				case "spec.serviceAccountName":
					v = p.Spec.ServiceAccountName
				default:
					if m := metaField.FindStringSubmatch(src.FieldRef.FieldPath); m != nil {
						if m[1] == "annotations" {
							v = p.Annotations[m[2]]
						} else {
							v = p.Labels[m[2]]
						}
						break
					}
					return nil, fmt.Errorf("env %s: field %s is not supported by this node agent", e.Name, src.FieldRef.FieldPath)
				}
			default:
				return nil, fmt.Errorf("env %s: this node agent resolves secretKeyRef, configMapKeyRef and fieldRef only", e.Name)
			}
		}
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

// probe runs the container's startup and readiness HTTP probes once on the
// pod IP; a container without probes is ready once started.
func probe(ctx context.Context, ip string, c *corev1.Container) bool {
	for _, pr := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe} {
		if pr == nil || pr.HTTPGet == nil {
			continue
		}
		port, ok := resolvePort(pr.HTTPGet.Port, c)
		if !ok {
			return false
		}
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		url := "http://" + net.JoinHostPort(ip, strconv.Itoa(port)) + pr.HTTPGet.Path
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			cancel()
			return false
		}
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return false
		}
	}
	return true
}

// resolvePort turns a probe's port (a number or a container port name) into
// a number.
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, bool) {
	if p.Type == intstr.Int {
		return p.IntValue(), true
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), true
		}
	}
	return 0, false
}

func exited(c *ctrRun) bool {
	if c.done == nil {
		return false
	}
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (r *podRun) stopping() bool {
	select {
	case <-r.stopped:
		return true
	default:
		return false
	}
}

// kill stops every process of the pod: SIGTERM to each process group, then
// SIGKILL after grace; it returns once all have exited and closes stopped.
// Only the first call acts; later ones wait for it.
func (r *podRun) kill(grace time.Duration) {
	r.stopOnce.Do(func() {
		for _, c := range r.ctrs {
			if c.cmd != nil && !exited(c) {
				syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
			}
		}
		deadline := time.NewTimer(grace)
		defer deadline.Stop()
		expired := false
		for _, c := range r.ctrs {
			if c.cmd == nil {
				continue
			}
			if !expired {
				select {
				case <-c.done:
					continue
				case <-deadline.C:
					expired = true
				}
			}
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
		}
		close(r.stopped)
	})
	<-r.stopped
}
