package telemetry

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// gpuRound is one instant of a node: SM clock and reasons per GPU index.
type gpuRound struct {
	clocks  []float64
	reasons []uint64
}

func gpuStore(rounds []gpuRound) *Store {
	st := NewStore(StoreOptions{})
	for i, r := range rounds {
		var samples []Sample
		for g, c := range r.clocks {
			l := map[string]string{"gpu": fmt.Sprint(g), "Hostname": "n1"}
			samples = append(samples, Sample{Name: DCGMSMClock, Labels: l, Value: c})
			if r.reasons != nil {
				samples = append(samples, Sample{Name: DCGMClockReasons, Labels: l, Value: float64(r.reasons[g])})
			}
		}
		st.Add("dcgm", t0.Add(time.Duration(i)*time.Second), samples)
	}
	return st
}

func flagged(ss []Straggler) []string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%s@%d-%d", s.Name(), int(s.Start.Sub(t0).Seconds()), int(s.End.Sub(t0).Seconds())))
	}
	return out
}

func TestStragglerRules(t *testing.T) {
	fast := []float64{1980, 1980, 1980, 1980}
	slow2 := []float64{1980, 1980, 1700, 1980}   // 14 % below peers
	slight2 := []float64{1980, 1980, 1850, 1980} // 6.6 % below: within 10 %
	none := []uint64{0, 0, 0, 0}
	powerCapAll := []uint64{4, 4, 4, 4}
	thermal3 := []uint64{0, 0, 0, uint64(ReasonSWThermalSlowdown)}
	idle1 := []uint64{0, uint64(ReasonGPUIdle), 0, 0}
	for _, tc := range []struct {
		name   string
		rounds []gpuRound
		opts   DeriveOptions
		want   []string
	}{
		{"all equal", []gpuRound{{fast, none}, {fast, none}}, DeriveOptions{}, nil},
		{"power cap everywhere is no straggler", []gpuRound{{fast, powerCapAll}}, DeriveOptions{}, nil},
		{"within the fraction", []gpuRound{{slight2, none}}, DeriveOptions{}, nil},
		{"within a tighter fraction", []gpuRound{{slight2, none}}, DeriveOptions{ClockFraction: 0.05}, []string{"n1/gpu2@0-0"}},
		{"clock rule, two windows", []gpuRound{{slow2, none}, {slow2, none}, {fast, none}, {slow2, none}}, DeriveOptions{}, []string{"n1/gpu2@0-1", "n1/gpu2@3-3"}},
		{"clock rule without reasons series", []gpuRound{{slow2, nil}}, DeriveOptions{}, []string{"n1/gpu2@0-0"}},
		{"thermal bit at full clock", []gpuRound{{fast, none}, {fast, thermal3}, {fast, thermal3}}, DeriveOptions{}, []string{"n1/gpu3@1-2"}},
		{"power cap counts when masked in", []gpuRound{{fast, []uint64{0, 4, 0, 0}}}, DeriveOptions{SlowdownMask: ReasonSWPowerCap}, []string{"n1/gpu1@0-0"}},
		{"idle GPU at low clock is no straggler", []gpuRound{{[]float64{1980, 345, 1980, 1980}, idle1}}, DeriveOptions{}, nil},
		{"min samples drops blips", []gpuRound{{slow2, none}, {fast, none}, {slow2, none}, {slow2, none}}, DeriveOptions{MinSamples: 2}, []string{"n1/gpu2@2-3"}},
		// With TP 2, GPU 2's peer is GPU 3 only; GPUs 0-1 run slower as a
		// pair, which is no straggler.
		{"TP groups compare within a group", []gpuRound{{[]float64{1500, 1500, 1700, 1980}, none}}, DeriveOptions{TPSize: 2}, []string{"n1/gpu2@0-0"}},
		{"one node as one group", []gpuRound{{[]float64{1500, 1500, 1980, 1980}, none}}, DeriveOptions{}, []string{"n1/gpu0@0-0", "n1/gpu1@0-0"}},
		{"a lone GPU has no peers", []gpuRound{{[]float64{900}, []uint64{0}}}, DeriveOptions{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := gpuStore(tc.rounds)
			got := flagged(st.Window(t0, t0.Add(time.Hour), tc.opts).Stragglers)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("flagged %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStragglerGroupsByHost(t *testing.T) {
	st := NewStore(StoreOptions{})
	// Two nodes; node b's GPUs all run slower than node a's: no straggler,
	// because each node is its own tensor-parallel group.
	for i := 0; i < 3; i++ {
		var s []Sample
		for g := 0; g < 2; g++ {
			s = append(s, Sample{Name: DCGMSMClock, Labels: map[string]string{"gpu": fmt.Sprint(g), "hostname": "a"}, Value: 1980})
			s = append(s, Sample{Name: DCGMSMClock, Labels: map[string]string{"gpu": fmt.Sprint(g), "hostname": "b"}, Value: 1400})
		}
		st.Add("dcgm", t0.Add(time.Duration(i)*time.Second), s)
	}
	if ss := st.Window(t0, t0.Add(time.Minute), DeriveOptions{}).Stragglers; len(ss) != 0 {
		t.Errorf("flagged %v across nodes", flagged(ss))
	}
}
