package engine

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// shippedRunJob returns the documents of deploy/kubernetes/spoc-run-job.yaml.
func shippedRunJob(t *testing.T) [][]byte {
	t.Helper()
	return bytes.Split(readFile(t, "../deploy/kubernetes/spoc-run-job.yaml"), []byte("\n---\n"))
}

// keyPaths lists every object key path of a JSON value, arrays collapsed
// ("spec.template.spec.containers[].name"); label and annotation maps
// count as one key, their keys being data.
func keyPaths(prefix string, v any, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out[p] = true
			if k == "labels" || k == "annotations" || k == "nodeSelector" || k == "requests" || k == "limits" {
				continue
			}
			keyPaths(p, val, out)
		}
	case []any:
		for _, e := range x {
			keyPaths(prefix+"[]", e, out)
		}
	}
}

func pathsOf(t *testing.T, y []byte) map[string]bool {
	t.Helper()
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	keyPaths("", v, out)
	return out
}

func minus(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// TestClientJobManifestIsTheShippedShape: the Indexed Job spoc creates for
// a split run is the shipped deploy/kubernetes/spoc-run-job.yaml's shape:
// the same fields, besides the volume the hand-run `spoc run` writes its
// records to and the environment a shard reads its namespace (and API key)
// from; completions = parallelism = shards, no retry, never restarted.
func TestClientJobManifestIsTheShippedShape(t *testing.T) {
	c, err := NewClientJobs(ClientJobOptions{Namespace: "load", Image: "registry.example/spoc:v1", Study: "default",
		NodeSelector: map[string]string{"pool": "cpu"}, Tolerations: []Toleration{{Key: "dedicated", Operator: "Exists", Effect: "NoSchedule"}},
		APIKeySecret: &SecretKey{Name: "vllm-key", Key: "token"}, CPULimit: "2", Runner: &fakeRunner{}})
	if err != nil {
		t.Fatal(err)
	}
	cmY, jobY, err := c.Manifests("spoc-run-abc", 3, []byte(`{"options":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	docs := shippedRunJob(t)
	shipped := pathsOf(t, docs[0])
	got := pathsOf(t, jobY)
	extra := []string{
		"spec.template.spec.containers[].env", "spec.template.spec.containers[].env[].name",
		"spec.template.spec.containers[].env[].valueFrom", "spec.template.spec.containers[].env[].valueFrom.fieldRef",
		"spec.template.spec.containers[].env[].valueFrom.fieldRef.fieldPath", "spec.template.spec.containers[].env[].valueFrom.secretKeyRef",
		"spec.template.spec.containers[].env[].valueFrom.secretKeyRef.key", "spec.template.spec.containers[].env[].valueFrom.secretKeyRef.name",
		"spec.template.spec.containers[].resources.limits",
		"metadata.namespace", // spoc names the namespace; the shipped file leaves it to kubectl -n
		// placement from run.kubernetes
		"spec.template.spec.nodeSelector", "spec.template.spec.tolerations", "spec.template.spec.tolerations[].key",
		"spec.template.spec.tolerations[].operator", "spec.template.spec.tolerations[].effect",
	}
	if d := minus(got, shipped); !isSubset(d, extra) {
		t.Errorf("spoc's Job has fields the shipped manifest lacks: %v", d)
	}
	missing := []string{"spec.template.spec.volumes", "spec.template.spec.volumes[].name", "spec.template.spec.volumes[].persistentVolumeClaim",
		"spec.template.spec.volumes[].persistentVolumeClaim.claimName", "spec.template.spec.containers[].volumeMounts",
		"spec.template.spec.containers[].volumeMounts[].name", "spec.template.spec.containers[].volumeMounts[].mountPath"}
	if d := minus(shipped, got); !isSubset(d, missing) {
		t.Errorf("the shipped manifest has fields spoc's Job lacks: %v", d)
	}

	var job, ship batchv1.Job
	if err := yaml.UnmarshalStrict(jobY, &job); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(docs[0], &ship); err != nil {
		t.Fatal(err)
	}
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 3 || *s.Parallelism != 3 || *s.BackoffLimit != 0 {
		t.Errorf("job spec %+v: want Indexed, completions = parallelism = 3, backoffLimit 0", s)
	}
	if ship.Spec.CompletionMode == nil || *ship.Spec.CompletionMode != batchv1.IndexedCompletion || ship.Spec.BackoffLimit == nil || *ship.Spec.BackoffLimit != 0 {
		t.Errorf("shipped job spec %+v: want Indexed, backoffLimit 0", ship.Spec)
	}
	ps := s.Template.Spec
	if ps.RestartPolicy != corev1.RestartPolicyNever || ps.ServiceAccountName != ship.Spec.Template.Spec.ServiceAccountName {
		t.Errorf("pod spec restart %q service account %q: want Never and the shipped %q", ps.RestartPolicy, ps.ServiceAccountName, ship.Spec.Template.Spec.ServiceAccountName)
	}
	ctr, sc := ps.Containers[0], ship.Spec.Template.Spec.Containers[0]
	if ctr.Name != sc.Name || ctr.Command[0] != sc.Command[0] || strings.Join(ctr.Command, " ") != "spoc client-shard" ||
		!slices.Equal(ctr.Args, []string{ConfigMapFlag, "spoc-run-abc", ServiceAccountDirFlag, DefaultServiceAccountDir}) || ctr.Image != "registry.example/spoc:v1" {
		t.Errorf("container %+v", ctr)
	}
	if !ctr.Resources.Requests.Cpu().Equal(*sc.Resources.Requests.Cpu()) || !ctr.Resources.Requests.Memory().Equal(*sc.Resources.Requests.Memory()) {
		t.Errorf("requests %v, the shipped %v: the defaults are the shipped manifest's", ctr.Resources.Requests, sc.Resources.Requests)
	}
	for _, k := range []string{LabelManagedBy, LabelName, LabelStudy} {
		if job.Labels[k] != ship.Labels[k] || ps.Containers == nil || s.Template.Labels[k] != ship.Spec.Template.Labels[k] {
			t.Errorf("label %s: spoc's %q/%q, the shipped %q/%q", k, job.Labels[k], s.Template.Labels[k], ship.Labels[k], ship.Spec.Template.Labels[k])
		}
	}
	if s.Template.Labels[LabelRun] != "spoc-run-abc" {
		t.Errorf("pod labels %v: want %s naming the run", s.Template.Labels, LabelRun)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(cmY, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Name != "spoc-run-abc" || cm.Data[ClientKeyJob] != `{"options":{}}` || cm.Labels[LabelManagedBy] != ManagedBy {
		t.Errorf("configmap %+v", cm)
	}
}

func isSubset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// TestClientJobRBAC: the shipped manifest's Roles grant the shard's
// ServiceAccount (the Job's) get and watch on ConfigMaps, and spoc what it
// does through kubectl for a split run.
func TestClientJobRBAC(t *testing.T) {
	docs := shippedRunJob(t)
	roles := map[string]rbacv1.Role{}
	bound := map[string]rbacv1.RoleBinding{}
	for _, d := range docs[1:] {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(d, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Role":
			var r rbacv1.Role
			if err := yaml.UnmarshalStrict(d, &r); err != nil {
				t.Fatal(err)
			}
			roles[r.Name] = r
		case "RoleBinding":
			var b rbacv1.RoleBinding
			if err := yaml.UnmarshalStrict(d, &b); err != nil {
				t.Fatal(err)
			}
			bound[b.RoleRef.Name] = b
		case "ServiceAccount":
			var sa corev1.ServiceAccount
			if err := yaml.UnmarshalStrict(d, &sa); err != nil {
				t.Fatal(err)
			}
			if sa.Name != DefaultClientServiceAccount {
				t.Errorf("service account %s, want %s", sa.Name, DefaultClientServiceAccount)
			}
		default:
			t.Errorf("unexpected document kind %q", meta.Kind)
		}
	}
	allows := func(role, resource, verb string) bool {
		for _, r := range roles[role].Rules {
			if slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	for _, want := range [][3]string{
		{"spoc-client", "configmaps", "get"}, {"spoc-client", "configmaps", "watch"},
		{"spoc-run", "jobs", "create"}, {"spoc-run", "jobs", "delete"}, {"spoc-run", "pods", "get"}, {"spoc-run", "pods", "list"},
		{"spoc-run", "pods", "watch"}, {"spoc-run", "pods/log", "get"}, {"spoc-run", "configmaps", "create"},
		{"spoc-run", "configmaps", "patch"}, {"spoc-run", "configmaps", "update"}, {"spoc-run", "configmaps", "delete"},
	} {
		if !allows(want[0], want[1], want[2]) {
			t.Errorf("role %s does not allow %s %s", want[0], want[2], want[1])
		}
	}
	if b := bound["spoc-client"]; len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != DefaultClientServiceAccount {
		t.Errorf("role spoc-client bound to %+v, want the shards' service account", b.Subjects)
	}
	if _, ok := bound["spoc-run"]; !ok {
		t.Error("role spoc-run is bound to nobody")
	}
}
