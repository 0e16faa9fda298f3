package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/config"
)

func init() { register(newConfigCmd) }

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the default configuration or validate a configuration file",
	}
	var asJSON bool
	def := &cobra.Command{
		Use:   "default",
		Short: "Print the fully defaulted configuration with a comment on every field",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), config.Default())
			}
			return config.WriteYAML(cmd.OutOrStdout(), config.Default())
		},
	}
	def.Flags().BoolVar(&asJSON, "json", false, "print as JSON (without comments)")
	var file string
	var checkJSON bool
	check := &cobra.Command{
		Use:   "check [-c] FILE",
		Short: "Validate a configuration file; exit 2 on error",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// "spoc config check spoc.yaml" is the natural spelling too.
			if len(args) == 1 {
				if file != "" && file != args[0] {
					return usageErrorf("config check: -c %s and %s name two files; give one", file, args[0])
				}
				file = args[0]
			}
			if file == "" {
				return usageErrorf("config check needs -c FILE")
			}
			return checkConfig(cmd.OutOrStdout(), file, checkJSON)
		},
	}
	check.Flags().StringVarP(&file, "config", "c", "", "configuration file")
	check.Flags().BoolVar(&checkJSON, "json", false, "print the verdict as JSON")
	cmd.AddCommand(def, check)
	return cmd
}

// checkConfig validates file and prints the verdict.
func checkConfig(w io.Writer, file string, asJSON bool) error {
	_, err := config.LoadFile(file)
	if asJSON {
		res := map[string]any{"file": file, "valid": err == nil}
		if err != nil {
			res["error"] = err.Error()
			res["code"] = ExitUsage // the shape of every --json error (root.go)
		}
		if werr := writeJSON(w, res); werr != nil {
			return werr
		}
		if err != nil {
			return &ExitError{Code: ExitUsage}
		}
		return nil
	}
	if err != nil {
		return usageError(err)
	}
	fmt.Fprintf(w, "%s: ok\n", file)
	return nil
}

// loadConfig loads -c FILE (or the defaults) with settings over it and maps
// errors to exit code 2.
func loadConfig(path string, settings ...config.Setting) (*config.Config, error) {
	cfg, err := config.LoadFile(path, settings...)
	if err != nil {
		return nil, usageError(err)
	}
	return cfg, nil
}
