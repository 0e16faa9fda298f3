package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/internal/atomicfile"
	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/report"
)

func init() { register(newReportCmd) }

func newReportCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "report DIR [--out FILE]",
		Short: "Render the self-contained HTML report (and summary.md) of a plan's output folder",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			path := filepath.Join(dir, "summary.json")
			f, err := os.Open(path)
			if err != nil {
				return usageErrorf("%s is not a plan folder: %v", dir, err)
			}
			var d plan.Summary
			dec := json.NewDecoder(f)
			err = dec.Decode(&d)
			f.Close()
			if err != nil {
				return usageErrorf("read %s: %v", path, err)
			}
			if out == "" {
				// summary.json is the input here: render, never rewrite it.
				if err := writeReport(dir, &d, []string{"html", "md"}); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), filepath.Join(dir, "report.html"))
				return nil
			}
			if err := writeAtomic(out, func(w io.Writer) error { return report.HTML(w, &d) }); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the HTML report here instead of DIR/report.html")
	return cmd
}

// writeReport writes a plan's output files for s into dir, which must
// exist: the ones formats names (report.Files). Every file is rendered
// before any is written, and each replaces its predecessor through a
// temporary file renamed into place: a failed render leaves the previous
// files untouched, and a reader never sees half a file.
func writeReport(dir string, s *plan.Summary, formats []string) error {
	files, err := report.Files(formats)
	if err != nil {
		return err
	}
	rendered := make([][]byte, len(files))
	for i, f := range files {
		var b bytes.Buffer
		if err := f.Render(&b, s); err != nil {
			return err
		}
		rendered[i] = b.Bytes()
	}
	for i, f := range files {
		if err := writeAtomic(filepath.Join(dir, f.Name), func(w io.Writer) error {
			_, err := w.Write(rendered[i])
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// writeAtomic writes path through a temporary file in the same folder.
func writeAtomic(path string, fn func(io.Writer) error) error { return atomicfile.Write(path, fn) }
