// Package report switches on names that are no sampler's, and mentions
// tpe.New only in a comment: accepted.
package report

func kind(name string) int {
	switch name {
	case "grid-line", "axis":
		return 1
	}
	if name == "tpe" { // not a switch: not what the rule checks
		return 2
	}
	return 0
}
