//go:build race

package telemetry

// raceDetector is true under -race, where the simulator runs several times
// slower than its clock and scrapes time out: tests that depend on wall-clock
// pacing skip then.
const raceDetector = true
