package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spoc-project/spoc/search"
)

func studyDirectionsText(d []search.Direction) string {
	parts := make([]string, len(d))
	for i, x := range d {
		parts[i] = x.String()
	}
	return strings.Join(parts, ",")
}

func studyStatesText(m map[search.TrialState]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[search.TrialState(k)])
	}
	return strings.Join(parts, " ")
}

func printStudy(w io.Writer, v studyView) error {
	fmt.Fprintf(w, "study %s (sampler %s, seed %d, created %s)\n", v.Name, v.Sampler, v.Seed, v.Created.Format(time.RFC3339))
	fmt.Fprintf(w, "objectives: %s\n", studyDirectionsText(v.Directions))
	fmt.Fprintln(w, "parameters:")
	for _, p := range v.Space.Params {
		switch p.Kind {
		case search.KindCategorical:
			fmt.Fprintf(w, "  %s: one of %v\n", p.Name, p.Choices)
		default:
			extra := ""
			if p.Log {
				extra = ", log"
			}
			if p.Step > 0 && !(p.Kind == search.KindInt && p.Step == 1) {
				extra += fmt.Sprintf(", step %v", p.Step)
			}
			fmt.Fprintf(w, "  %s: %s in [%v, %v]%s\n", p.Name, p.Kind, p.Low, p.High, extra)
		}
	}
	for _, r := range v.Space.Rules {
		fmt.Fprintf(w, "  rule: %s\n", r.Name)
	}
	fmt.Fprintf(w, "trials: %s\n", studyStatesText(v.States))
	names := make([]string, len(v.Space.Params))
	for i, p := range v.Space.Params {
		names[i] = p.Name
	}
	table := func(title string, ts []search.Trial) error {
		return writeTrialTable(w, title, ts, len(v.Directions), names)
	}
	if err := table("Pareto front", v.Front); err != nil {
		return err
	}
	if v.Trials != nil {
		return table("all trials", v.Trials)
	}
	return nil
}

// writeTrialTable lists trials with their values and parameters.
func writeTrialTable(w io.Writer, title string, ts []search.Trial, objectives int, names []string) error {
	fmt.Fprintf(w, "\n%s (%d):\n", title, len(ts))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "NUMBER\tSTATE\tGEN")
	for i := range objectives {
		fmt.Fprintf(tw, "\tVALUE_%d", i)
	}
	for _, n := range names {
		fmt.Fprintf(tw, "\t%s", n)
	}
	fmt.Fprintln(tw)
	for _, t := range ts {
		fmt.Fprintf(tw, "%d\t%s\t%d", t.Number, t.State, t.Generation)
		for i := range objectives {
			if i < len(t.Values) {
				fmt.Fprintf(tw, "\t%.6g", t.Values[i])
			} else {
				fmt.Fprint(tw, "\t-")
			}
		}
		for _, n := range names {
			fmt.Fprintf(tw, "\t%v", t.Params[n])
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
