package kubetest

import (
	"k8s.io/client-go/rest"

	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	batchv1client "k8s.io/client-go/kubernetes/typed/batch/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Clients are the typed clients of the API groups spoc's objects live in
// (core, apps, batch), with the method names of client-go's clientset. The
// whole clientset holds a client for every API group, about 100 packages
// more to compile: some 30 s of CPU in a cold build of the fast test lane.
type Clients struct {
	core  *corev1client.CoreV1Client
	apps  *appsv1client.AppsV1Client
	batch *batchv1client.BatchV1Client
}

// NewClients returns the clients of cfg.
func NewClients(cfg *rest.Config) (*Clients, error) {
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	apps, err := appsv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	batch, err := batchv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{core: core, apps: apps, batch: batch}, nil
}

func (c *Clients) CoreV1() corev1client.CoreV1Interface    { return c.core }
func (c *Clients) AppsV1() appsv1client.AppsV1Interface    { return c.apps }
func (c *Clients) BatchV1() batchv1client.BatchV1Interface { return c.batch }
