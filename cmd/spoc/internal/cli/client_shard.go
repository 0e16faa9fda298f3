package cli

import (
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/loadgen"
)

func init() { register(newClientShardCmd) }

// newClientShardCmd is the hidden verb a split run (run.clients > 1)
// re-executes spoc with: one client shard, spoken to over stdin and stdout
// by its parent (loadgen.RunShard). It is no user's verb.
func newClientShardCmd() *cobra.Command {
	return &cobra.Command{
		Use:    loadgen.ShardVerb,
		Short:  "One client shard of a split run (started by spoc itself)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			return loadgen.RunShard(cmd.Context(), os.Stdin, cmd.OutOrStdout(), logger)
		},
	}
}
