// Package loadgen mentions workload.NewSchedule( but never calls it:
// rejected.
package loadgen

import "github.com/spoc-project/spoc/workload"

// run would use workload.NewSchedule(opts) here.
func run() string {
	var _ workload.Spec
	return "workload.NewSchedule("
}
