// Package sim defines NewDeployment and may call it.
package sim

type DeploymentSpec struct{ Model string }

type Deployment struct{ Spec DeploymentSpec }

func NewDeployment(spec DeploymentSpec) (Deployment, error) { return Deployment{spec}, nil }

func again(d Deployment) (Deployment, error) { return NewDeployment(d.Spec) }
