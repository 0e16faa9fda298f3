package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
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
	k := slotsLauncher(t, 3)
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

// TestKubernetesUnconfirmedCreate: a create that failed otherwise than
// AlreadyExists (a lost connection, Ctrl-C) may still have created the
// Deployment; the launcher deletes it only when it bears its own mark,
// never another worker's.
func TestKubernetesUnconfirmedCreate(t *testing.T) {
	for _, mine := range []bool{true, false} {
		r := &fakeRunner{pods: []string{podsReady}, createErr: errors.New("kubectl create -f -: unexpected EOF")}
		o := kubeOptions(t, r)
		k, err := NewKubernetes(o)
		if err != nil {
			t.Fatal(err)
		}
		if mine {
			r.holder = k.instance
		} else {
			r.holder = "0123456789abcdef"
		}
		if _, err := k.Start(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
			t.Fatalf("Start = %v, want the create's error", err)
		}
		deleted := false
		for _, c := range r.calls {
			deleted = deleted || strings.Contains(c, " delete deployment/spoc-default-s1 ")
		}
		if deleted != mine {
			t.Errorf("Deployment marked by this launcher: %v; deleted: %v (calls %q)", mine, deleted, r.calls)
		}
		// the slot is free again either way
		if s, err := k.Start(context.Background(), nil); err == nil {
			s.Stop(context.Background())
		} else if strings.Contains(err.Error(), "already running") {
			t.Errorf("a failed Start kept the launcher's slot: %v", err)
		}
	}
}

// TestKubernetesConcurrentStarts: parallel trials start their servers at
// the same moment; each gets its own name, folder and slot (run with
// -race).
func TestKubernetesConcurrentStarts(t *testing.T) {
	k := slotsLauncher(t, 3)
	srvs := make([]Server, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srvs[i], errs[i] = k.Start(context.Background(), Params{"max-num-seqs": 16 * (i + 1)})
		}()
	}
	wg.Wait()
	names, logs := map[string]bool{}, map[string]bool{}
	for i, s := range srvs {
		if errs[i] != nil {
			t.Fatalf("Start %d: %v", i, errs[i])
		}
		names[s.(*kubeServer).t.name] = true
		logs[s.Endpoint().Log] = true
	}
	if len(names) != 3 || len(logs) != 3 {
		t.Errorf("names %v, logs %v: want 3 of each", names, logs)
	}
	for _, s := range srvs {
		stop(t, s)
	}
}

// slotsLauncher is a Kubernetes launcher for parallel trials with n server
// slots, on a fake kubectl whose pods are ready and a fake Service port.
func slotsLauncher(t *testing.T, n int) *Kubernetes {
	t.Helper()
	o := kubeOptions(t, &fakeRunner{pods: []string{podsReady}})
	o.ContainerPort = fakeServicePort(t)
	o.MaxServers = n
	k, err := NewKubernetes(o)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
