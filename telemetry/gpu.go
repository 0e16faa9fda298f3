package telemetry

import (
	"sort"
	"strconv"
)

// Clock event (throttle) reason bits of NVML, reported by DCGM in
// DCGM_FI_DEV_CLOCKS_EVENT_REASONS (DCGM_FI_DEV_CLOCK_THROTTLE_REASONS before
// DCGM 3.3).
const (
	ReasonGPUIdle              uint64 = 0x1
	ReasonApplicationsClocks   uint64 = 0x2
	ReasonSWPowerCap           uint64 = 0x4
	ReasonHWSlowdown           uint64 = 0x8
	ReasonSyncBoost            uint64 = 0x10
	ReasonSWThermalSlowdown    uint64 = 0x20
	ReasonHWThermalSlowdown    uint64 = 0x40
	ReasonHWPowerBrakeSlowdown uint64 = 0x80
	ReasonDisplayClock         uint64 = 0x100
)

var reasonNames = []struct {
	bit  uint64
	name string
}{
	{ReasonGPUIdle, "gpu_idle"},
	{ReasonApplicationsClocks, "applications_clocks_setting"},
	{ReasonSWPowerCap, "sw_power_cap"},
	{ReasonHWSlowdown, "hw_slowdown"},
	{ReasonSyncBoost, "sync_boost"},
	{ReasonSWThermalSlowdown, "sw_thermal_slowdown"},
	{ReasonHWThermalSlowdown, "hw_thermal_slowdown"},
	{ReasonHWPowerBrakeSlowdown, "hw_power_brake_slowdown"},
	{ReasonDisplayClock, "display_clock_setting"},
}

// ReasonNames names the bits set in a clock event reasons mask, lowest bit
// first; unknown bits are named by their hexadecimal value.
func ReasonNames(mask uint64) []string {
	var out []string
	for _, r := range reasonNames {
		if mask&r.bit != 0 {
			out = append(out, r.name)
			mask &^= r.bit
		}
	}
	for b := uint64(1); mask != 0 && b != 0; b <<= 1 {
		if mask&b != 0 {
			out = append(out, "0x"+strconv.FormatUint(b, 16))
			mask &^= b
		}
	}
	return out
}

// GPUSignals summarise one GPU over a window.
type GPUSignals struct {
	Target              string `json:"target"`
	Host                string `json:"host,omitempty"`
	GPU                 string `json:"gpu"`
	UUID                string `json:"uuid,omitempty"`
	Model               string `json:"model,omitempty"`
	SMActive            Stat   `json:"sm_active"`
	SMOccupancy         Stat   `json:"sm_occupancy"`
	DRAMActive          Stat   `json:"dram_active"`
	TensorActive        Stat   `json:"tensor_active"`
	Utilization         Stat   `json:"gpu_util_percent"`
	TemperatureC        Stat   `json:"temperature_c"`
	SMClockMHz          Stat   `json:"sm_clock_mhz"`
	PowerW              Stat   `json:"power_w"`
	FBUsedMiB           Stat   `json:"fb_used_mib"`
	NVLinkTxBytesPerSec Stat   `json:"nvlink_tx_bytes_per_second"`
	NVLinkRxBytesPerSec Stat   `json:"nvlink_rx_bytes_per_second"`
	// ThrottleReasons names every clock event reason seen in the window.
	ThrottleReasons []string `json:"throttle_reasons,omitempty"`
	// SlowdownFraction is the fraction of samples whose reasons include a
	// bit of DeriveOptions.SlowdownMask.
	SlowdownFraction float64 `json:"slowdown_fraction"`
}

// Name is the GPU's short display name: host (or target) and GPU index.
func (g GPUSignals) Name() string { return gpuKeyOf(g.Target, g.Host, g.GPU, g.UUID).String() }

// gpuKey identifies a GPU across DCGM series.
type gpuKey struct{ target, host, gpu, uuid string }

func (k gpuKey) String() string {
	h := k.host
	if h == "" {
		h = k.target
	}
	return h + "/gpu" + k.gpu
}

func gpuKeyOf(target, host, gpu, uuid string) gpuKey { return gpuKey{target, host, gpu, uuid} }

func gpuKeyFromLabels(target string, l map[string]string) gpuKey {
	k := gpuKey{target: target, gpu: l["gpu"], uuid: l["UUID"]}
	if k.uuid == "" {
		k.uuid = l["uuid"]
	}
	for _, h := range HostLabels {
		if l[h] != "" {
			k.host = l[h]
			break
		}
	}
	if k.gpu == "" {
		k.gpu = l["device"]
	}
	return k
}

// lessGPU orders GPUs by target, host and numeric GPU index.
func lessGPU(a, b gpuKey) bool {
	if a.target != b.target {
		return a.target < b.target
	}
	if a.host != b.host {
		return a.host < b.host
	}
	ai, aerr := strconv.Atoi(a.gpu)
	bi, berr := strconv.Atoi(b.gpu)
	if aerr == nil && berr == nil && ai != bi {
		return ai < bi
	}
	if a.gpu != b.gpu {
		return a.gpu < b.gpu
	}
	return a.uuid < b.uuid
}

// gpuSeries groups the window's points of one DCGM metric by GPU; several
// series of one GPU (scraped twice, say) are averaged per instant.
func (s *Store) gpuSeries(name string, lo, hi int64) map[gpuKey][]Point {
	by := make(map[gpuKey][]Series)
	for _, sr := range s.byName(name) {
		k := gpuKeyFromLabels(sr.Target, sr.Labels)
		by[k] = append(by[k], sr)
	}
	out := make(map[gpuKey][]Point, len(by))
	for k, ss := range by {
		out[k] = aggregate(ss, lo, hi, true)
	}
	return out
}

// gpuSignals summarises every GPU seen in the window and returns its charts.
func (s *Store) gpuSignals(lo, hi int64, opts DeriveOptions) ([]GPUSignals, []ChartSeries) {
	type field struct {
		metric string
		dst    func(*GPUSignals) *Stat
		chart  string
		unit   string
	}
	fields := []field{
		{DCGMSMActive, func(g *GPUSignals) *Stat { return &g.SMActive }, "sm_active", "ratio"},
		{DCGMSMOccupancy, func(g *GPUSignals) *Stat { return &g.SMOccupancy }, "", ""},
		{DCGMDRAMActive, func(g *GPUSignals) *Stat { return &g.DRAMActive }, "dram_active", "ratio"},
		{DCGMTensorActive, func(g *GPUSignals) *Stat { return &g.TensorActive }, "tensor_active", "ratio"},
		{DCGMGPUUtil, func(g *GPUSignals) *Stat { return &g.Utilization }, "", ""},
		{DCGMGPUTemp, func(g *GPUSignals) *Stat { return &g.TemperatureC }, "temperature", "celsius"},
		{DCGMSMClock, func(g *GPUSignals) *Stat { return &g.SMClockMHz }, "sm_clock", "MHz"},
		{DCGMPower, func(g *GPUSignals) *Stat { return &g.PowerW }, "power", "watts"},
		{DCGMFBUsed, func(g *GPUSignals) *Stat { return &g.FBUsedMiB }, "", ""},
		{DCGMNVLinkTxBytes, func(g *GPUSignals) *Stat { return &g.NVLinkTxBytesPerSec }, "", ""},
		{DCGMNVLinkRxBytes, func(g *GPUSignals) *Stat { return &g.NVLinkRxBytesPerSec }, "", ""},
	}
	gpus := make(map[gpuKey]*GPUSignals)
	get := func(k gpuKey) *GPUSignals {
		g := gpus[k]
		if g == nil {
			g = &GPUSignals{Target: k.target, Host: k.host, GPU: k.gpu, UUID: k.uuid}
			gpus[k] = g
		}
		return g
	}
	type chart struct {
		key gpuKey
		ChartSeries
	}
	var charts []chart
	for _, f := range fields {
		for k, pts := range s.gpuSeries(f.metric, lo, hi) {
			if len(pts) == 0 {
				continue
			}
			*f.dst(get(k)) = stat(pts)
			if f.chart != "" {
				charts = append(charts, chart{k, ChartSeries{Signal: f.chart, GPU: k.String(), Unit: f.unit, Points: pts}})
			}
		}
	}
	for k, pts := range s.gpuSeries(DCGMClockReasons, lo, hi) {
		if len(pts) == 0 {
			continue
		}
		g := get(k)
		var seen uint64
		slow := 0
		for _, p := range pts {
			m := uint64(p.V)
			seen |= m
			if m&opts.SlowdownMask != 0 {
				slow++
			}
		}
		g.ThrottleReasons = ReasonNames(seen)
		g.SlowdownFraction = float64(slow) / float64(len(pts))
	}
	for _, sr := range s.byName(DCGMSMClock, DCGMGPUTemp, DCGMSMActive) {
		if m := sr.Labels["modelName"]; m != "" {
			if g := gpus[gpuKeyFromLabels(sr.Target, sr.Labels)]; g != nil && g.Model == "" {
				g.Model = m
			}
		}
	}
	keys := make([]gpuKey, 0, len(gpus))
	for k := range gpus {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return lessGPU(keys[i], keys[j]) })
	out := make([]GPUSignals, 0, len(keys))
	for _, k := range keys {
		out = append(out, *gpus[k])
	}
	sort.Slice(charts, func(i, j int) bool {
		if charts[i].Signal != charts[j].Signal {
			return charts[i].Signal < charts[j].Signal
		}
		return lessGPU(charts[i].key, charts[j].key)
	})
	cs := make([]ChartSeries, len(charts))
	for i := range charts {
		cs[i] = charts[i].ChartSeries
	}
	return out, cs
}
