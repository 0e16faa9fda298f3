package kubenode

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// serviceProxy is the agent's kube-proxy: for each Service whose cluster
// IP is a loopback address (the test control plane allocates them from a
// /16 of 127.64–127.127) it listens on that IP and port and forwards each
// connection to the next ready pod the Service selects, round robin. The
// API server refuses loopback pod IPs in EndpointSlices, so the backends
// come from the pods themselves.
type serviceProxy struct {
	mu        sync.Mutex
	listeners map[string]*proxyPort // by cluster IP:port
}

type proxyPort struct {
	l        net.Listener
	mu       sync.Mutex
	backends []string
	next     int
}

// sync opens and closes listeners to match the Services and points each
// at the ready pods it selects now.
func (sp *serviceProxy) sync(ctx context.Context, a *Agent, pods []corev1.Pod) error {
	svcs, err := a.opts.Client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.listeners == nil {
		sp.listeners = map[string]*proxyPort{}
	}
	live := map[string]bool{}
	for _, s := range svcs.Items {
		ip := net.ParseIP(s.Spec.ClusterIP)
		if ip == nil || !ip.IsLoopback() || len(s.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(s.Spec.Selector)
		for _, port := range s.Spec.Ports {
			if port.Protocol != "" && port.Protocol != corev1.ProtocolTCP {
				continue
			}
			addr := net.JoinHostPort(s.Spec.ClusterIP, strconv.Itoa(int(port.Port)))
			live[addr] = true
			var backends []string
			for i := range pods {
				p := &pods[i]
				if p.Namespace != s.Namespace || p.Spec.NodeName != a.opts.Node || p.DeletionTimestamp != nil || p.Status.PodIP == "" ||
					!podReady(p) || !sel.Matches(labels.Set(p.Labels)) {
					continue
				}
				if target, ok := targetPort(p, port); ok {
					backends = append(backends, net.JoinHostPort(p.Status.PodIP, strconv.Itoa(target)))
				}
			}
			pp := sp.listeners[addr]
			if pp == nil {
				l, err := net.Listen("tcp", addr)
				if err != nil {
					a.opts.Logger.Warn("kubenode service proxy", "addr", addr, "err", err)
					continue
				}
				pp = &proxyPort{l: l}
				sp.listeners[addr] = pp
				go pp.serve()
			}
			pp.mu.Lock()
			pp.backends = backends
			pp.mu.Unlock()
		}
	}
	for addr, pp := range sp.listeners {
		if !live[addr] {
			pp.l.Close()
			delete(sp.listeners, addr)
		}
	}
	return nil
}

func (sp *serviceProxy) close() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for addr, pp := range sp.listeners {
		pp.l.Close()
		delete(sp.listeners, addr)
	}
}

// serve accepts connections until the listener closes; a connection
// finding no ready pod is closed, as kube-proxy rejects it.
func (pp *proxyPort) serve() {
	for {
		conn, err := pp.l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		pp.mu.Lock()
		var backend string
		if len(pp.backends) > 0 {
			backend = pp.backends[pp.next%len(pp.backends)]
			pp.next++
		}
		pp.mu.Unlock()
		go forward(conn, backend)
	}
}

func forward(conn net.Conn, backend string) {
	defer conn.Close()
	if backend == "" {
		return
	}
	up, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, conn); up.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(conn, up); conn.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// targetPort resolves a Service port's target in pod p.
func targetPort(p *corev1.Pod, port corev1.ServicePort) (int, bool) {
	tp := port.TargetPort
	if tp.IntValue() != 0 {
		return tp.IntValue(), true
	}
	if tp.StrVal == "" {
		return int(port.Port), true
	}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == tp.StrVal {
				return int(cp.ContainerPort), true
			}
		}
	}
	return 0, false
}
