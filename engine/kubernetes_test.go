package engine

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fakeRunner records kubectl commands and answers them from a script.
type fakeRunner struct {
	mu    sync.Mutex
	calls []string
	stdin map[int][]byte
	// pods are the successive answers to "get pods"; the last repeats.
	pods []string
	logs map[string]string // by "previous" or "all"
	// taken are Deployment names another worker holds: creating one
	// fails with AlreadyExists, as the API server answers.
	taken map[string]bool
	// createErr fails every create; holder is the launcher mark that
	// `get deployment` then finds ("" for none).
	createErr error
	holder    string
}

func (f *fakeRunner) Run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stdin == nil {
		f.stdin = map[int][]byte{}
	}
	if stdin != nil {
		f.stdin[len(f.calls)] = stdin
	}
	f.calls = append(f.calls, strings.Join(args, " "))
	joined := strings.Join(args, " ")
	switch {
	case strings.Contains(joined, " create -f -"):
		if f.createErr != nil {
			return nil, f.createErr
		}
		for name := range f.taken {
			if bytes.Contains(stdin, []byte("\n  name: "+name+"\n")) {
				return nil, fmt.Errorf("kubectl %s: exit status 1: Error from server (AlreadyExists): error when creating \"STDIN\": deployments.apps %q already exists", joined, name)
			}
		}
	case strings.Contains(joined, " get deployment/"):
		return []byte(f.holder), nil
	case strings.Contains(joined, " get pods "):
		p := f.pods[0]
		if len(f.pods) > 1 {
			f.pods = f.pods[1:]
		}
		return []byte(p), nil
	case strings.Contains(joined, " get service/"):
		return []byte("127.0.0.1"), nil
	case strings.Contains(joined, " logs ") && strings.Contains(joined, "--previous"):
		return []byte(f.logs["previous"]), nil
	case strings.Contains(joined, " logs "):
		return []byte(f.logs["all"]), nil
	}
	return nil, nil
}

// Start serves /health on the forwarded local port, as a working
// port-forward would.
func (f *fakeRunner) Start(ctx context.Context, w io.Writer, args ...string) (func() error, error) {
	f.mu.Lock()
	f.calls = append(f.calls, "START "+strings.Join(args, " "))
	f.mu.Unlock()
	var local string
	for _, a := range args {
		if m := regexp.MustCompile(`^(\d+):\d+$`).FindStringSubmatch(a); m != nil {
			local = m[1]
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+local)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go srv.Serve(l)
	fmt.Fprintln(w, "Forwarding from 127.0.0.1:"+local)
	return srv.Close, nil
}

const (
	podsPending = `{"items":[{"metadata":{"name":"p1"},"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]}}]}`
	podsLoading = `{"items":[{"metadata":{"name":"p1"},"status":{"phase":"Running","containerStatuses":[{"name":"server","ready":false,"restartCount":0,"state":{"running":{}}}]}}]}`
	podsReady   = `{"items":[{"metadata":{"name":"p1","uid":"u1"},"status":{"phase":"Running","podIP":"127.0.0.1","conditions":[{"type":"Ready","status":"True"}],"containerStatuses":[{"name":"server","ready":true,"restartCount":0,"state":{"running":{}}}]}}]}`
	podsCrash   = `{"items":[{"metadata":{"name":"p1"},"status":{"phase":"Running","containerStatuses":[{"name":"server","ready":false,"restartCount":1,"state":{"waiting":{"reason":"CrashLoopBackOff"}},"lastState":{"terminated":{"exitCode":1,"reason":"Error"}}}]}}]}`
	podsPull    = `{"items":[{"metadata":{"name":"p1"},"status":{"phase":"Pending","containerStatuses":[{"name":"server","ready":false,"state":{"waiting":{"reason":"ImagePullBackOff","message":"Back-off pulling image \"vllm/nope\""}}}]}}]}`
)

// kubeOptions are the tests' launcher options; server folders go to a test
// temporary directory.
func kubeOptions(t *testing.T, r Runner) KubernetesOptions {
	return KubernetesOptions{
		Namespace:      "spoc",
		Context:        "gpu",
		Image:          "vllm/vllm-openai:v0.11.0",
		Model:          "openai/gpt-oss-120b",
		BaseParams:     Params{"tensor-parallel-size": 4, "max-model-len": 131072},
		GPUsPerReplica: 4,
		StopTimeout:    30 * time.Second,
		PollInterval:   time.Millisecond,
		NamePrefix:     "spoc-default",
		Dir:            t.TempDir(),
		Runner:         r,
	}
}

// fakeServicePort serves every path on a free loopback port and returns
// it: the address of a ready server's Service and pods, whose cluster IP
// and pod IP the fake runner reports as 127.0.0.1.
func fakeServicePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// serverDir is the n-th server's folder under a launcher's Dir.
func serverDir(dir string, n int) string {
	return filepath.Join(dir, fmt.Sprintf("server-%03d", n))
}

func TestKubernetesManifestsGolden(t *testing.T) {
	params := Params{"max-num-batched-tokens": 2048, "enable-prefix-caching": true, "gpu-memory-utilization": 0.92}
	for _, tc := range []struct {
		name string
		mod  func(*KubernetesOptions)
	}{
		{"default", func(*KubernetesOptions) {}},
		{"data-parallel", func(o *KubernetesOptions) {
			o.Replicas, o.GPUsPerReplica = 2, 2
			o.BaseParams = Params{"tensor-parallel-size": 2}
			o.Args = []string{"serve", "{{.Model}}", "--port={{.Port}}", "--served-model-name", "gpt-oss"}
			o.NodeSelector = map[string]string{"nvidia.com/gpu.product": "NVIDIA-H200"}
			o.Env = map[string]string{"VLLM_LOGGING_LEVEL": "DEBUG", "HF_HUB_OFFLINE": "1"}
			o.GPUResource = "amd.com/gpu"
		}},
		{"vllm-pod", func(o *KubernetesOptions) {
			o.Study = "h100 study"
			o.SecretEnv = map[string]SecretKey{"HF_TOKEN": {Name: "hf-token", Key: "token"}}
			o.Env = map[string]string{"VLLM_SERVER_DEV_MODE": "1"}
			o.ModelCache = ModelCache{PVC: "hf-cache"}
			o.ShmSize = "16Gi"
			o.Tolerations = []Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"}}
			o.ImagePullSecrets = []string{"regcred"}
			o.ReadyTimeout = 45 * time.Minute
		}},
		{"base-manifest", func(o *KubernetesOptions) {
			o.BaseManifest, o.BaseManifestSource = readFile(t, "testdata/kube/base-deployment.yaml"), "base-deployment.yaml"
			o.Container = "vllm"
			o.ModelCache = ModelCache{HostPath: "/data/hf", MountPath: "/models"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := kubeOptions(t, &fakeRunner{})
			tc.mod(&o)
			k, err := NewKubernetes(o)
			if err != nil {
				t.Fatal(err)
			}
			got, err := k.Manifests(ObjectName(o.NamePrefix, 7), params)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "kube", tc.name+".yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("manifests differ from %s (go test -update to accept):\n%s", golden, got)
			}
		})
	}
}

func TestKubernetesStartStopCommands(t *testing.T) {
	for _, forward := range []bool{false, true} {
		t.Run(fmt.Sprintf("port-forward=%v", forward), func(t *testing.T) {
			r := &fakeRunner{pods: []string{podsPending, podsLoading, podsReady}, logs: map[string]string{"all": "[pod/p1/server] INFO ready\n"}}
			o := kubeOptions(t, r)
			o.PortForward = forward
			o.ContainerPort = fakeServicePort(t)
			port := strconv.Itoa(o.ContainerPort)
			k, err := NewKubernetes(o)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			params := Params{"max-num-seqs": 128}
			dry, err := k.DryRun(params)
			if err != nil {
				t.Fatalf("DryRun: %v", err)
			}
			srv, err := k.Start(ctx, params)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			ep := srv.Endpoint()
			if s2, err := k.Start(ctx, params); err == nil {
				s2.Stop(ctx)
				t.Error("second Start without Stop succeeded")
			}
			if err := srv.Stop(ctx); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if err := srv.Stop(ctx); err != nil {
				t.Errorf("second Stop: %v", err)
			}
			pre := "--context gpu --namespace spoc "
			get := pre + "get pods --selector spoc.dev/trial=spoc-default-s1 --output json"
			want := []string{pre + "create -f -", pre + "apply -f -", get, get, get}
			if forward {
				local := strings.TrimPrefix(ep.BaseURL, "http://127.0.0.1:")
				podLocal := strings.TrimSuffix(strings.TrimPrefix(ep.MetricsURLs[0], "http://127.0.0.1:"), "/metrics")
				want = append(want, "START "+pre+"port-forward service/spoc-default-s1 "+local+":"+port+" --address 127.0.0.1",
					"START "+pre+"port-forward pod/p1 "+podLocal+":"+port+" --address 127.0.0.1")
			} else {
				want = append(want, pre+"get service/spoc-default-s1 --output jsonpath={.spec.clusterIP}")
				if ep.BaseURL != "http://127.0.0.1:"+port || ep.MetricsURLs[0] != "http://127.0.0.1:"+port+"/metrics" {
					t.Errorf("endpoint %+v: want the cluster IP for load and the pod IP for metrics", ep)
				}
			}
			want = append(want,
				pre+"logs --selector spoc.dev/trial=spoc-default-s1 --all-containers --prefix --tail -1",
				pre+"delete deployment/spoc-default-s1 service/spoc-default-s1 --ignore-not-found --cascade=foreground --wait=true --timeout=1m30s")
			if !reflect.DeepEqual(r.calls, want) {
				t.Errorf("kubectl calls:\n got %q\nwant %q", r.calls, want)
			}
			// the Deployment is created with the launcher's mark, the
			// Service applied; otherwise both are what DryRun showed
			dep, svc, _ := k.render("spoc-default-s1", params, true)
			if !bytes.Equal(r.stdin[0], dep) || !bytes.Equal(r.stdin[1], svc) {
				t.Errorf("create and apply stdin are not the rendered manifests:\n%s\n---\n%s", r.stdin[0], r.stdin[1])
			}
			if !bytes.Contains(dep, []byte(AnnotationLauncher+": "+k.instance)) {
				t.Errorf("the created Deployment has no launcher mark:\n%s", dep)
			}
			if unmarked, _ := k.Manifests("spoc-default-s1", params); dry != string(unmarked) {
				t.Errorf("DryRun before the first Start is not what it applied:\n%s", dry)
			}
			wantManifests := joinManifests(dep, svc)
			dir := serverDir(o.Dir, 1)
			if saved, _ := os.ReadFile(filepath.Join(dir, "manifests.yaml")); !bytes.Equal(saved, wantManifests) {
				t.Error("manifests.yaml in the server folder differs from what was applied")
			}
			if ep.Log != filepath.Join(dir, "server.log") {
				t.Errorf("server log = %q, want it in %s", ep.Log, dir)
			}
			if log, _ := os.ReadFile(ep.Log); string(log) != "[pod/p1/server] INFO ready\n" {
				t.Errorf("server.log = %q", log)
			}
			for _, f := range []string{"port-forward.log", "port-forward-p1.log"} {
				if _, err := os.Stat(filepath.Join(dir, f)); (err == nil) != forward {
					t.Errorf("%s with port-forward=%v: %v", f, forward, err)
				}
			}
			if ep.Model != "openai/gpt-oss-120b" || len(ep.MetricsURLs) != 1 || !reflect.DeepEqual(ep.MetricsNames, []string{"p1"}) {
				t.Errorf("endpoint = %+v, want one metrics URL, of pod p1", ep)
			}

			// The launcher starts again after Stop: new objects, next folder.
			r.calls, r.stdin = nil, nil
			next, err := k.DryRun(params)
			if err != nil || !strings.Contains(next, "name: spoc-default-s2\n") {
				t.Errorf("DryRun after one server does not name the second: %v\n%s", err, next)
			}
			srv, err = k.Start(ctx, params)
			if err != nil {
				t.Fatalf("restart: %v", err)
			}
			stop(t, srv)
			dep2, svc2, _ := k.render("spoc-default-s2", params, true)
			if !strings.Contains(r.calls[0], "create") || !bytes.Equal(r.stdin[0], dep2) || !bytes.Equal(r.stdin[1], svc2) {
				t.Errorf("restart created:\n%s\nwant the second server's", r.stdin[0])
			}
			if unmarked, _ := k.Manifests("spoc-default-s2", params); next != string(unmarked) {
				t.Errorf("DryRun does not name the second server's objects:\n%s", next)
			}
			if last := r.calls[len(r.calls)-1]; !strings.Contains(last, " delete deployment/spoc-default-s2 service/spoc-default-s2 ") {
				t.Errorf("last call %q is not the delete of the second server", last)
			}
			if saved, _ := os.ReadFile(filepath.Join(serverDir(o.Dir, 2), "manifests.yaml")); !bytes.Equal(saved, joinManifests(dep2, svc2)) {
				t.Error("server-002/manifests.yaml is not the second server's manifests")
			}
			if got := srv.Endpoint().Log; got != filepath.Join(serverDir(o.Dir, 2), "server.log") {
				t.Errorf("second server log = %q", got)
			}
		})
	}
}

func TestKubernetesFailures(t *testing.T) {
	pre := "--namespace spoc "
	del := pre + "delete deployment/spoc-default-s1 service/spoc-default-s1 --ignore-not-found --cascade=foreground --wait=true --timeout=1m30s"
	get := pre + "get pods --selector spoc.dev/trial=spoc-default-s1 --output json"
	for _, tc := range []struct {
		name       string
		pods       []string
		logs       map[string]string
		reason     Reason // "" for a plain error
		infeasible bool
		exitCode   int
		calls      []string
	}{
		{
			name: "crash with CUDA OOM", pods: []string{podsLoading, podsCrash},
			logs:   map[string]string{"previous": "INFO loading\ntorch.OutOfMemoryError: CUDA out of memory.\n"},
			reason: ReasonOutOfMemory, infeasible: true, exitCode: 1,
			calls: []string{pre + "create -f -", pre + "apply -f -", get, get, pre + "logs pod/p1 --container server --tail -1 --previous", del},
		},
		{
			name: "plain crash", pods: []string{podsCrash},
			logs:   map[string]string{"previous": "RuntimeError: boom\n"},
			reason: ReasonExited, exitCode: 1,
			calls: []string{pre + "create -f -", pre + "apply -f -", get, pre + "logs pod/p1 --container server --tail -1 --previous", del},
		},
		{
			name: "image pull", pods: []string{podsPull},
			calls: []string{pre + "create -f -", pre + "apply -f -", get, pre + "logs --selector spoc.dev/trial=spoc-default-s1 --all-containers --prefix --tail -1", del},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRunner{pods: tc.pods, logs: tc.logs}
			o := kubeOptions(t, r)
			o.Context = ""
			k, err := NewKubernetes(o)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := k.Start(context.Background(), nil)
			if err == nil {
				t.Fatal("Start succeeded")
			}
			if srv != nil {
				t.Errorf("failed Start returned a server %+v", srv.Endpoint())
			}
			var f *Failure
			if tc.reason == "" {
				if errors.As(err, &f) {
					t.Errorf("err = %v, want a plain error", err)
				}
			} else if !errors.As(err, &f) || f.Reason != tc.reason || f.ExitCode != tc.exitCode {
				t.Errorf("err = %#v, want reason %s exit %d", err, tc.reason, tc.exitCode)
			} else if f.Log != filepath.Join(serverDir(o.Dir, 1), "server.log") {
				t.Errorf("failure log = %q", f.Log)
			}
			if got := errors.Is(err, ErrInfeasible); got != tc.infeasible {
				t.Errorf("infeasible = %v, want %v", got, tc.infeasible)
			}
			if !reflect.DeepEqual(r.calls, tc.calls) {
				t.Errorf("kubectl calls:\n got %q\nwant %q", r.calls, tc.calls)
			}
			// A failed Start leaves nothing to stop: the launcher is free
			// and tries (and cleans up) the next server.
			r.calls = nil
			_, err2 := k.Start(context.Background(), nil)
			var f2 *Failure
			if errors.As(err2, &f2) != (tc.reason != "") || (f2 != nil && f2.Reason != tc.reason) {
				t.Errorf("Start after a failed Start = %v, want the same failure as %v", err2, err)
			}
			if len(r.calls) == 0 || !strings.Contains(r.calls[len(r.calls)-1], " delete deployment/spoc-default-s2 ") {
				t.Errorf("Start after a failed Start: kubectl calls %q, want the second server's, ending with its delete", r.calls)
			}
		})
	}
}

func TestKubernetesReadyTimeout(t *testing.T) {
	r := &fakeRunner{pods: []string{podsPending}, logs: map[string]string{"all": ""}}
	o := kubeOptions(t, r)
	o.ReadyTimeout = 30 * time.Millisecond
	k, err := NewKubernetes(o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = k.Start(context.Background(), nil)
	var f *Failure
	if !errors.As(err, &f) || f.Reason != ReasonHealthTimeout || !strings.Contains(f.Detail, "Insufficient nvidia.com/gpu") {
		t.Fatalf("err = %v, want a health timeout naming the scheduling problem", err)
	}
	if last := r.calls[len(r.calls)-1]; !strings.Contains(last, " delete deployment/spoc-default-s1 ") {
		t.Errorf("last call %q is not the delete", last)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKubernetesBaseManifestIsStrict: a misspelt field of a base manifest
// fails NewKubernetes, before anything is applied, naming the field and
// its line.
func TestKubernetesBaseManifestIsStrict(t *testing.T) {
	good := string(readFile(t, "testdata/kube/base-deployment.yaml"))
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"typo in a container", "          securityContext:", "          securityContex:", `base.yaml:41: unknown field "securityContex"`},
		{"typo in the pod spec", "      affinity:", "      afinity:", `base.yaml:23: unknown field "afinity"`},
		{"wrong type", "  replicas: 5", "  replicas: five", "base.yaml"},
		{"not a Deployment", "kind: Deployment", "kind: StatefulSet", `kind "StatefulSet": a base manifest is one apps/v1 Deployment`},
		{"several containers, none named", "        - name: vllm\n", "        - name: engine\n", `none named "server"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to := strings.ReplaceAll(tc.from, `\n`, "\n"), strings.ReplaceAll(tc.to, `\n`, "\n")
			if !strings.Contains(good, from) {
				t.Fatalf("testdata has no %q", from)
			}
			r := &fakeRunner{}
			o := kubeOptions(t, r)
			o.BaseManifest, o.BaseManifestSource = []byte(strings.Replace(good, from, to, 1)), "base.yaml"
			_, err := NewKubernetes(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewKubernetes = %v, want an error containing %q", err, tc.want)
			}
			if len(r.calls) != 0 {
				t.Errorf("kubectl ran: %q", r.calls)
			}
		})
	}
}

func TestObjectName(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		seq    int
		want   string
	}{
		{"spoc-default", 12, "spoc-default-s12"},
		{"Spoc_My Study!", 1, "spoc-my-study-s1"},
		{"--", 1, "spoc-s1"},
		{"run", -1, "run"},
		{strings.Repeat("a", 70), 123, strings.Repeat("a", 58) + "-s123"},
		{strings.Repeat("a", 57) + "-b", 123, strings.Repeat("a", 57) + "-s123"},
	} {
		got := ObjectName(tc.prefix, tc.seq)
		if got != tc.want {
			t.Errorf("ObjectName(%q, %d) = %q, want %q", tc.prefix, tc.seq, got, tc.want)
		}
		if len(got) > 63 || !regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`).MatchString(got) {
			t.Errorf("ObjectName(%q, %d) = %q is not a DNS label", tc.prefix, tc.seq, got)
		}
	}
}

func TestNewKubernetesValidates(t *testing.T) {
	for _, o := range []KubernetesOptions{{Image: "x"}, {Namespace: "x"}, {Namespace: "x", Image: "y", Args: []string{"{{.Bad}}"}}} {
		if _, err := NewKubernetes(o); err == nil {
			t.Errorf("NewKubernetes(%+v) accepted", o)
		}
	}
}

// TestRunJobManifest: the documented `spoc run` Job decodes strictly into
// the API's Job type and carries spoc's labels, so that `spoc k8s gc`
// finds it.
func TestRunJobManifest(t *testing.T) {
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(readFile(t, "../deploy/kubernetes/spoc-run-job.yaml"), &job); err != nil {
		t.Fatalf("deploy/kubernetes/spoc-run-job.yaml: %v", err)
	}
	if job.Labels[LabelManagedBy] != ManagedBy || job.Spec.Template.Labels[LabelManagedBy] != ManagedBy {
		t.Errorf("Job labels %v, pod labels %v: want %s=%s on both", job.Labels, job.Spec.Template.Labels, LabelManagedBy, ManagedBy)
	}
	c := job.Spec.Template.Spec.Containers[0]
	if strings.Join(c.Command, " ") != "spoc run" || !slices.Contains(c.Args, "/records/run.jsonl") || len(c.VolumeMounts) != 1 {
		t.Errorf("container %+v: want spoc run writing records to the mounted volume", c)
	}
}
