//go:build race

package loadgen_test

// raceEnabled: the race detector slows the client ~10×, so timing bounds
// are not checked under it.
const raceEnabled = true
