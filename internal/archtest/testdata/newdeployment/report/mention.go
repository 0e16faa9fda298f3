// Package report only mentions sim.NewDeployment in a comment and a
// string, and calls a method of that name on a value of its own: accepted.
package report

type builder struct{}

func (builder) NewDeployment() {}

var note = "built by sim.NewDeployment(spec)"

func use() {
	var sim builder
	sim.NewDeployment()
}
