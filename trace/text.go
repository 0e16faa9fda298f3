package trace

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spoc-project/spoc/internal/errwriter"
)

// TextOptions tune WriteText.
type TextOptions struct {
	// MaxUnknown caps the unknown kernels listed (0: 20).
	MaxUnknown int
	// NameWidth truncates kernel names (0: 100 characters).
	NameWidth int
}

// WriteText renders b as a human-readable report.
func WriteText(w io.Writer, b *Breakdown, opt TextOptions) error {
	if opt.MaxUnknown <= 0 {
		opt.MaxUnknown = 20
	}
	if opt.NameWidth <= 0 {
		opt.NameWidth = 100
	}
	ew := errwriter.New(w)
	ew.Printf("trace %s\n", b.Source)
	if d := b.Window.DurationNS(); d > 0 {
		ew.Printf("window %.3f s .. %.3f s (%.3f s)", sec(b.Window.StartNS), sec(b.Window.EndNS), sec(d))
		if b.Window.NVTX != "" {
			ew.Printf(", NVTX range %q", b.Window.NVTX)
		}
		ew.Printf("\n")
	}
	for _, warn := range b.Warnings {
		ew.Printf("warning: %s\n", warn)
	}
	ew.Printf("\n")

	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "category\ttime\tshare\tkernels\t")
	for _, g := range b.GPUs {
		fmt.Fprintf(tw, "GPU %d\t", g.Device)
	}
	fmt.Fprintln(tw)
	for i, c := range b.Categories {
		fmt.Fprintf(tw, "%s\t%s\t%.1f%%\t%d\t", c.Name, FormatNS(c.TimeNS), 100*c.Share, c.Count)
		for _, g := range b.GPUs {
			fmt.Fprintf(tw, "%.1f%%\t", 100*g.Categories[i].Share)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "total\t%s\t100.0%%\t\t", FormatNS(b.KernelTimeNS))
	for range b.GPUs {
		fmt.Fprint(tw, "\t")
	}
	fmt.Fprintln(tw)
	if len(b.GPUs) > 0 {
		fmt.Fprint(tw, "idle\t\t\t\t")
		for _, g := range b.GPUs {
			fmt.Fprintf(tw, "%.1f%%\t", 100*g.IdleFraction)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if im := b.Imbalance; im != nil {
		ew.Printf("\nrank imbalance: %s\n", im.Note)
		for _, r := range im.Ranks {
			ew.Printf("  GPU %d  communication %10s  compute %10s\n", r.Device, FormatNS(r.CommunicationNS), FormatNS(r.ComputeNS))
		}
	}

	ew.Printf("\ntop kernels per category\n")
	for _, c := range b.Categories {
		if len(c.TopKernels) == 0 {
			continue
		}
		ew.Printf("  %s\n", c.Name)
		for _, k := range c.TopKernels {
			ew.Printf("    %5.1f%%  %10s  %9d×  %s\n", 100*k.Share, FormatNS(k.TimeNS), k.Count, truncate(k.Name, opt.NameWidth))
		}
	}
	if len(b.UnknownKernels) > 0 {
		ew.Printf("\nunknown kernels (category other; add a rule with --rules)\n")
		for i, k := range b.UnknownKernels {
			if i == opt.MaxUnknown {
				ew.Printf("    … %d more (see --json)\n", len(b.UnknownKernels)-i)
				break
			}
			ew.Printf("    %5.1f%%  %10s  %9d×  %s\n", 100*k.Share, FormatNS(k.TimeNS), k.Count, truncate(k.Name, opt.NameWidth))
		}
	}
	return ew.Err
}

// WriteComparisonText renders comparisons of one measured breakdown against
// named predictions (for example "W4A16" and "FP4") as one table.
func WriteComparisonText(w io.Writer, names []string, cmps []*Comparison) error {
	if len(names) != len(cmps) || len(cmps) == 0 {
		return fmt.Errorf("write comparison: %d names for %d comparisons", len(names), len(cmps))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "term\tmeasured\t")
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t", n)
	}
	fmt.Fprintln(tw)
	for i, r := range cmps[0].Rows {
		fmt.Fprintf(tw, "%s\t%.1f%%\t", r.Key, 100*r.MeasuredShare)
		for _, c := range cmps {
			if i < len(c.Rows) && c.Rows[i].Key == r.Key {
				fmt.Fprintf(tw, "%.1f%%\t", 100*c.Rows[i].PredictedShare)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if u := cmps[0].UncoveredShare; u > 0 {
		_, err := fmt.Fprintf(w, "(%.1f%% of measured time is in categories no term covers and is left out)\n", 100*u)
		return err
	}
	return nil
}

// FormatNS renders a nanosecond duration with a unit that keeps three or four
// significant digits: 950 ns, 12.3 µs, 4.56 ms, 1.23 s.
func FormatNS(ns int64) string {
	v := float64(ns)
	switch {
	case ns < 1_000:
		return fmt.Sprintf("%d ns", ns)
	case ns < 1_000_000:
		return fmt.Sprintf("%.1f µs", v/1e3)
	case ns < 1_000_000_000:
		return fmt.Sprintf("%.2f ms", v/1e6)
	}
	return fmt.Sprintf("%.3f s", v/1e9)
}

func sec(ns int64) float64 { return float64(ns) / 1e9 }

func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
