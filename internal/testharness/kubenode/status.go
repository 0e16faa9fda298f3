package kubenode

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// report writes the pod's status when it changed: phase, pod IP, each
// container's state and readiness, and the Ready conditions the
// EndpointSlice controller and spoc read.
func (a *Agent) report(ctx context.Context, p *corev1.Pod, r *podRun) error {
	st := a.status(p, r)
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if string(b) == r.reported {
		return nil
	}
	now := metav1.Now()
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = now
		for _, old := range p.Status.Conditions {
			if old.Type == st.Conditions[i].Type && old.Status == st.Conditions[i].Status {
				st.Conditions[i].LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	p = p.DeepCopy()
	p.Status = st
	if _, err := a.opts.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // the next pass sees the newer pod
		}
		return fmt.Errorf("update status: %w", err)
	}
	r.reported = string(b)
	return nil
}

// status is the pod status the kubelet would report for r. Containers of a
// pod with restartPolicy Always that exit wait in CrashLoopBackOff with the
// exit in lastState (this agent does not restart them); under Never or
// OnFailure they terminate and the pod ends Succeeded or Failed.
func (a *Agent) status(p *corev1.Pod, r *podRun) corev1.PodStatus {
	st := corev1.PodStatus{
		Phase:     corev1.PodRunning,
		HostIP:    "127.0.0.1",
		HostIPs:   []corev1.HostIP{{IP: "127.0.0.1"}},
		PodIP:     r.ip,
		PodIPs:    []corev1.PodIP{{IP: r.ip}},
		StartTime: &r.started,
		QOSClass:  p.Status.QOSClass,
	}
	restart := p.Spec.RestartPolicy == "" || p.Spec.RestartPolicy == corev1.RestartPolicyAlways
	allReady, allDone, anyFailed := true, true, false
	for _, c := range r.ctrs {
		cs := corev1.ContainerStatus{Name: c.spec.Name, Image: c.spec.Image, ImageID: "kubenode://" + c.spec.Image}
		switch {
		case c.cmd == nil:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: c.waitReason, Message: c.waitMessage}
			if cs.State.Waiting.Reason == "" {
				cs.State.Waiting.Reason = "ContainerCreating"
			}
			allDone = false
		case exited(c):
			term := &corev1.ContainerStateTerminated{
				ExitCode: int32(c.exitCode), Reason: "Completed", StartedAt: c.startedAt, FinishedAt: c.finishedAt,
				ContainerID: fmt.Sprintf("kubenode://%d", c.cmd.Process.Pid),
			}
			if c.exitCode != 0 {
				term.Reason = "Error"
				anyFailed = true
			}
			if restart {
				cs.LastTerminationState.Terminated = term
				cs.RestartCount = 1
				cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "kubenode does not restart containers"}
				allDone = false
			} else {
				cs.State.Terminated = term
			}
		default:
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: c.startedAt}
			cs.Started = &[]bool{true}[0]
			cs.Ready = c.ready
			cs.ContainerID = fmt.Sprintf("kubenode://%d", c.cmd.Process.Pid)
			allDone = false
		}
		if !cs.Ready {
			allReady = false
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	if allDone && !restart {
		st.Phase = corev1.PodSucceeded
		if anyFailed {
			st.Phase = corev1.PodFailed
		}
		allReady = false
	}
	ready := corev1.ConditionFalse
	if allReady {
		ready = corev1.ConditionTrue
	}
	st.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: ready},
		{Type: corev1.PodReady, Status: ready},
	}
	return st
}
