package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/spoc-project/spoc/internal/testharness/kubetest"
	"github.com/spoc-project/spoc/internal/testharness/pgtest"
)

// deploymentWatch records, from the API server's own watch, how many of
// spoc's Deployments exist at once in a namespace (one created counts
// until the API server reports it deleted, pods gone) and how many were
// created (a name may be created again once its Deployment is gone: two
// workers count their servers each from s1).
type deploymentWatch struct {
	mu          sync.Mutex
	alive       map[string]bool
	created     int
	most        int
	cancel      context.CancelFunc
	done        chan struct{}
	watchErrors []string
}

func watchDeployments(t *testing.T, c *kubetest.Cluster, ns string) *deploymentWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &deploymentWatch{alive: map[string]bool{}, cancel: cancel, done: make(chan struct{})}
	sel := metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy}
	list, err := c.Client.AppsV1().Deployments(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range list.Items {
		w.alive[d.Name] = true
	}
	sel.ResourceVersion = list.ResourceVersion
	wi, err := c.Client.AppsV1().Deployments(ns).Watch(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			w.mu.Lock()
			switch ev.Type {
			case watch.Added:
				if d, ok := ev.Object.(metav1.Object); ok {
					w.alive[d.GetName()] = true
					w.created++
				}
			case watch.Deleted:
				if d, ok := ev.Object.(metav1.Object); ok {
					delete(w.alive, d.GetName())
				}
			case watch.Error:
				if ctx.Err() == nil { // not the watch's own end
					w.watchErrors = append(w.watchErrors, fmt.Sprint(ev.Object))
				}
			}
			w.most = max(w.most, len(w.alive))
			w.mu.Unlock()
		}
	}()
	return w
}

// stop ends the watch and returns the most Deployments alive at once and
// how many were created.
func (w *deploymentWatch) stop(t *testing.T) (most, created int) {
	t.Helper()
	w.cancel()
	<-w.done
	if len(w.watchErrors) > 0 {
		t.Errorf("the watch reported errors: %v", w.watchErrors)
	}
	return w.most, w.created
}

// tuneResult is what a test reads of `spoc tune --json`.
type tuneResult struct {
	Trials []struct {
		Number      int            `json:"number"`
		State       string         `json:"state"`
		UserAttrs   map[string]any `json:"user_attrs"`
		SystemAttrs map[string]any `json:"system_attrs"`
	} `json:"trials"`
	States map[string]int `json:"states"`
	Run    struct {
		Ran int `json:"ran"`
	} `json:"run"`
}

// TestParallelTrialsOnARealControlPlane runs `spoc tune` with
// search.parallel on the test control plane (internal/testharness/kubetest): trials
// run side by side, each its own Deployment, watched through the API
// server; a pod killed mid-trial fails that trial only; Ctrl-C leaves no
// object; two spoc tune processes share one PostgreSQL study.
func TestParallelTrialsOnARealControlPlane(t *testing.T) {
	ctx, c, spoc := controlPlane(t, 6*time.Minute) // skips with -short
	// config writes a study of trials trials, parallel at once, of one
	// 1-GPU replica each (the node has 8 GPUs, so only spoc bounds how
	// many run at once); storage "" keeps the study in the output folder.
	config := func(t *testing.T, ns, study string, trials, parallel int, measured time.Duration, storage string) string {
		t.Helper()
		if err := c.Namespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
		if storage != "" {
			storage = "  storage: " + storage + "\n"
		}
		yml := fmt.Sprintf(`engine:
  kind: kubernetes
  model: gpt-oss-120b
  gpus: 1
  tensor_parallel_size: 1
  process:
    stop_timeout: 5s
  kubernetes:
    namespace: %s
    kubectl: %s
    kubeconfig: %s
    image: vllm/vllm-openai:v0.11.0
    args: [--model, "{{.Model}}", --port, "{{.Port}}", --time-scale, "20"]
    ready_timeout: 1m
search:
  study: %s
  sampler: tpe
  trials: %d
  parallel: %d
  users: 4
  duration: %s
  warmup: 1s
%s  space:
    - {name: max-num-batched-tokens, type: int, low: 1024, high: 8192, log: true}
    - {name: max-num-seqs, type: int, low: 16, high: 256, log: true}
run:
  ramp: 0s
  think_time_scale: 0
`, ns, c.Kubectl, c.Kubeconfig, study, trials, parallel, measured, storage)
		path := filepath.Join(t.TempDir(), "spoc.yaml")
		if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tuneJSON := func(t *testing.T, out []byte) tuneResult {
		t.Helper()
		var res tuneResult
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("spoc tune --json: %v\n%s", err, out)
		}
		return res
	}
	left := func(t *testing.T, ns string) []string {
		t.Helper()
		return managedObjects(ctx, t, c.Client, ns)
	}

	t.Run("search.parallel 3: 9 trials, at most 3 Deployments at once, 9 stored", func(t *testing.T) {
		cfg := config(t, "par", "par", 9, 3, 3*time.Second, "")
		w := watchDeployments(t, c, "par")
		began := time.Now()
		var stderr strings.Builder
		cmd := exec.CommandContext(ctx, spoc, "tune", "-c", cfg, "--out", t.TempDir(), "--json")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		wall := time.Since(began)
		most, created := w.stop(t)
		if err != nil {
			t.Fatalf("spoc tune: %v\n%s", err, stderr.String())
		}
		res := tuneJSON(t, out)
		t.Logf("9 trials, 3 at a time: %s; most Deployments alive at once %d; %d Deployments created", wall.Round(100*time.Millisecond), most, created)
		if len(res.Trials) != 9 || res.States["COMPLETE"] != 9 {
			t.Errorf("study holds %d trials %v, want exactly 9 COMPLETE", len(res.Trials), res.States)
		}
		if most != 3 {
			t.Errorf("at most %d Deployments alive at once, want 3 (parallel, and never more)", most)
		}
		if created != 9 {
			t.Errorf("%d Deployments created, want one per trial", created)
		}
		workers := map[any]bool{}
		for _, tr := range res.Trials {
			workers[tr.SystemAttrs["worker"]] = true
		}
		if len(workers) != 3 {
			t.Errorf("trials run by workers %v, want 3", workers)
		}
		if l := left(t, "par"); len(l) > 0 {
			t.Errorf("left after spoc tune: %v", l)
		}
	})

	t.Run("a pod killed mid-trial fails that trial, the other workers go on", func(t *testing.T) {
		cfg := config(t, "parkill", "parkill", 3, 3, 5*time.Second, "")
		var stdout, stderr strings.Builder
		cmd := exec.CommandContext(ctx, spoc, "tune", "-c", cfg, "--out", t.TempDir(), "--json")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		// wait until all three trials serve load, then kill one of their pods
		victim := waitServing(ctx, t, c, "parkill", 3, &stderr)[2]
		if err := c.Client.CoreV1().Pods("parkill").Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("spoc tune: %v\n%s", err, stderr.String())
		}
		res := tuneJSON(t, []byte(stdout.String()))
		var failed []string
		for _, tr := range res.Trials {
			if tr.State == "FAIL" {
				failed = append(failed, fmt.Sprint(tr.UserAttrs["error"]))
			}
		}
		if len(res.Trials) != 3 || res.States["COMPLETE"] != 2 || len(failed) != 1 || !strings.Contains(failed[0], victim) {
			t.Errorf("with pod %s killed: %d trials %v, failed %q; want 2 COMPLETE and 1 FAIL naming the pod", victim, len(res.Trials), res.States, failed)
		} else {
			t.Logf("the failed trial: %s", failed[0])
		}
		if l := left(t, "parkill"); len(l) > 0 {
			t.Errorf("left after spoc tune: %v", l)
		}
	})

	t.Run("Ctrl-C during a parallel study leaves no object", func(t *testing.T) {
		cfg := config(t, "parint", "parint", 6, 3, 20*time.Second, "")
		var stderr strings.Builder
		cmd := exec.CommandContext(ctx, spoc, "tune", "-c", cfg, "--out", t.TempDir())
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		waitServing(ctx, t, c, "parint", 3, &stderr)
		interrupted := time.Now()
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("spoc tune after SIGINT: %v, want exit 130; stderr:\n%s", err, stderr.String())
		}
		l := left(t, "parint")
		t.Logf("Ctrl-C with 3 trials serving to exit: %s; objects left: %d", time.Since(interrupted).Round(10*time.Millisecond), len(l))
		if len(l) > 0 {
			t.Errorf("left after Ctrl-C: %v", l)
		}
	})

	t.Run("two spoc tune processes share a PostgreSQL study", func(t *testing.T) {
		url := pgtest.URL(t)
		cfg := config(t, "shared", "shared", 6, 1, 3*time.Second, url)
		w := watchDeployments(t, c, "shared")
		began := time.Now()
		outs := make([][]byte, 2)
		errs := make([]error, 2)
		stderrs := make([]strings.Builder, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.CommandContext(ctx, spoc, "tune", "-c", cfg, "--out", t.TempDir(), "--json")
				cmd.Stderr = &stderrs[i]
				outs[i], errs[i] = cmd.Output()
			}()
		}
		wg.Wait()
		wall := time.Since(began)
		most, created := w.stop(t)
		for i := range 2 {
			if errs[i] != nil {
				t.Fatalf("worker %d: %v\n%s", i+1, errs[i], stderrs[i].String())
			}
		}
		a, b := tuneJSON(t, outs[0]), tuneJSON(t, outs[1])
		t.Logf("2 processes, 6 trials: %s; worker runs %d + %d; most Deployments at once %d; %d created", wall.Round(100*time.Millisecond), a.Run.Ran, b.Run.Ran, most, created)
		if a.Run.Ran+b.Run.Ran != 6 || a.Run.Ran == 0 || b.Run.Ran == 0 {
			t.Errorf("the processes ran %d and %d trials, want 6 between them, both working", a.Run.Ran, b.Run.Ran)
		}
		final := a
		if len(b.Trials) > len(final.Trials) {
			final = b
		}
		numbers := map[int]bool{}
		workers := map[any]int{}
		for _, tr := range final.Trials {
			if numbers[tr.Number] {
				t.Errorf("trial number %d stored twice", tr.Number)
			}
			numbers[tr.Number] = true
			workers[tr.SystemAttrs["worker"]]++
		}
		if len(final.Trials) != 6 || final.States["COMPLETE"] != 6 {
			t.Errorf("the study holds %d trials %v, want exactly the budget, 6 COMPLETE", len(final.Trials), final.States)
		}
		if len(workers) != 2 {
			t.Errorf("trials by worker %v, want both processes", workers)
		}
		if most != 2 || created != 6 {
			t.Errorf("%d Deployments at most at once, %d created; want 2 (one per process) and 6", most, created)
		}
		if l := left(t, "shared"); len(l) > 0 {
			t.Errorf("left after both workers: %v", l)
		}
	})
}

// waitServing waits until n pods of namespace ns have requests running
// (each a trial's server under load) and returns their names; stderr is the
// spoc process's, shown when the wait fails.
func waitServing(ctx context.Context, t *testing.T, c *kubetest.Cluster, ns string, n int, stderr *strings.Builder) []string {
	t.Helper()
	for {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || ctx.Err() != nil {
			t.Fatalf("pods: %v %v\n%s", err, ctx.Err(), stderr.String())
		}
		var serving []string
		for _, p := range pods.Items {
			if p.Status.PodIP != "" && requestsRunning(p.Status.PodIP+":8000") > 0 {
				serving = append(serving, p.Name)
			}
		}
		if len(serving) >= n {
			return serving
		}
		time.Sleep(100 * time.Millisecond)
	}
}
