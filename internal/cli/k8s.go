package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/spoc-project/spoc/engine"
)

func init() { register(newK8sCmd) }

func newK8sCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Kubernetes housekeeping for the kubernetes engine",
	}
	cmd.AddCommand(newK8sGCCmd())
	return cmd
}

func newK8sGCCmd() *cobra.Command {
	var (
		file, studyName, namespace string
		all, dryRun, asJSON        bool
	)
	cmd := &cobra.Command{
		Use:   "gc [-c spoc.yaml] [--study NAME | --all] [--namespace NS] [--dry-run]",
		Short: "Delete the Deployments, Services, Jobs and pods a crashed or killed spoc left behind",
		Long: `Every object spoc creates carries app.kubernetes.io/managed-by=spoc and
spoc.dev/study=<study>. gc lists those of one study (search.study of the
configuration unless --study, or every study with --all) in
engine.kubernetes.namespace and deletes them through kubectl, waiting until
their pods are gone so that their GPUs are free.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(file)
			if err != nil {
				return err
			}
			k := cfg.Engine.Kubernetes
			if namespace == "" {
				namespace = k.Namespace
			}
			if all && cmd.Flags().Changed("study") {
				return usageErrorf("--study and --all exclude each other")
			}
			if !all && studyName == "" {
				studyName = cfg.Search.Study
			}
			if all {
				studyName = ""
			}
			gc := engine.KubeGC{Runner: engine.ExecRunner{Binary: k.Kubectl}, Kubeconfig: k.Kubeconfig, Context: k.Context, Namespace: namespace}
			var objs []string
			if dryRun {
				objs, err = gc.Leftovers(cmd.Context(), studyName)
			} else {
				objs, err = gc.Delete(cmd.Context(), studyName)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(out).Encode(map[string]any{
					"namespace": namespace, "selector": gc.Selector(studyName), "dry_run": dryRun, "objects": nonNil(objs),
				})
			}
			verb := "deleted"
			if dryRun {
				verb = "would delete"
			}
			for _, o := range objs {
				fmt.Fprintf(out, "%s %s\n", verb, o)
			}
			fmt.Fprintf(out, "%d object(s) %s in namespace %s (selector %s)\n", len(objs), verb, namespace, gc.Selector(studyName))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "config", "c", "", "configuration file (default: the reference case)")
	f.StringVar(&studyName, "study", "", "study whose objects to delete (default search.study)")
	f.BoolVar(&all, "all", false, "every object spoc created in the namespace, whatever the study")
	f.StringVar(&namespace, "namespace", "", "namespace (default engine.kubernetes.namespace)")
	f.BoolVar(&dryRun, "dry-run", false, "list what would be deleted, delete nothing")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
