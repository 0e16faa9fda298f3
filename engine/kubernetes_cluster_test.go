package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/spoc-project/spoc/internal/testharness/kubetest"
	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// TestKubernetesOnARealControlPlane runs the launcher with kubectl against
// a real kube-apiserver and kube-controller-manager (internal/testharness/kubetest),
// whose node agent runs each pod's server as `spoc sim serve` on a pod IP
// of its own.
func TestKubernetesOnARealControlPlane(t *testing.T) {
	ctx, c, spoc := controlPlane(t, 4*time.Minute) // skips with -short
	launcher := func(t *testing.T, ns string, mod func(*KubernetesOptions)) *Kubernetes {
		t.Helper()
		if err := c.Namespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
		o := KubernetesOptions{
			Namespace: ns, Kubeconfig: c.Kubeconfig, Runner: ExecRunner{Binary: c.Kubectl},
			Image: "vllm/vllm-openai:v0.11.0", Model: "gpt-oss-120b", Study: "cluster test",
			BaseParams: Params{"tensor-parallel-size": 4}, Replicas: 2, GPUsPerReplica: 4,
			ReadyTimeout: time.Minute, StopTimeout: 5 * time.Second, PollInterval: 100 * time.Millisecond,
			NamePrefix: "spoc-" + ns, Dir: t.TempDir(),
			Logger: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		}
		if mod != nil {
			mod(&o)
		}
		k, err := NewKubernetes(o)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	// leftovers lists what spoc created in ns that still exists.
	leftovers := func(t *testing.T, ns string) []string {
		t.Helper()
		return managedObjects(ctx, t, c.Client, ns)
	}

	t.Run("two replicas ready, load through the Service, metrics per pod", func(t *testing.T) {
		k := launcher(t, "ready", nil)
		began := time.Now()
		srv, err := k.Start(ctx, Params{"max-num-seqs": 64})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		t.Logf("2 replicas ready and answering through the Service in %s", time.Since(began).Round(time.Millisecond))
		ep := srv.Endpoint()
		pods, err := c.Client.CoreV1().Pods("ready").List(ctx, metav1.ListOptions{LabelSelector: LabelStudy + "=cluster-test"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 2 || len(ep.MetricsURLs) != 2 || len(ep.MetricsNames) != 2 {
			t.Fatalf("%d pods labelled with the study; endpoint %+v: want 2 pods, each scraped", len(pods.Items), ep)
		}
		names := map[string]bool{}
		for _, p := range pods.Items {
			names[p.Name] = true
		}
		for i, u := range ep.MetricsURLs {
			if !names[ep.MetricsNames[i]] {
				t.Errorf("metrics URL %s named %q, which is none of the pods %v", u, ep.MetricsNames[i], names)
			}
			body := get(t, u)
			if !strings.Contains(body, "vllm:") {
				t.Errorf("%s is no vLLM metrics page", u)
			}
		}
		if ep.MetricsURLs[0] == ep.MetricsURLs[1] {
			t.Errorf("both replicas scraped at %s", ep.MetricsURLs[0])
		}
		if !strings.Contains(get(t, ep.BaseURL+"/v1/models"), "gpt-oss-120b") {
			t.Error("the Service does not serve the model")
		}
		if err := Alive(ctx, srv); err != nil {
			t.Errorf("Alive: %v", err)
		}
		if err := srv.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if left := leftovers(t, "ready"); len(left) > 0 {
			t.Errorf("left after Stop: %v", left)
		}
	})

	t.Run("a pod killed mid-trial fails the server and Stop leaves nothing", func(t *testing.T) {
		k := launcher(t, "killed", nil)
		srv, err := k.Start(ctx, nil)
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		victim := srv.Endpoint().MetricsNames[1]
		if err := c.Client.CoreV1().Pods("killed").Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err = Alive(ctx, srv)
		if !errors.Is(err, ErrServerGone) || !strings.Contains(err.Error(), victim) {
			t.Errorf("Alive after pod %s was killed = %v, want ErrServerGone naming it", victim, err)
		}
		if err := srv.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if left := leftovers(t, "killed"); len(left) > 0 {
			t.Errorf("left after Stop: %v", left)
		}
	})

	t.Run("a server that exits fails Start and leaves nothing", func(t *testing.T) {
		k := launcher(t, "crash", func(o *KubernetesOptions) {
			o.BaseParams = Params{"tensor-parallel-size": 4, "gpu-memory-utilization": 0.05}
		})
		_, err := k.Start(ctx, nil)
		var f *Failure
		if !errors.As(err, &f) || f.ExitCode == 0 || !errors.Is(err, ErrInfeasible) || !strings.Contains(f.Detail, "kv cache size") {
			t.Fatalf("Start = %v, want an infeasible failure classified from the pod's log", err)
		}
		if left := leftovers(t, "crash"); len(left) > 0 {
			t.Errorf("left after a failed Start: %v", left)
		}
	})

	t.Run("cancelled while waiting (Ctrl-C) leaves nothing", func(t *testing.T) {
		// 3 replicas of 4 GPUs on an 8-GPU node: the third never binds
		k := launcher(t, "cancel", func(o *KubernetesOptions) { o.Replicas = 3 })
		cctx, stop := context.WithCancel(ctx)
		go func() {
			for cctx.Err() == nil {
				pods, err := c.Client.CoreV1().Pods("cancel").List(cctx, metav1.ListOptions{})
				if err == nil && len(pods.Items) == 3 {
					stop()
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		_, err := k.Start(cctx, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Start = %v, want cancelled", err)
		}
		if left := leftovers(t, "cancel"); len(left) > 0 {
			t.Errorf("left after Ctrl-C: %v", left)
		}
	})

	t.Run("spoc k8s gc deletes a crashed study's objects and no other's", func(t *testing.T) {
		crashed := launcher(t, "gc", func(o *KubernetesOptions) { o.Study, o.Replicas, o.NamePrefix = "crashed one", 1, "spoc-crashed" })
		other := launcher(t, "gc", func(o *KubernetesOptions) { o.Study, o.Replicas, o.NamePrefix = "other", 1, "spoc-other" })
		if _, err := crashed.Start(ctx, nil); err != nil { // never stopped: spoc was killed
			t.Fatal(err)
		}
		keep, err := other.Start(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(t.TempDir(), "spoc.yaml")
		yml := fmt.Sprintf("search:\n  study: crashed one\nengine:\n  kubernetes:\n    namespace: gc\n    kubectl: %s\n    kubeconfig: %s\n", c.Kubectl, c.Kubeconfig)
		if err := os.WriteFile(cfg, []byte(yml), 0o644); err != nil {
			t.Fatal(err)
		}
		study := func(name string) []string {
			var left []string
			for _, o := range leftovers(t, "gc") {
				if strings.Contains(o, "/spoc-"+name) {
					left = append(left, o)
				}
			}
			return left
		}
		dry, err := exec.CommandContext(ctx, spoc, "k8s", "gc", "-c", cfg, "--dry-run").CombinedOutput()
		if err != nil || !strings.Contains(string(dry), "would delete deployment.apps/spoc-crashed-s1") || strings.Contains(string(dry), "spoc-other") {
			t.Fatalf("spoc k8s gc --dry-run: %v\n%s", err, dry)
		}
		if len(study("crashed")) == 0 {
			t.Fatal("--dry-run deleted objects")
		}
		out, err := exec.CommandContext(ctx, spoc, "k8s", "gc", "-c", cfg).CombinedOutput()
		if err != nil {
			t.Fatalf("spoc k8s gc: %v\n%s", err, out)
		}
		t.Logf("spoc k8s gc:\n%s", out)
		if left := study("crashed"); len(left) > 0 {
			t.Errorf("left after spoc k8s gc: %v", left)
		}
		if len(study("other")) == 0 {
			t.Error("spoc k8s gc deleted another study's objects")
		}
		if err := Alive(ctx, keep); err != nil {
			t.Errorf("the other study's server after gc: %v", err)
		}
		stop(t, keep)
	})

	t.Run("spoc tune: trials on the cluster, Ctrl-C leaves nothing", func(t *testing.T) {
		if err := c.Namespace(ctx, "tune"); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(t.TempDir(), "spoc.yaml")
		yml := fmt.Sprintf(`engine:
  kind: kubernetes
  model: gpt-oss-120b
  gpus: 8
  tensor_parallel_size: 4
  process:
    stop_timeout: 5s
  kubernetes:
    namespace: tune
    kubectl: %s
    kubeconfig: %s
    image: vllm/vllm-openai:v0.11.0
    args: [--model, "{{.Model}}", --port, "{{.Port}}", --time-scale, "20"]
    ready_timeout: 1m
search:
  study: k8s
  trials: 2
  population: 2
  users: 4
  duration: 3s
  warmup: 1s
  space:
    - {name: max-num-batched-tokens, type: int, low: 1024, high: 8192, log: true}
run:
  ramp: 0s
  think_time_scale: 0
`, c.Kubectl, c.Kubeconfig)
		if err := os.WriteFile(cfg, []byte(yml), 0o644); err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		began := time.Now()
		b, err := exec.CommandContext(ctx, spoc, "tune", "-c", cfg, "--out", out).CombinedOutput()
		if err != nil {
			t.Fatalf("spoc tune: %v\n%s", err, b)
		}
		t.Logf("spoc tune, 2 trials of 2 replicas each: %s", time.Since(began).Round(100*time.Millisecond))
		if !strings.Contains(string(b), `study "k8s": 2 trials (COMPLETE 2)`) {
			t.Errorf("spoc tune did not complete 2 trials:\n%s", b)
		}
		if left := leftovers(t, "tune"); len(left) > 0 {
			t.Errorf("left after spoc tune: %v", left)
		}
		// each trial's telemetry carries both replicas, named by pod
		tels, _ := filepath.Glob(filepath.Join(out, "trials", "k8s", "*", "telemetry.jsonl"))
		if len(tels) == 0 {
			t.Fatalf("no telemetry.jsonl under %s", out)
		}
		for _, f := range tels {
			pods := map[string]bool{}
			for _, m := range regexp.MustCompile(`"target":"(spoc-k8s-s\d+-[a-z0-9]+-[a-z0-9]+)"`).FindAllStringSubmatch(string(readFile(t, f)), -1) {
				pods[m[1]] = true
			}
			if len(pods) != 2 {
				t.Errorf("%s: samples from pods %v, want both replicas", f, pods)
			}
		}

		// Ctrl-C while a trial's pods serve load
		var stderr strings.Builder
		cmd := exec.CommandContext(ctx, spoc, "tune", "-c", cfg, "--out", t.TempDir())
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		readyPods := func() int {
			pods, err := c.Client.CoreV1().Pods("tune").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, p := range pods.Items {
				for _, cond := range p.Status.Conditions {
					if cond.Type == "Ready" && cond.Status == "True" {
						n++
					}
				}
			}
			return n
		}
		for readyPods() < 2 {
			if ctx.Err() != nil {
				t.Fatalf("no trial started; stderr:\n%s", stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(time.Second) // into the load
		interrupted := time.Now()
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("spoc tune after SIGINT: %v, want exit 130; stderr:\n%s", err, stderr.String())
		}
		left := leftovers(t, "tune")
		t.Logf("Ctrl-C to exit: %s; objects left: %d", time.Since(interrupted).Round(10*time.Millisecond), len(left))
		if len(left) > 0 {
			t.Errorf("left after Ctrl-C: %v", left)
		}
	})

	t.Run("spoc run as the documented Job against a trial's Service: every record kept on the claim, read back by another pod", func(t *testing.T) {
		k := launcher(t, "job", func(o *KubernetesOptions) {
			o.Replicas = 1
			o.Args = []string{"--model", "{{.Model}}", "--port", "{{.Port}}", "--time-scale", "20"}
		})
		srv, err := k.Start(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer stop(t, srv)
		// the claim the manifest mounts, as its header says to create; the
		// test node maps it to a folder every pod mounting it shares
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "spoc-records"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		if _, err := c.Client.CoreV1().PersistentVolumeClaims("job").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var job batchv1.Job
		if err := yaml.UnmarshalStrict(readFile(t, "../deploy/kubernetes/spoc-run-job.yaml"), &job); err != nil {
			t.Fatalf("deploy/kubernetes/spoc-run-job.yaml: %v", err)
		}
		// the ServiceAccount the file declares next to the Job
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: job.Spec.Template.Spec.ServiceAccountName}}
		if _, err := c.Client.CoreV1().ServiceAccounts("job").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// the manifest as documented: its claim, its mount, --out on the
		// claim; only the target and a short run are set here
		ctr := &job.Spec.Template.Spec.Containers[0]
		var out string
		for i := range ctr.Args {
			switch ctr.Args[i] {
			case "--target":
				ctr.Args[i+1] = srv.Endpoint().BaseURL
			case "--users":
				ctr.Args[i+1] = "4"
			case "--duration":
				ctr.Args[i+1] = "3s"
			case "--out":
				out = ctr.Args[i+1]
			}
		}
		if !strings.HasPrefix(out, ctr.VolumeMounts[0].MountPath+"/") {
			t.Fatalf("the manifest's --out %q is not on its volume mount %q", out, ctr.VolumeMounts[0].MountPath)
		}
		ctr.Args = append(ctr.Args, "--warmup", "0s", "--ramp", "0s", "--think-time-scale", "0")
		kubectl := func(args ...string) string {
			out, err := exec.CommandContext(ctx, c.Kubectl, append([]string{"--kubeconfig", c.Kubeconfig, "--namespace", "job"}, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl %v: %v\n%s", args, err, out)
			}
			return string(out)
		}
		// runJob runs j to completion and returns its log
		runJob := func(j *batchv1.Job) string {
			created, err := c.Client.BatchV1().Jobs("job").Create(ctx, j, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for {
				got, err := c.Client.BatchV1().Jobs("job").Get(ctx, created.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got.Status.Succeeded == 1 {
					break
				}
				if got.Status.Failed > 0 || ctx.Err() != nil {
					t.Fatalf("Job %s failed:\n%s", created.Name, kubectl("logs", "job/"+created.Name))
				}
				time.Sleep(200 * time.Millisecond)
			}
			log := kubectl("logs", "job/"+created.Name)
			if err := c.Client.BatchV1().Jobs("job").Delete(ctx, created.Name, metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationForeground)}); err != nil {
				t.Fatal(err)
			}
			return log
		}
		overallRow := func(log string) []string {
			var overall []string
			for _, line := range strings.Split(log, "\n") {
				if f := strings.Fields(line); len(f) > 1 && f[0] == "overall" {
					overall = f
				}
			}
			return overall
		}
		// the summary through the pod's log, as `kubectl logs job/spoc-run`
		overall := overallRow(runJob(job.DeepCopy()))
		// the records on the claim: the node's folder for it
		records := filepath.Join(c.Dir, "node", "claims", "job", "spoc-records", strings.TrimPrefix(out, ctr.VolumeMounts[0].MountPath+"/"))
		n := strings.Count(string(readFile(t, records)), "\n")
		if overall == nil || overall[1] != fmt.Sprint(n) {
			t.Fatalf("%d records written to the claim, the Job's summary row %q: want one record per request", n, overall)
		}
		// another pod mounting the claim reads them back: the same Job
		// manifest running spoc summarize on the claim's file
		reader := job.DeepCopy()
		reader.Name = "spoc-summarize"
		rc := &reader.Spec.Template.Spec.Containers[0]
		rc.Command, rc.Args = []string{"spoc", "summarize"}, []string{out}
		again := overallRow(runJob(reader))
		if again == nil || again[1] != overall[1] {
			t.Errorf("spoc summarize in a second pod on the claim: overall %q, want %s requests", again, overall[1])
		}
		t.Logf("Job: %d requests, %d records on the claim, %s read back by another pod", n, n, again[1])
	})

	t.Run("spoc tune: a pod killed mid-trial fails that trial, the study goes on, nothing is left", func(t *testing.T) {
		if err := c.Namespace(ctx, "podkill"); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(t.TempDir(), "spoc.yaml")
		yml := fmt.Sprintf(`engine:
  kind: kubernetes
  model: gpt-oss-120b
  gpus: 8
  tensor_parallel_size: 4
  process:
    stop_timeout: 5s
  kubernetes:
    namespace: podkill
    kubectl: %s
    kubeconfig: %s
    image: vllm/vllm-openai:v0.11.0
    args: [--model, "{{.Model}}", --port, "{{.Port}}", --time-scale, "20"]
    ready_timeout: 1m
search:
  study: podkill
  trials: 2
  population: 2
  users: 4
  duration: 5s
  warmup: 1s
  space:
    - {name: max-num-batched-tokens, type: int, low: 1024, high: 8192, log: true}
run:
  ramp: 0s
  think_time_scale: 0
`, c.Kubectl, c.Kubeconfig)
		if err := os.WriteFile(cfg, []byte(yml), 0o644); err != nil {
			t.Fatal(err)
		}
		var output strings.Builder
		cmd := exec.CommandContext(ctx, spoc, "tune", "-c", cfg, "--out", t.TempDir())
		cmd.Stdout, cmd.Stderr = &output, &output
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var victim string
		for victim == "" {
			pods, err := c.Client.CoreV1().Pods("podkill").List(ctx, metav1.ListOptions{})
			if err != nil || ctx.Err() != nil {
				t.Fatalf("pods: %v %v", err, ctx.Err())
			}
			// the victim: a pod serving the trial's load (requests running)
			for _, p := range pods.Items {
				if p.Status.PodIP != "" && requestsRunning(p.Status.PodIP+":8000") > 0 {
					victim = p.Name
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := c.Client.CoreV1().Pods("podkill").Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		out := output.String()
		if err != nil || !strings.Contains(out, `study "podkill": 2 trials (COMPLETE 1, FAIL 1)`) || !strings.Contains(out, victim) {
			t.Errorf("spoc tune with pod %s killed in its first trial: %v; want one failed trial naming the pod, one complete\n%s", victim, err, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, victim) && strings.Contains(line, "FAIL") {
				t.Logf("the failed trial: %s", strings.TrimSpace(line))
				break
			}
		}
		if left := leftovers(t, "podkill"); len(left) > 0 {
			t.Errorf("left after spoc tune: %v", left)
		}
	})

	t.Run("a misspelt base manifest is refused before anything is applied", func(t *testing.T) {
		if err := c.Namespace(ctx, "typo"); err != nil {
			t.Fatal(err)
		}
		_, err := NewKubernetes(KubernetesOptions{
			Namespace: "typo", Kubeconfig: c.Kubeconfig, Runner: ExecRunner{Binary: c.Kubectl}, Image: "x",
			BaseManifest:       []byte("apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - name: server\n        imagePullPolicy: Always\n        resoures: {}\n"),
			BaseManifestSource: "base.yaml",
		})
		if err == nil || !strings.Contains(err.Error(), `base.yaml:9: unknown field "resoures"`) {
			t.Fatalf("NewKubernetes = %v, want the misspelt field and its line", err)
		}
		if left := leftovers(t, "typo"); len(left) > 0 {
			t.Errorf("objects exist: %v", left)
		}
	})
}

// testLog writes the launcher's warnings to the test's log.
type testLog struct{ t *testing.T }

func (w testLog) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// requestsRunning is vllm:num_requests_running of the server at addr (0 when it
// cannot be read).
func requestsRunning(addr string) float64 {
	client := &http.Client{Timeout: time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "vllm:num_requests_running{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return v
		}
	}
	return 0
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatal(fmt.Errorf("GET %s: HTTP %d: %v", url, resp.StatusCode, err))
	}
	return string(b)
}

// managedObjects lists the Deployments, ReplicaSets, Pods and Services
// carrying spoc's managed-by label in ns: what a test expects gone once
// spoc has cleaned up.
func managedObjects(ctx context.Context, t *testing.T, client *kubetest.Clients, ns string) []string {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy}
	var left []string
	deps, err := client.AppsV1().Deployments(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		left = append(left, "deployment/"+d.Name)
	}
	rss, err := client.AppsV1().ReplicaSets(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rss.Items {
		left = append(left, "replicaset/"+r.Name)
	}
	pods, err := client.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		left = append(left, "pod/"+p.Name)
	}
	svcs, err := client.CoreV1().Services(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		left = append(left, "service/"+s.Name)
	}
	return left
}

// controlPlane starts the test control plane (internal/testharness/kubetest) with an
// 8-GPU node whose pods run the spoc binary's sim serve, for at most
// timeout, and returns its context, the cluster and the binary. The
// cluster is closed when the test ends, its logs kept when it failed.
func controlPlane(t *testing.T, timeout time.Duration) (context.Context, *kubetest.Cluster, string) {
	t.Helper()
	testtool.Long(t, "starts a Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager) and runs pods for minutes")
	spoc := spocBinary(t) // skips with -short
	bins := kubetest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	c, err := kubetest.Start(ctx, bins, kubetest.Options{GPUs: 8, Command: kubetest.SpocCommand(spoc)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster logs kept in %s", c.Dir)
		}
		c.Close(t.Failed())
	})
	return ctx, c, spoc
}
