package kubetest

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// TestClusterRunsADeploymentAndAJob starts the control plane and checks
// what spoc's tests rely on: a Deployment's pods are bound, run as
// processes on their own pod IPs and turn ready through their probe; a
// Job's pod runs to Succeeded; a
// pod asking for more GPUs than the node has stays pending; deleting the
// Deployment stops its processes.
func TestClusterRunsADeploymentAndAJob(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane; skipped with -short")
	}
	testtool.Long(t, "starts a Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager)")
	bins := Need(t)
	spoc := filepath.Join(t.TempDir(), "spoc")
	if out, err := exec.Command("go", "build", "-o", spoc, "../../../cmd/spoc").CombinedOutput(); err != nil {
		t.Fatalf("go build ../../../cmd/spoc: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	began := time.Now()
	c, err := Start(ctx, bins, Options{GPUs: 2, Command: SpocCommand(spoc)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane and node up in %s", time.Since(began).Round(10*time.Millisecond))
	defer func() {
		if t.Failed() {
			t.Logf("cluster logs kept in %s", c.Dir)
		}
		c.Close(t.Failed())
	}()
	if err := c.Namespace(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "sim"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "sim", Namespace: "t1"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "server", Image: "vllm/vllm-openai:test",
					Args:      []string{"--model", "gpt-oss-120b", "--port", "8000", "--tensor-parallel-size", "4"},
					Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
						HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("http")},
					}},
				}}},
			},
		},
	}
	if _, err := c.Client.AppsV1().Deployments("t1").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "sim", Namespace: "t1"},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 8000, TargetPort: intstr.FromString("http")}}},
	}
	if _, err := c.Client.CoreV1().Services("t1").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods *corev1.PodList
	waitFor(t, ctx, "2 ready pods", func() bool {
		pods, err = c.Client.CoreV1().Pods("t1").List(ctx, metav1.ListOptions{LabelSelector: "app=sim"})
		if err != nil {
			t.Fatal(err)
		}
		ready := 0
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == 2
	})
	ips := map[string]bool{}
	for _, p := range pods.Items {
		ips[p.Status.PodIP] = true
		resp, err := http.Get("http://" + p.Status.PodIP + ":8000/health")
		if err != nil {
			t.Fatalf("pod %s at %s: %v", p.Name, p.Status.PodIP, err)
		}
		resp.Body.Close()
	}
	if len(ips) != 2 {
		t.Fatalf("pod IPs %v: want two distinct", ips)
	}
	// the node has 2 GPUs, both taken: a third pod waits
	greedy := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "greedy", Namespace: "t1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "spoc", Command: []string{"spoc", "version"},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}},
		}}},
	}
	if _, err := c.Client.CoreV1().Pods("t1").Create(ctx, greedy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "version", Namespace: "t1"},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "spoc", Image: "spoc", Command: []string{"spoc", "version"}}},
			}},
		},
	}
	if _, err := c.Client.BatchV1().Jobs("t1").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the Job to succeed", func() bool {
		j, err := c.Client.BatchV1().Jobs("t1").Get(ctx, "version", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return j.Status.Succeeded == 1
	})
	if p, err := c.Client.CoreV1().Pods("t1").Get(ctx, "greedy", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Fatalf("pod beyond the node's GPUs: node %q, err %v; want pending", p.Spec.NodeName, err)
	}

	fg := metav1.DeletePropagationForeground
	if err := c.Client.AppsV1().Deployments("t1").Delete(ctx, "sim", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the Deployment's pods to go", func() bool {
		pods, err := c.Client.CoreV1().Pods("t1").List(ctx, metav1.ListOptions{LabelSelector: "app=sim"})
		if err != nil {
			t.Fatal(err)
		}
		return len(pods.Items) == 0
	})
	for ip := range ips {
		if resp, err := http.Get("http://" + ip + ":8000/health"); err == nil {
			resp.Body.Close()
			t.Errorf("server at %s still answers after its pod was deleted", ip)
		}
	}
	waitFor(t, ctx, "the pending pod to be bound once GPUs are free", func() bool {
		p, err := c.Client.CoreV1().Pods("t1").Get(ctx, "greedy", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Spec.NodeName != ""
	})
}

func waitFor(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
