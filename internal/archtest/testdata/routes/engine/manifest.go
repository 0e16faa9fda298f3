// Package engine mentions /v1/models in comments, imports a v1 package
// and documents a field in a struct tag: accepted.
package engine

import appsv1 "k8s.io/api/apps/v1"

type Config struct {
	Endpoint string `doc:"chat (/v1/chat/completions) or completions"`
}

var apiVersion = "apps/v1" // a Kubernetes group version, not a route

var _ appsv1.Deployment
