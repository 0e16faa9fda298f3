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

// k8sGCKeys are the flags of spoc k8s gc that set configuration keys.
var k8sGCKeys = keyFlags{
	{flag: "study", key: "search.study"},
	{flag: "namespace", key: "engine.kubernetes.namespace"},
}

type k8sGCFlags struct {
	config              string
	all, dryRun, asJSON bool
}

func newK8sGCCmd() *cobra.Command {
	var f k8sGCFlags
	cmd := &cobra.Command{
		Use:   "gc [-c spoc.yaml] [--study NAME | --all] [--namespace NS] [--dry-run]",
		Short: "Delete the Deployments, Services, Jobs and pods a crashed or killed spoc left behind",
		Long: `Every object spoc creates carries app.kubernetes.io/managed-by=spoc and
spoc.dev/study=<study>. gc lists those of one study (search.study of the
configuration unless --study, or every study with --all) in
engine.kubernetes.namespace and deletes them through kubectl, waiting until
their pods are gone so that their GPUs are free.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runK8sGC(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "configuration file (default: the reference case)")
	fl.String("study", "", "study whose objects to delete (default search.study)")
	fl.BoolVar(&f.all, "all", false, "every object spoc created in the namespace, whatever the study")
	fl.String("namespace", "", "namespace (default engine.kubernetes.namespace)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "list what would be deleted, delete nothing")
	fl.BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	return cmd
}

func runK8sGC(cmd *cobra.Command, f *k8sGCFlags) error {
	if f.all && cmd.Flags().Changed("study") {
		return usageErrorf("--study and --all exclude each other")
	}
	cfg, err := loadConfigWith(f.config, cmd.Flags(), k8sGCKeys)
	if err != nil {
		return err
	}
	k := cfg.Engine.Kubernetes
	studyName := cfg.Search.Study
	if f.all {
		studyName = ""
	}
	gc := engine.KubeGC{Runner: engine.ExecRunner{Binary: k.Kubectl}, Kubeconfig: k.Kubeconfig, Context: k.Context, Namespace: k.Namespace}
	var objs []string
	if f.dryRun {
		objs, err = gc.Leftovers(cmd.Context(), studyName)
	} else {
		objs, err = gc.Delete(cmd.Context(), studyName)
	}
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.asJSON {
		return json.NewEncoder(out).Encode(map[string]any{
			"namespace": k.Namespace, "selector": gc.Selector(studyName), "dry_run": f.dryRun, "objects": nonNil(objs),
		})
	}
	verb := "deleted"
	if f.dryRun {
		verb = "would delete"
	}
	for _, o := range objs {
		fmt.Fprintf(out, "%s %s\n", verb, o)
	}
	fmt.Fprintf(out, "%d object(s) %s in namespace %s (selector %s)\n", len(objs), verb, k.Namespace, gc.Selector(studyName))
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
