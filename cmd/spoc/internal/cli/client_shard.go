package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/loadgen"
)

func init() { register(newClientShardCmd) }

// newClientShardCmd is the hidden verb a split run (run.clients > 1)
// re-executes spoc with: one client shard, spoken to over stdin and stdout
// by its parent (loadgen.RunShard). It is no user's verb. With
// --kubernetes-configmap it is a pod of a Kubernetes split run: its job and
// start instant come from that ConfigMap, its shard is the pod's
// completion index, and its records go to stdout (the pod's log).
func newClientShardCmd() *cobra.Command {
	var configMap, saDir string
	cmd := &cobra.Command{
		Use:    loadgen.ShardVerb,
		Short:  "One client shard of a split run (started by spoc itself)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			if configMap == "" {
				return loadgen.RunShard(cmd.Context(), os.Stdin, cmd.OutOrStdout(), logger)
			}
			return podShard(cmd.Context(), configMap, saDir, cmd.OutOrStdout(), logger)
		},
	}
	cmd.Flags().StringVar(&configMap, engine.ConfigMapFlag[2:], "", "the split run's ConfigMap (a pod of a Kubernetes split run)")
	cmd.Flags().StringVar(&saDir, engine.ServiceAccountDirFlag[2:], engine.DefaultServiceAccountDir, "the pod's service-account folder (token, ca.crt, namespace)")
	return cmd
}

// podShard runs one shard in a pod of an Indexed Job: its shard is the
// pod's completion index, its run the ConfigMap's, its API key the pod's
// Secret's.
func podShard(ctx context.Context, name, saDir string, out io.Writer, logger *slog.Logger) error {
	index, err := strconv.Atoi(os.Getenv("JOB_COMPLETION_INDEX"))
	if err != nil {
		return fmt.Errorf("client shard: JOB_COMPLETION_INDEX %q: not a pod of an Indexed Job?", os.Getenv("JOB_COMPLETION_INDEX"))
	}
	cm, err := engine.OpenClientConfigMap(saDir, os.Getenv("POD_NAMESPACE"), name)
	if err != nil {
		return err
	}
	return loadgen.RunPodShard(ctx, cm, index, os.Getenv(engine.APIKeyEnvVar), out, logger)
}
