package plan

import "github.com/spoc-project/spoc/sim"

// Tests may build a deployment of their own.
var _, _ = sim.NewDeployment(sim.DeploymentSpec{})
