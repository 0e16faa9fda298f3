// Package config resolves the Setup: it may call sim.NewDeployment.
package config

import "github.com/spoc-project/spoc/sim"

func resolve(spec sim.DeploymentSpec) (sim.Deployment, error) { return sim.NewDeployment(spec) }
