// Package kubenode is a node agent for a real Kubernetes control plane on a
// machine that has no container runtime and cannot pull images (the idea of
// kwok): it registers a Node, binds the pending pods that fit on it (GPU
// capacity, node selector), runs each container as a local process on a
// loopback address of its own (the pod IP), probes readiness the way the
// kubelet does (HTTP GET on the pod IP) and writes pod IP, readiness and
// termination back through the API. Deleting a pod stops its processes.
//
// It exists so that spoc's Kubernetes launcher is tested against a real
// kube-apiserver and kube-controller-manager (see internal/testharness/kubetest): the
// Deployment, ReplicaSet, Pods, EndpointSlices and garbage collection are
// the cluster's own; only the container runtime is replaced by processes.
// Containers are host processes with the agent's rights: there is no
// filesystem isolation and no mount namespace. Volumes of type emptyDir,
// hostPath and persistentVolumeClaim are local folders under the agent's
// Dir (other types are not mapped), and an
// argument naming a path under a mount path (--out /records/run.jsonl) is
// rewritten to that folder, so pods mounting the same claim share its
// files; any other absolute path in a container's arguments, and paths the
// program finds elsewhere (environment, files), are the host's. Run only
// commands that write relative paths (each pod has a working folder of its
// own) or paths in their volumes. It does not restart crashed containers
// (their pod stays in CrashLoopBackOff with the exit in lastState), and of
// the kubelet API serves container logs only (kubectl logs works; exec and
// port-forward do not).
//
// It also stands in for kube-proxy: a Service whose cluster IP is a
// loopback address (give the API server a loopback service range) is
// listened on at that IP and forwards each connection to the next ready
// pod it selects. Pod IPs are loopback addresses, which the API server
// refuses in EndpointSlices, so the backends come from the pods.
package kubenode
