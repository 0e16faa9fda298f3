package kubenode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// volumeDirs returns the local folder standing for each of c's volume
// mounts, by mount path, creating them. There is no mount namespace on
// this node (containers are host processes), so a volume is a folder:
//
//   - emptyDir: wd/volumes/NAME, the pod's own (gone with its folder);
//
//   - hostPath: Dir/hostpath/PATH, one per node path, shared by every pod
//     that mounts it, as the host's folder would be;
//
//   - persistentVolumeClaim: Dir/claims/NAMESPACE/CLAIM, shared by every
//     pod that mounts the claim and kept after them, as a volume is. The
//     claim must exist (a kubelet waits for it: the container stays
//     ContainerCreating with FailedMount); binding to a volume is not
//     modelled.
//
//   - projected with a serviceAccountToken source (the kube-api-access
//     volume the API server's admission adds to every pod):
//     wd/volumes/NAME holding a token of the pod's ServiceAccount bound
//     to the pod (TokenRequest), ca.crt (Options.CACert) and namespace,
//     as the kubelet writes them.
//
// Other volume types (secret, configMap, other projections) are not
// mapped: their mount paths stay the host's, as for a pod with no volume.
func (a *Agent) volumeDirs(ctx context.Context, p *corev1.Pod, wd string, c *corev1.Container) (map[string]string, error) {
	if len(c.VolumeMounts) == 0 {
		return nil, nil
	}
	vols := map[string]corev1.Volume{}
	for _, v := range p.Spec.Volumes {
		vols[v.Name] = v
	}
	out := map[string]string{}
	for _, m := range c.VolumeMounts {
		v, ok := vols[m.Name]
		if !ok {
			return nil, fmt.Errorf("volume mount %q: no volume of that name in the pod", m.Name)
		}
		var dir string
		switch {
		case v.EmptyDir != nil:
			dir = filepath.Join(wd, "volumes", v.Name)
		case v.HostPath != nil:
			dir = filepath.Join(a.opts.Dir, "hostpath", filepath.Clean("/"+v.HostPath.Path))
		case v.PersistentVolumeClaim != nil:
			claim := v.PersistentVolumeClaim.ClaimName
			if _, err := a.opts.Client.CoreV1().PersistentVolumeClaims(p.Namespace).Get(ctx, claim, metav1.GetOptions{}); err != nil {
				return nil, fmt.Errorf("volume %q: persistentvolumeclaim %q: %w", v.Name, claim, err)
			}
			dir = filepath.Join(a.opts.Dir, "claims", p.Namespace, claim)
		case serviceAccountVolume(v):
			dir = filepath.Join(wd, "volumes", v.Name)
			if err := a.writeServiceAccount(ctx, p, v, dir); err != nil {
				return nil, fmt.Errorf("volume %q: %w", v.Name, err)
			}
		default:
			continue
		}
		if m.SubPath != "" {
			dir = filepath.Join(dir, filepath.Clean("/"+m.SubPath))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		out[filepath.Clean(m.MountPath)] = dir
	}
	return out, nil
}

// mapPaths rewrites the arguments that name a path in a mounted volume
// (the mount path itself, a path under it, or either after "=" as in
// --out=/records/run.jsonl) to the volume's local folder: what the
// process opens is then the folder every pod mounting the volume shares.
// Longer mount paths win (a mount inside another).
func mapPaths(argv []string, mounts map[string]string) []string {
	if len(mounts) == 0 {
		return argv
	}
	paths := make([]string, 0, len(mounts))
	for m := range mounts {
		paths = append(paths, m)
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	mapOne := func(s string) string {
		for _, m := range paths {
			if s == m {
				return mounts[m]
			}
			if rest, ok := strings.CutPrefix(s, strings.TrimSuffix(m, "/")+"/"); ok {
				return filepath.Join(mounts[m], rest)
			}
		}
		return s
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(v, "/") {
			out[i] = k + "=" + mapOne(v)
			continue
		}
		out[i] = mapOne(a)
	}
	return out
}

func serviceAccountVolume(v corev1.Volume) bool {
	if v.Projected == nil {
		return false
	}
	for _, src := range v.Projected.Sources {
		if src.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

// writeServiceAccount writes the files of a kube-api-access volume: the
// token at its source's path, ca.crt and namespace.
func (a *Agent) writeServiceAccount(ctx context.Context, p *corev1.Pod, v corev1.Volume, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sa := p.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	for _, src := range v.Projected.Sources {
		if t := src.ServiceAccountToken; t != nil {
			req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				Audiences:         nonEmpty(t.Audience),
				ExpirationSeconds: t.ExpirationSeconds,
				BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
			}}
			tok, err := a.opts.Client.CoreV1().ServiceAccounts(p.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("token of service account %s: %w", sa, err)
			}
			if err := os.WriteFile(filepath.Join(dir, t.Path), []byte(tok.Status.Token), 0o600); err != nil {
				return err
			}
		}
	}
	if len(a.opts.CACert) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "ca.crt"), a.opts.CACert, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "namespace"), []byte(p.Namespace), 0o644)
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
