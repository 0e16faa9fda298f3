package engine

import (
	"context"
	"strings"
	"testing"
)

// TestKubernetesSkipsTakenNames: two workers sharing a study each count
// their servers from s1; a name whose Deployment another worker (or a
// killed run) holds is skipped, never applied over or deleted.
func TestKubernetesSkipsTakenNames(t *testing.T) {
	r := &fakeRunner{pods: []string{podsReady}, taken: map[string]bool{"spoc-default-s1": true, "spoc-default-s2": true}}
	o := kubeOptions(t, r)
	o.ContainerPort = fakeServicePort(t)
	k, err := NewKubernetes(o)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := k.Start(context.Background(), nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	stop(t, srv)
	var creates []string
	for _, c := range r.calls {
		if strings.Contains(c, " create -f -") {
			creates = append(creates, c)
		}
		for _, taken := range []string{"spoc-default-s1 ", "spoc-default-s2 "} {
			if strings.Contains(c, taken) || strings.HasSuffix(c, strings.TrimSpace(taken)) {
				t.Errorf("call %q touches another worker's server", c)
			}
		}
	}
	if len(creates) != 3 || !strings.Contains(string(r.stdin[2]), "name: spoc-default-s3\n") {
		t.Errorf("creates %q, third stdin:\n%s\nwant s1 and s2 refused, s3 created", creates, r.stdin[2])
	}
	if last := r.calls[len(r.calls)-1]; !strings.Contains(last, " delete deployment/spoc-default-s3 service/spoc-default-s3 ") {
		t.Errorf("last call %q is not the delete of its own server", last)
	}
}

// TestKubernetesMaxServers: a launcher for parallel trials runs that many
// servers at once and refuses one more.
func TestKubernetesMaxServers(t *testing.T) {
	r := &fakeRunner{pods: []string{podsReady}}
	o := kubeOptions(t, r)
	o.ContainerPort = fakeServicePort(t)
	o.MaxServers = 3
	k, err := NewKubernetes(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var srvs []Server
	for range 3 {
		s, err := k.Start(ctx, nil)
		if err != nil {
			t.Fatalf("Start %d: %v", len(srvs)+1, err)
		}
		srvs = append(srvs, s)
	}
	if s, err := k.Start(ctx, nil); err == nil || !strings.Contains(err.Error(), "3 servers are already running") {
		if s != nil {
			s.Stop(ctx)
		}
		t.Errorf("fourth Start = %v, want refused", err)
	}
	names := map[string]bool{}
	for _, s := range srvs {
		names[s.(*kubeServer).t.name] = true
	}
	if len(names) != 3 {
		t.Errorf("servers named %v, want 3 distinct names", names)
	}
	stop(t, srvs[0])
	s, err := k.Start(ctx, nil)
	if err != nil {
		t.Fatalf("Start after one Stop: %v", err)
	}
	for _, s := range append(srvs[1:], s) {
		stop(t, s)
	}
}
