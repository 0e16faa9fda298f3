package workload

import "math/rand/v2"

// Stream tags keep the random streams of different purposes independent.
const (
	tagSession uint64 = iota + 1
	tagProfile
	tagTeam
	tagSystem
	tagRoot
	tagTeamDoc
	tagUserDoc
	tagTurn
	tagAssistant
	tagImport
	tagArrival
)

// mix64 is the splitmix64 finalizer: a bijective avalanche of x.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// hashKey folds the values into one well-mixed 64-bit key.
func hashKey(seed uint64, vals ...uint64) uint64 {
	h := mix64(seed + 0x9e3779b97f4a7c15)
	for _, v := range vals {
		h = mix64(h ^ (v + 0x9e3779b97f4a7c15 + h<<6 + h>>2))
	}
	return h
}

// newRand returns a PCG stream determined by its arguments alone.
func newRand(seed uint64, vals ...uint64) *rand.Rand {
	k := hashKey(seed, vals...)
	return rand.New(rand.NewPCG(k, mix64(k^0xda942042e4dd58b5)))
}

// unitFloat maps a key to [0, 1).
func unitFloat(k uint64) float64 { return float64(k>>11) / (1 << 53) }
