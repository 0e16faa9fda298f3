package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// ClientConfigMap is the pod side of a split run on Kubernetes: a shard
// reads its run's ConfigMap through the API server with the pod's
// service account (get and watch on configmaps, the Role spoc-client of
// deploy/kubernetes/spoc-run-job.yaml). spoc's image has no kubectl, so the
// pod uses the Kubernetes Go client.
type ClientConfigMap struct {
	cms  corev1client.ConfigMapInterface
	name string
}

// OpenClientConfigMap reaches the API server the way in-cluster clients
// do (KUBERNETES_SERVICE_HOST and _PORT, the token and CA in saDir) and
// returns the ConfigMap name of namespace ("" for the one in saDir).
func OpenClientConfigMap(saDir, namespace, name string) (*ClientConfigMap, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("client shard: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set: not in a pod?")
	}
	if namespace == "" {
		b, err := os.ReadFile(filepath.Join(saDir, "namespace"))
		if err != nil {
			return nil, fmt.Errorf("client shard: the pod's namespace: %w", err)
		}
		namespace = strings.TrimSpace(string(b))
	}
	tokenFile := filepath.Join(saDir, "token")
	if _, err := os.Stat(tokenFile); err != nil {
		return nil, fmt.Errorf("client shard: the pod's service-account token: %w", err)
	}
	cfg := &rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		BearerTokenFile: tokenFile,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(saDir, "ca.crt")},
		UserAgent:       "spoc-client-shard",
	}
	c, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client shard: %w", err)
	}
	return &ClientConfigMap{cms: c.ConfigMaps(namespace), name: name}, nil
}

// Watch calls fn with the ConfigMap's data now and after every change
// until fn returns true or ctx ends. Errors of the API (a watch that
// ends, the server briefly away) are retried every second; a ConfigMap
// that does not exist is an error.
func (c *ClientConfigMap) Watch(ctx context.Context, fn func(data map[string]string) bool) error {
	for {
		cm, err := c.cms.Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("client shard: get configmap %s: %w", c.name, err)
		}
		if fn(cm.Data) {
			return nil
		}
		w, err := c.cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + c.name, ResourceVersion: cm.ResourceVersion})
		if err == nil {
			for ev := range w.ResultChan() {
				if m, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Modified {
					if fn(m.Data) {
						w.Stop()
						return nil
					}
				}
			}
			w.Stop()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// WatchRun is Watch read as a split run's state: the shard job, the start
// instant once written (zero before), and whether stop was written. A
// start that does not parse is an error.
func (c *ClientConfigMap) WatchRun(ctx context.Context, fn func(job []byte, start time.Time, stop bool) bool) error {
	var bad error
	err := c.Watch(ctx, func(data map[string]string) bool {
		var start time.Time
		if s := data[ClientKeyStart]; s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				bad = fmt.Errorf("client shard: configmap %s: %s %q: %w", c.name, ClientKeyStart, s, err)
				return true
			}
			start = t
		}
		return fn([]byte(data[ClientKeyJob]), start, data[ClientKeyStop] != "")
	})
	if bad != nil {
		return bad
	}
	return err
}
