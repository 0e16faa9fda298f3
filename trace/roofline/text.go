package roofline

import (
	"fmt"
	"io"
	"strings"

	"github.com/spoc-project/spoc/trace"
)

// GPUFromTraceName guesses the perfmodel catalog name of a GPU from the
// name a trace records (TARGET_INFO_GPU, e.g. "NVIDIA H100 80GB HBM3").
func GPUFromTraceName(name string) (string, bool) {
	n := strings.ToUpper(name)
	for _, g := range []string{"H200", "H100", "B200", "A100"} {
		if strings.Contains(n, g) {
			return strings.ToLower(g), true
		}
	}
	return "", false
}

// WriteText prints the comparisons as one table (measured beside each
// assumption) and sets the predicted overhead beside the measured idle time.
func WriteText(w io.Writer, measured *trace.Breakdown, mix BatchMix, cmps []Comparison) error {
	if len(cmps) == 0 {
		return nil
	}
	names := make([]string, len(cmps))
	tc := make([]*trace.Comparison, len(cmps))
	for i, c := range cmps {
		names[i] = c.Prediction.Assumption
		if c.Prediction.HypotheticalFP4 {
			names[i] += "*"
		}
		tc[i] = c.Comparison
	}
	if _, err := fmt.Fprintf(w, "\nroofline comparison (perfmodel; step of %d decodes at %d context", mix.DecodeSeqs, mix.DecodeContext); err != nil {
		return err
	}
	if mix.PrefillTokens > 0 {
		fmt.Fprintf(w, " + a %d-token prefill chunk at %d context", mix.PrefillTokens, mix.PrefillContext)
	}
	fmt.Fprintln(w, ")")
	if err := trace.WriteComparisonText(w, names, tc); err != nil {
		return err
	}
	var idle float64
	for _, g := range measured.GPUs {
		idle += g.IdleFraction
	}
	line := "predicted CPU/launch overhead (GPU idle):"
	for _, c := range cmps {
		line += fmt.Sprintf(" %s %.1f%%", c.Prediction.Assumption, 100*c.Prediction.OverheadShare)
	}
	if n := len(measured.GPUs); n > 0 {
		line += fmt.Sprintf("; measured idle %.1f%% (mean over GPUs)", 100*idle/float64(n))
	}
	fmt.Fprintln(w, line)
	for _, c := range cmps {
		if c.Prediction.HypotheticalFP4 {
			_, err := fmt.Fprintf(w, "* %s: the GPU has no FP4 tensor cores; assumed an FP4 peak of twice its FP8 peak\n", c.Prediction.Assumption)
			return err
		}
	}
	return nil
}
