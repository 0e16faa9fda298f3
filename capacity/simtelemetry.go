package capacity

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/telemetry"
	"github.com/spoc-project/spoc/vllm"
)

// SimSignals derives telemetry signals from a virtual run's engine and GPU
// series through the same path as live telemetry: the samples are written
// under vLLM's and dcgm-exporter's metric names into a telemetry.Store and
// the window derived there, stragglers included. A virtual run and a live one
// therefore produce the same report sections.
func SimSignals(stats *sim.RunStats, dep sim.Deployment, clockDrop float64) telemetry.Signals {
	st := telemetry.NewStore(telemetry.StoreOptions{})
	eng := map[string]string{vllm.LabelModelName: vllm.ServedName(dep.Model.Name, dep.ServedModelName), vllm.LabelEngine: "0"}
	for _, s := range stats.Series.Samples {
		t := stats.Start.Add(time.Duration(s.T * float64(time.Second)))
		samples := []telemetry.Sample{
			{Name: telemetry.VLLMRunning, Labels: eng, Value: float64(s.Running)},
			{Name: telemetry.VLLMWaiting, Labels: eng, Value: float64(s.Waiting)},
			{Name: telemetry.VLLMKVCacheUsage, Labels: eng, Value: s.KVUsage},
			{Name: telemetry.VLLMPrefixQueries, Labels: eng, Value: float64(s.PrefixQueries)},
			{Name: telemetry.VLLMPrefixHits, Labels: eng, Value: float64(s.PrefixHits)},
			{Name: telemetry.VLLMPreemptions, Labels: eng, Value: float64(s.Preemptions)},
			{Name: telemetry.VLLMPromptTokens, Labels: eng, Value: float64(s.PromptTokens)},
			{Name: telemetry.VLLMGenerationTokens, Labels: eng, Value: float64(s.GenerationTokens)},
		}
		for _, g := range s.GPUs {
			l := map[string]string{"gpu": strconv.Itoa(g.GPU), "UUID": fmt.Sprintf("GPU-sim-%04d", g.GPU), "modelName": dep.GPU.Name, "Hostname": "sim"}
			samples = append(samples,
				telemetry.Sample{Name: telemetry.DCGMSMActive, Labels: l, Value: g.SMActive},
				telemetry.Sample{Name: telemetry.DCGMDRAMActive, Labels: l, Value: g.DRAMActive},
				telemetry.Sample{Name: telemetry.DCGMTensorActive, Labels: l, Value: g.TensorActive},
				telemetry.Sample{Name: telemetry.DCGMGPUUtil, Labels: l, Value: g.Util},
				telemetry.Sample{Name: telemetry.DCGMSMClock, Labels: l, Value: g.SMClockMHz},
				telemetry.Sample{Name: telemetry.DCGMGPUTemp, Labels: l, Value: g.TemperatureC},
				telemetry.Sample{Name: telemetry.DCGMPower, Labels: l, Value: g.PowerWatts},
				telemetry.Sample{Name: telemetry.DCGMFBUsed, Labels: l, Value: g.FBUsedMiB},
				telemetry.Sample{Name: telemetry.DCGMClockReasons, Labels: l, Value: float64(g.ThrottleReasons)},
			)
		}
		st.Add("sim", t, samples)
	}
	return st.Window(stats.Window.Start, stats.Window.End, telemetry.DeriveOptions{ClockFraction: clockDrop, TPSize: dep.TensorParallelSize})
}
