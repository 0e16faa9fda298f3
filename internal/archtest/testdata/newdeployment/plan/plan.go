// Package plan resolves the deployment again mid-run: rejected.
package plan

import "github.com/spoc-project/spoc/sim"

func phase(spec sim.DeploymentSpec) error {
	_, err := sim.NewDeployment(spec)
	return err
}
