package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// podList is the part of `kubectl get pods -o json` spoc reads.
type podList struct {
	Items []pod `json:"items"`
}

type pod struct {
	Metadata struct {
		Name              string            `json:"name"`
		UID               string            `json:"uid"`
		DeletionTimestamp string            `json:"deletionTimestamp"`
		Annotations       map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		Phase      string `json:"phase"`
		PodIP      string `json:"podIP"`
		Reason     string `json:"reason"`
		Message    string `json:"message"`
		Conditions []struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"conditions"`
		ContainerStatuses []containerStatus `json:"containerStatuses"`
	} `json:"status"`
}

type containerStatus struct {
	Name         string         `json:"name"`
	Ready        bool           `json:"ready"`
	RestartCount int            `json:"restartCount"`
	State        containerState `json:"state"`
	LastState    containerState `json:"lastState"`
}

type containerState struct {
	Waiting *struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"waiting"`
	Terminated *struct {
		ExitCode int    `json:"exitCode"`
		Reason   string `json:"reason"`
	} `json:"terminated"`
}

// ready reports whether every container of the pod is ready (and the pod
// is not being deleted): one ready container of several is not a server.
func (p *pod) ready() bool {
	if p.Metadata.DeletionTimestamp != "" || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if !c.Ready {
			return false
		}
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == "Ready" {
			return cond.Status == "True"
		}
	}
	return false
}

// readyPod is one replica as it was when the server became ready.
type readyPod struct {
	name, uid, ip string
	restarts      map[string]int // per container
}

// setupWaitReasons are container waiting reasons that no amount of waiting
// fixes and that are not the parameters' fault.
var setupWaitReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "CreateContainerConfigError": true, "CreateContainerError": true}

// listPods returns the trial's pods.
func (k *Kubernetes) listPods(ctx context.Context, t *kubeTrial) ([]pod, error) {
	out, err := k.run(ctx, nil, "get", "pods", "--selector", LabelTrial+"="+t.name, "--output", "json")
	if err != nil {
		return nil, err
	}
	var pods podList
	if err := json.Unmarshal(out, &pods); err != nil {
		return nil, fmt.Errorf("decode pod list: %w", err)
	}
	return pods.Items, nil
}

// awaitReady polls the trial's pods until every replica has every
// container ready, a server container has terminated (crash: classified
// from its log), a container cannot be created, or the ready timeout
// passes. It returns the ready replicas, sorted by name.
func (k *Kubernetes) awaitReady(ctx context.Context, t *kubeTrial) ([]readyPod, error) {
	deadline := time.NewTimer(k.opts.ReadyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(k.opts.PollInterval)
	defer tick.Stop()
	lastStatus := "no pod yet"
	for {
		pods, err := k.listPods(ctx, t)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("kubernetes engine: wait for %s: %w", t.name, ctx.Err())
			}
			return nil, fmt.Errorf("kubernetes engine: wait for %s: %w", t.name, err)
		}
		var ready []readyPod
		for _, p := range pods {
			if p.ready() {
				rp := readyPod{name: p.Metadata.Name, uid: p.Metadata.UID, ip: p.Status.PodIP, restarts: map[string]int{}}
				for _, c := range p.Status.ContainerStatuses {
					rp.restarts[c.Name] = c.RestartCount
				}
				ready = append(ready, rp)
				continue
			}
			if p.Metadata.DeletionTimestamp != "" {
				continue
			}
			for _, c := range p.Status.ContainerStatuses {
				if w := c.State.Waiting; w != nil && setupWaitReasons[w.Reason] {
					return nil, fmt.Errorf("kubernetes engine: pod %s: %s: %s", p.Metadata.Name, w.Reason, w.Message)
				}
				term := c.State.Terminated
				if term == nil {
					term = c.LastState.Terminated
				}
				if term != nil {
					return nil, k.crashFailure(ctx, t, p.Metadata.Name, c.Name, term.ExitCode, term.Reason, c.State.Terminated == nil)
				}
				if w := c.State.Waiting; w != nil {
					lastStatus = fmt.Sprintf("pod %s: %s", p.Metadata.Name, w.Reason)
				} else if !c.Ready {
					lastStatus = fmt.Sprintf("pod %s: container %s not ready", p.Metadata.Name, c.Name)
				}
			}
			if len(p.Status.ContainerStatuses) == 0 && p.Status.Phase != "" {
				lastStatus = fmt.Sprintf("pod %s: %s", p.Metadata.Name, p.Status.Phase)
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == "PodScheduled" && cond.Status == "False" {
					lastStatus = fmt.Sprintf("pod %s not scheduled: %s", p.Metadata.Name, cond.Message)
				}
			}
		}
		if len(ready) >= k.opts.Replicas {
			sort.Slice(ready, func(i, j int) bool { return ready[i].name < ready[j].name })
			k.opts.Logger.Info("server ready", "engine", "kubernetes", "name", t.name, "replicas", len(ready))
			return ready, nil
		}
		if len(ready) > 0 {
			lastStatus = fmt.Sprintf("%d of %d replicas ready; %s", len(ready), k.opts.Replicas, lastStatus)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("kubernetes engine: wait for %s: %w", t.name, ctx.Err())
		case <-deadline.C:
			k.saveLogs(ctx, t)
			reason, detail := Classify(readTail(t.logPath, logTailBytes))
			if !reason.Infeasible() {
				reason = ReasonHealthTimeout
				detail = fmt.Sprintf("%s not ready within %s (%s)", t.name, k.opts.ReadyTimeout, lastStatus)
			}
			return nil, &Failure{Reason: reason, Detail: detail, ExitCode: -1, Log: t.logPath}
		case <-tick.C:
		}
	}
}

// Lost says which replica the server has lost since it was ready: a pod
// deleted or evicted (even if the Deployment replaced it: the replacement
// starts cold, so what the run measured is not this server), a container
// that restarted or terminated, a replica no longer ready. Nil while every
// replica is as it was.
func (s *kubeServer) Lost(ctx context.Context) error {
	pods, err := s.k.listPods(ctx, s.t)
	if err != nil {
		return fmt.Errorf("list the pods of %s: %w", s.t.name, err)
	}
	byUID := map[string]*pod{}
	for i := range pods {
		byUID[pods[i].Metadata.UID] = &pods[i]
	}
	for _, rp := range s.pods {
		p, ok := byUID[rp.uid]
		switch {
		case !ok:
			return fmt.Errorf("pod %s (replica of %s) was deleted", rp.name, s.t.name)
		case p.Metadata.DeletionTimestamp != "":
			return fmt.Errorf("pod %s (replica of %s) is being deleted", rp.name, s.t.name)
		case p.Status.Phase == "Failed":
			return fmt.Errorf("pod %s (replica of %s) failed: %s %s", rp.name, s.t.name, p.Status.Reason, p.Status.Message)
		}
		for _, c := range p.Status.ContainerStatuses {
			term := c.State.Terminated
			if term == nil && c.RestartCount > rp.restarts[c.Name] {
				term = c.LastState.Terminated
			}
			if term != nil {
				return fmt.Errorf("pod %s (replica of %s): container %s exited with code %d (%s)", rp.name, s.t.name, c.Name, term.ExitCode, term.Reason)
			}
			if !c.Ready {
				return fmt.Errorf("pod %s (replica of %s): container %s is no longer ready", rp.name, s.t.name, c.Name)
			}
		}
	}
	return nil
}
