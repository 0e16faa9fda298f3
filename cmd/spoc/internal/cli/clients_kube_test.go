package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/internal/testharness/kubetest"
	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// kubeClients starts a real control plane (etcd, kube-apiserver with RBAC,
// kube-controller-manager with its Job controller, spoc's node agent),
// applies the shipped manifest's ServiceAccounts, Roles and RoleBindings in
// namespace spoc, and returns a spoc config whose run.kubernetes reaches
// the cluster as the ServiceAccount spoc bound to the shipped Role
// spoc-run (so that it can do only what the documented RBAC allows).
func kubeClients(t *testing.T) (context.Context, *kubetest.Cluster, string, string) {
	t.Helper()
	spoc := spocBinary(t)
	bins := kubetest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	c, err := kubetest.Start(ctx, bins, kubetest.Options{Command: kubetest.SpocCommand(spoc)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster logs kept in %s", c.Dir)
		}
		c.Close(t.Failed())
	})
	if err := c.Namespace(ctx, "spoc"); err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile("../../../../deploy/kubernetes/spoc-run-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.SplitN(string(shipped), "\n---\n", 2) // the Job, then its RBAC
	kubectl := func(stdin string, args ...string) {
		cmd := exec.CommandContext(ctx, c.Kubectl, append([]string{"--kubeconfig", c.Kubeconfig, "--namespace", "spoc"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	kubectl(docs[1], "apply", "-f", "-")
	if _, err := c.Client.CoreV1().ServiceAccounts("spoc").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "spoc"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := c.Client.CoreV1().ServiceAccounts("spoc").CreateToken(ctx, "spoc", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	var adminToken string
	for _, line := range strings.Split(string(admin), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "token:" {
			adminToken = f[1]
		}
	}
	writeFile(t, kc, strings.Replace(string(admin), adminToken, tok.Status.Token, 1))
	// RBAC is enforced: what the Role spoc-run does not grant is refused,
	// so a run that works shows the shipped Roles suffice
	if out, err := exec.CommandContext(ctx, c.Kubectl, "--kubeconfig", kc, "--namespace", "spoc", "get", "secrets").CombinedOutput(); err == nil || !strings.Contains(string(out), "Forbidden") {
		t.Fatalf("spoc's ServiceAccount may list secrets (%v): RBAC is not enforced\n%s", err, out)
	}
	cfg := filepath.Join(t.TempDir(), "spoc.yaml")
	writeFile(t, cfg, clientsConfig+fmt.Sprintf(`  kubernetes:
    namespace: spoc
    image: registry.invalid/spoc:test
    kubectl: %s
    kubeconfig: %s
    ready_timeout: 1m
`, c.Kubectl, kc))
	return ctx, c, spoc, cfg
}

func ptr[T any](v T) *T { return &v }

// jobPods lists the pods of spoc's client Jobs in namespace spoc.
func jobPods(ctx context.Context, t *testing.T, c *kubetest.Cluster) []corev1.Pod {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods("spoc").List(ctx, metav1.ListOptions{LabelSelector: engine.LabelRun})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// A live run whose client is an Indexed Job of 3 pods on a real control
// plane, against a spoc sim serve process: every request is in the merged
// records exactly once, from the pod of its shard; the summary has each
// pod's client check; the Job and its ConfigMap are gone afterwards. Then
// a run whose pod is killed mid-run fails naming the pod, no pod is
// retried, and no records are left.
func TestRunClientsAsKubernetesJobPods(t *testing.T) {
	testtool.Long(t, "starts a Kubernetes control plane and runs two split runs as Indexed Jobs: about 2 minutes")
	ctx, c, spoc, cfg := kubeClients(t)
	url := startSimServer(t, spoc)
	args := func(out, duration string) []string {
		return []string{"run", "-c", cfg, "--target", url, "--model", "openai/gpt-oss-20b", "--users", "7", "--ramp", "300ms",
			"--warmup", "500ms", "--duration", duration, "--clients", "3", "--out", out, "--quiet", "--json"}
	}

	t.Run("3 pods, every request merged once", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		began := time.Now()
		code, stdout, stderr := runSpoc(t, spoc, args(out, "3s")...)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		t.Logf("spoc run --clients 3 on Kubernetes: %s", time.Since(began).Round(time.Millisecond))
		sum, n := checkMergedRun(t, stdout, out, 7, 3)
		var scheduled int64
		for _, sh := range sum.Client.Shards {
			if !strings.HasPrefix(sh.Name, "pod spoc-run-") || sh.Health == nil || sh.Requests == 0 || sh.StartSkewMs < 0 || sh.StartSkewMs > 1000 {
				t.Errorf("shard %d's check: %+v", sh.Shard, sh)
			}
			scheduled += sh.Requests
			t.Logf("shard %d: %s, %d requests, start skew %.1f ms", sh.Shard, sh.Name, sh.Requests, sh.StartSkewMs)
		}
		if scheduled != n {
			t.Errorf("the shards sent %d requests, %d records merged", scheduled, n)
		}
		if left := jobPods(ctx, t, c); len(left) != 0 {
			t.Errorf("%d pods left after the run", len(left))
		}
		jobs, _ := c.Client.BatchV1().Jobs("spoc").List(ctx, metav1.ListOptions{})
		cms, _ := c.Client.CoreV1().ConfigMaps("spoc").List(ctx, metav1.ListOptions{LabelSelector: engine.LabelRun})
		if len(jobs.Items) != 0 || len(cms.Items) != 0 {
			t.Errorf("left after the run: %d jobs, %d configmaps", len(jobs.Items), len(cms.Items))
		}
	})

	t.Run("a killed pod fails the run naming it, no retry", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		cmd := exec.Command(spoc, args(out, "30s")...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// every pod the Job ever has, until spoc exits
		seen := map[string]bool{}
		var victim string
		deadline := time.After(90 * time.Second)
		var err error
	wait:
		for {
			select {
			case err = <-done:
				break wait
			case <-deadline:
				t.Fatalf("the run went on after pod %q was killed\n%s", victim, stderr.String())
			case <-time.After(100 * time.Millisecond):
			}
			pods := jobPods(ctx, t, c)
			running := 0
			for _, p := range pods {
				seen[p.Name] = true
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			if victim != "" || running < 3 {
				continue
			}
			cms, err := c.Client.CoreV1().ConfigMaps("spoc").List(ctx, metav1.ListOptions{LabelSelector: engine.LabelRun})
			if err != nil || len(cms.Items) != 1 || cms.Items[0].Data[engine.ClientKeyStart] == "" {
				continue
			}
			time.Sleep(time.Second) // the shards load the server
			sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
			victim = pods[1].Name
			if err := c.Client.CoreV1().Pods("spoc").Delete(ctx, victim, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
				t.Fatal(err)
			}
		}
		if victim == "" {
			t.Fatalf("spoc ended before its 3 pods ran: %v\n%s", err, stderr.String())
		}
		if code := exitCode(err); code != 1 {
			t.Errorf("exit %d, want 1\n%s", code, stderr.String())
		}
		if !strings.Contains(stderr.String(), "pod "+victim) || !strings.Contains(stderr.String(), "client shard") {
			t.Errorf("the error does not name the killed pod %s:\n%s", victim, stderr.String())
		}
		if len(seen) != 3 {
			t.Errorf("the Job had pods %v: want its 3, none retried", seen)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("records left at %s after a failed run: %v", out, err)
		}
		jobs, _ := c.Client.BatchV1().Jobs("spoc").List(ctx, metav1.ListOptions{})
		if len(jobs.Items) != 0 {
			t.Errorf("%d jobs left after the failed run", len(jobs.Items))
		}
		t.Logf("pod %s killed: %s", victim, lastLine(stderr.String()))
	})
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
