package trace

import "fmt"

// DefaultStragglerSpread is the relative spread of per-GPU communication time,
// (max-min)/mean, above which a TP group is called imbalanced. Healthy ranks of
// one tensor-parallel group run the same kernels and wait for each other
// briefly; 20 % is well above the run-to-run noise of a steady-state window.
const DefaultStragglerSpread = 0.2

// RankLoad is one GPU's split between communication and everything else.
type RankLoad struct {
	Device          int   `json:"device"`
	CommunicationNS int64 `json:"communication_ns"`
	// ComputeNS is the kernel time outside communication and memory.
	ComputeNS int64 `json:"compute_ns"`
}

// Imbalance describes how evenly the GPUs of a trace share the work. In a
// tensor-parallel group every rank enters each all-reduce and waits there for
// the slowest; a straggler (a throttled or slower GPU) therefore shows as
// longer communication time on its peers and the shortest on itself.
type Imbalance struct {
	Ranks []RankLoad `json:"ranks"`
	// CommunicationSpread is (max-min)/mean of the ranks' communication time.
	CommunicationSpread float64 `json:"communication_spread"`
	// Straggler is the device suspected of slowing the group (the one that
	// waits least), set when CommunicationSpread exceeds the threshold.
	Straggler *int `json:"straggler,omitempty"`
	// Note explains the verdict in a sentence.
	Note string `json:"note"`
}

func imbalance(gpus []GPUBreakdown, threshold float64) *Imbalance {
	if len(gpus) < 2 {
		return nil
	}
	im := &Imbalance{}
	var sum int64
	minI, maxI := 0, 0
	for i, g := range gpus {
		var comm, compute int64
		for _, c := range g.Categories {
			switch c.Name {
			case Communication:
				comm = c.TimeNS
			case Memory:
			default:
				compute += c.TimeNS
			}
		}
		im.Ranks = append(im.Ranks, RankLoad{Device: g.Device, CommunicationNS: comm, ComputeNS: compute})
		sum += comm
		if comm < im.Ranks[minI].CommunicationNS {
			minI = i
		}
		if comm > im.Ranks[maxI].CommunicationNS {
			maxI = i
		}
	}
	if sum == 0 {
		im.Note = "no communication kernels: the GPUs do not form a tensor-parallel group in this window"
		return im
	}
	mean := float64(sum) / float64(len(im.Ranks))
	lo, hi := im.Ranks[minI], im.Ranks[maxI]
	im.CommunicationSpread = float64(hi.CommunicationNS-lo.CommunicationNS) / mean
	if im.CommunicationSpread <= threshold {
		im.Note = fmt.Sprintf("balanced: communication time varies by %.0f%% across GPUs (threshold %.0f%%)",
			100*im.CommunicationSpread, 100*threshold)
		return im
	}
	dev := lo.Device
	im.Straggler = &dev
	im.Note = fmt.Sprintf("imbalanced: GPU %d spends %s in communication against a mean of %s; "+
		"its peers wait for it in every collective, so it is the likely straggler (check its clocks and "+
		"thermal throttling)", dev, FormatNS(lo.CommunicationNS), FormatNS(int64(mean)))
	return im
}
