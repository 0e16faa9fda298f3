// Package kubetest starts a real Kubernetes control plane on loopback for
// tests: etcd (Debian's etcd-server), kube-apiserver and
// kube-controller-manager (built from the Go module proxy by the tools
// module in tools/kube) and spoc's node agent (internal/testharness/kubenode) in place
// of a kubelet. No image is pulled: containers run as local processes.
//
// Where a binary is missing the test is skipped, except under CI=true,
// where it fails with the command that installs or builds it.
package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/spoc-project/spoc/internal/testharness/kubenode"
	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// BuildCommand builds the control-plane binaries and kubectl into
// tools/kube/bin (about 8 minutes and 1.5 GB of module cache the first
// time).
const BuildCommand = "cd tools/kube && go build -o bin/ tool"

// InstallEtcd installs etcd.
const InstallEtcd = "apt-get install -y etcd-server"

// Binaries are the programs a cluster runs.
type Binaries struct {
	Etcd, APIServer, ControllerManager, Kubectl string
}

// FindBinaries locates etcd on PATH and the Kubernetes binaries in
// $SPOC_KUBE_BIN or the repository's tools/kube/bin (searched upwards from
// the working directory). The error names what is missing and how to get
// it.
func FindBinaries() (Binaries, error) {
	var b Binaries
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		return b, fmt.Errorf("etcd not found on PATH: install it with %s", InstallEtcd)
	}
	b.Etcd = etcd
	dir := os.Getenv("SPOC_KUBE_BIN")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return b, err
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "tools", "kube", "go.mod")); err == nil {
				dir = filepath.Join(d, "tools", "kube", "bin")
				break
			}
			if filepath.Dir(d) == d {
				return b, fmt.Errorf("tools/kube not found above %s: set SPOC_KUBE_BIN to the folder holding kube-apiserver", wd)
			}
		}
	}
	for _, p := range []struct {
		name string
		dst  *string
	}{{"kube-apiserver", &b.APIServer}, {"kube-controller-manager", &b.ControllerManager}, {"kubectl", &b.Kubectl}} {
		path := filepath.Join(dir, p.name)
		if _, err := os.Stat(path); err != nil {
			return b, fmt.Errorf("%s not found in %s: build it with %s", p.name, dir, BuildCommand)
		}
		*p.dst = path
	}
	return b, nil
}

// Need returns the binaries or stops t: skipped where one is missing,
// failed under CI=true, naming the command that provides it.
func Need(t testing.TB) Binaries {
	t.Helper()
	b, err := FindBinaries()
	if err != nil {
		testtool.MissingErr(t, err)
	}
	return b
}

// Options configure a cluster's node.
type Options struct {
	// GPUs is the node's nvidia.com/gpu capacity.
	GPUs int
	// NodeLabels are added to the node's labels.
	NodeLabels map[string]string
	// Command maps containers to local processes (see SpocCommand).
	Command kubenode.CommandFunc
	Logger  *slog.Logger
}

// Cluster is a running control plane and node.
type Cluster struct {
	// Kubeconfig is the path of a kubeconfig reaching the API server as an
	// administrator; Kubectl the kubectl binary of the same release.
	Kubeconfig string
	Kubectl    string
	// Client is an administrator's client.
	Client *Clients
	// Dir holds the components' logs (etcd.log, kube-apiserver.log,
	// kube-controller-manager.log) and the node's container logs (node/).
	Dir string

	procs     []*exec.Cmd
	stopAgent context.CancelFunc
	agentDone chan struct{}
}

// Start starts etcd, kube-apiserver, kube-controller-manager and the node
// agent on loopback, each on free ports, and returns once a Deployment can
// get Pods. Close stops everything and removes Dir.
func Start(ctx context.Context, b Binaries, opts Options) (c *Cluster, err error) {
	dir, err := os.MkdirTemp("", "spoc-kube-")
	if err != nil {
		return nil, err
	}
	c = &Cluster{Dir: dir, Kubectl: b.Kubectl}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w (logs in %s)", err, dir)
			c.stop()
		}
	}()
	ports, err := freePorts(3)
	if err != nil {
		return c, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	if err := c.start("etcd", b.Etcd, "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", "http://127.0.0.1:"+strconv.Itoa(ports[1]),
		"--initial-advertise-peer-urls", "http://127.0.0.1:"+strconv.Itoa(ports[1]),
		"--initial-cluster", "default=http://127.0.0.1:"+strconv.Itoa(ports[1])); err != nil {
		return c, err
	}
	if err := waitHTTP(ctx, &http.Client{}, etcdURL+"/health", "", time.Minute); err != nil {
		return c, fmt.Errorf("etcd: %w", err)
	}
	token, err := c.credentials()
	if err != nil {
		return c, err
	}
	server := "https://127.0.0.1:" + strconv.Itoa(ports[2])
	// a serving certificate of a CA made here, known before the API
	// server starts: the pods verify the API server with it (their
	// service-account folder's ca.crt), as in a cluster
	caPEM, err := c.servingCert()
	if err != nil {
		return c, err
	}
	// Service cluster IPs come from a loopback range, so that a Service's
	// address is one this machine can listen on; a random one of
	// 127.64–127.127, so that clusters of test processes running side by
	// side do not hand out the same addresses (pod IPs are below 127.64).
	serviceRange := fmt.Sprintf("127.%d.0.0/16", 64+mrand.N(64))
	if err := c.start("kube-apiserver", b.APIServer, "--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[2]),
		"--cert-dir", filepath.Join(dir, "pki"),
		"--tls-cert-file", filepath.Join(dir, "serving.crt"), "--tls-private-key-file", filepath.Join(dir, "serving.key"),
		// RBAC, so that a pod's service account can do what its Roles
		// allow and nothing else (the administrator is system:masters)
		"--authorization-mode", "RBAC",
		"--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--service-cluster-ip-range", serviceRange,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(dir, "sa.key")); err != nil {
		return c, err
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := waitHTTP(ctx, insecure, server+"/readyz", token, 2*time.Minute); err != nil {
		return c, fmt.Errorf("kube-apiserver: %w", err)
	}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, []byte(kubeconfig(server, token)), 0o600); err != nil {
		return c, err
	}
	// Only the controllers a Deployment, its Service and its clean-up
	// need; no node lifecycle controller, so the agent sends no heartbeats.
	if err := c.start("kube-controller-manager", b.ControllerManager, "--kubeconfig", c.Kubeconfig,
		"--leader-elect=false", "--secure-port=0",
		"--controllers=deployment,replicaset,endpointslice,garbagecollector,namespace,serviceaccount,job",
		"--service-account-private-key-file", filepath.Join(dir, "sa.key")); err != nil {
		return c, err
	}
	cs, err := NewClients(&rest.Config{
		Host: server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS: 100, Burst: 200,
	})
	if err != nil {
		return c, err
	}
	c.Client = cs
	agent, err := kubenode.New(kubenode.Options{
		Client: cs, GPUs: opts.GPUs, Labels: opts.NodeLabels, Command: opts.Command,
		Dir: filepath.Join(dir, "node"), Logger: opts.Logger,
		APIServer: strings.TrimPrefix(server, "https://"), CACert: caPEM,
	})
	if err != nil {
		return c, err
	}
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.stopAgent, c.agentDone = cancel, make(chan struct{})
	go func() {
		defer close(c.agentDone)
		if err := agent.Run(actx); err != nil {
			fmt.Fprintln(os.Stderr, "kubetest: node agent:", err)
		}
	}()
	// the controller manager is up once it has made the default namespace's
	// service account
	if err := c.waitServiceAccount(ctx, "default", 2*time.Minute); err != nil {
		return c, fmt.Errorf("kube-controller-manager: %w", err)
	}
	return c, nil
}

// Namespace creates namespace name and waits until pods can be created in
// it (its default service account exists).
func (c *Cluster) Namespace(ctx context.Context, name string) error {
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return c.waitServiceAccount(ctx, name, time.Minute)
}

func (c *Cluster) waitServiceAccount(ctx context.Context, ns string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, err := c.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("no default service account in %s after %s: %w", ns, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Close stops the node agent (and with it every container process), the
// controller manager, the API server and etcd, and removes Dir unless
// keepLogs.
func (c *Cluster) Close(keepLogs bool) {
	c.stop()
	if !keepLogs {
		os.RemoveAll(c.Dir)
	}
}

func (c *Cluster) stop() {
	if c.stopAgent != nil {
		c.stopAgent()
		<-c.agentDone
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		p.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			p.Process.Kill()
			<-done
		}
	}
	c.procs = nil
}

// start runs a component with its output in Dir/NAME.log; it dies with
// the test process.
func (c *Cluster) start(name, bin string, args ...string) error {
	log, err := os.Create(filepath.Join(c.Dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	log.Close() // the child has its own descriptor
	c.procs = append(c.procs, cmd)
	return nil
}

// credentials writes the API server's token file and service-account key
// pair and returns the administrator's token.
func (c *Cluster) credentials() (string, error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	token := hex.EncodeToString(raw)
	if err := os.WriteFile(filepath.Join(c.Dir, "tokens.csv"), []byte(token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return "", err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return "", err
	}
	return token, nil
}

// servingCert writes a CA and the API server's serving certificate for
// 127.0.0.1 (serving.crt, serving.key) and returns the CA's PEM.
func (c *Cluster) servingCert() ([]byte, error) {
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubetest-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTpl, caTpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost", "kubernetes.default.svc"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(filepath.Join(c.Dir, "serving.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "serving.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return nil, err
	}
	return caPEM, nil
}

func kubeconfig(server, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: kubetest
  context:
    cluster: kubetest
    user: admin
current-context: kubetest
`, server, token)
}

// waitHTTP polls url until it answers 200 or timeout passes.
func waitHTTP(ctx context.Context, client *http.Client, url, token string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: HTTP %d: %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	if last == nil {
		last = errors.New("no answer")
	}
	return fmt.Errorf("not ready after %s: %w", timeout, last)
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
