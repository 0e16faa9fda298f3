package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spoc-project/spoc/config"
)

// Every verb's table names flags the verb defines and keys the
// configuration has: a wrong name would panic (a flag) or fail every run
// (a key) only when the flag is given.
func TestEveryFlagTableMatchesItsVerbAndTheConfiguration(t *testing.T) {
	objective := func() *cobra.Command { return newSearchObjectiveCmd() }
	simRun := newSimRunCmd()
	simServe := newSimServeCmd()
	engineKeys := addSimEngineFlags(pflag.NewFlagSet("engine", pflag.ContinueOnError))
	for _, tc := range []struct {
		verb  string
		cmd   *cobra.Command
		table keyFlags
	}{
		{"run", newRunCmd(), runKeys},
		{"sweep", newSweepCmd(), sweepKeys},
		{"tune", newTuneCmd(), tuneKeys},
		{"search objective", objective(), objectiveKeys},
		{"k8s gc", newK8sGCCmd(), k8sGCKeys},
		{"sim run", simRun, simRunKeys},
		{"sim run", simRun, engineKeys},
		{"sim serve", simServe, simServeKeys},
		{"sim serve", simServe, engineKeys},
	} {
		for _, b := range tc.table {
			if tc.cmd.Flags().Lookup(b.flag) == nil {
				t.Errorf("%s: the table binds --%s, which the verb does not define", tc.verb, b.flag)
			}
			// null decodes into any field: only a key that does not exist fails
			err := config.Default().Apply(config.Setting{Key: b.key, Value: "null", Source: "--" + b.flag})
			if err != nil && strings.Contains(err.Error(), "unknown key") {
				t.Errorf("%s --%s: %v", tc.verb, b.flag, err)
			}
		}
	}
}
