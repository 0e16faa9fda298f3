package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// gcKinds are the kinds of object spoc creates (Deployment, Service, the
// load Job and its ConfigMap) and those the cluster creates for them from spoc's labels
// (ReplicaSet, Pod).
const gcKinds = "deployments,services,jobs,replicasets,pods,configmaps"

// KubeGC finds and deletes what spoc left in a namespace: after a crash
// or a SIGKILL no Stop ran, but every object carries spoc's labels.
type KubeGC struct {
	// Runner runs kubectl (ExecRunner{} when nil); Kubeconfig, Context and
	// Namespace select the cluster and namespace as for the launcher.
	Runner     Runner
	Kubeconfig string
	Context    string
	Namespace  string
}

// Selector is the label selector of spoc's objects of study ("" for all
// of spoc's objects).
func (g KubeGC) Selector(study string) string {
	sel := LabelManagedBy + "=" + ManagedBy
	if study != "" {
		sel += "," + LabelStudy + "=" + LabelValue(study)
	}
	return sel
}

func (g KubeGC) run(ctx context.Context, args ...string) ([]byte, error) {
	if g.Namespace == "" {
		return nil, errors.New("kubernetes gc: a namespace is required")
	}
	r := g.Runner
	if r == nil {
		r = ExecRunner{}
	}
	var pre []string
	if g.Kubeconfig != "" {
		pre = append(pre, "--kubeconfig", g.Kubeconfig)
	}
	if g.Context != "" {
		pre = append(pre, "--context", g.Context)
	}
	pre = append(pre, "--namespace", g.Namespace)
	return r.Run(ctx, nil, append(pre, args...)...)
}

// Leftovers lists spoc's objects of study as kind/name
// ("deployment.apps/spoc-s3-s1").
func (g KubeGC) Leftovers(ctx context.Context, study string) ([]string, error) {
	out, err := g.run(ctx, "get", gcKinds, "--selector", g.Selector(study), "--output", "name")
	if err != nil {
		return nil, fmt.Errorf("kubernetes gc: list: %w", err)
	}
	return strings.Fields(string(out)), nil
}

// Delete deletes spoc's objects of study, waiting until they (and their
// pods) are gone, and returns what it found to delete.
func (g KubeGC) Delete(ctx context.Context, study string) ([]string, error) {
	found, err := g.Leftovers(ctx, study)
	if err != nil || len(found) == 0 {
		return found, err
	}
	if _, err := g.run(ctx, "delete", gcKinds, "--selector", g.Selector(study),
		"--ignore-not-found", "--cascade=foreground", "--wait=true", "--timeout=5m"); err != nil {
		return found, fmt.Errorf("kubernetes gc: delete: %w", err)
	}
	return found, nil
}
