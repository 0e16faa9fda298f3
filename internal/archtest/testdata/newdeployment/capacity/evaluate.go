// Package capacity takes sim.NewDeployment as a value under another
// name: rejected too.
package capacity

import simulator "github.com/spoc-project/spoc/sim"

var build = simulator.NewDeployment
