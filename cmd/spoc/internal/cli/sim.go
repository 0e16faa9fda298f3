package cli

import (
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spoc-project/spoc/perfmodel/calibrate"
	"github.com/spoc-project/spoc/vllm"
)

func init() { register(newSimCmd) }

func newSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "The built-in vLLM-like simulator: in virtual time, or as an HTTP server",
	}
	cmd.AddCommand(newSimRunCmd(), newSimServeCmd(), newSimCalibrateCmd(), newSimValidateCmd())
	return cmd
}

// addSimEngineFlags defines the deployment flags shared by sim run and sim
// serve (vLLM's names) and returns the configuration keys they set:
// engine.model ..., and each vLLM flag under engine.params, where it
// replaces the configured parameter of the same flag whatever its
// spelling (max_num_seqs in YAML, --max-num-seqs here).
func addSimEngineFlags(fs *pflag.FlagSet) keyFlags {
	fs.String("model", "", "model: catalog name or Hugging Face config.json (default from config)")
	fs.String("gpu", "", "GPU type (default from config)")
	fs.Int("gpus", 0, "number of GPUs (default from config)")
	fs.Int("tensor-parallel-size", 0, "tensor-parallel size (default from config)")
	fs.String("weight-format", "", "expert weight format: w4a16, fp4, bf16, fp8")
	fs.Int("max-model-len", 0, "context limit in tokens (default from config)")
	keys := keyFlags{
		{flag: "model", key: "engine.model"},
		{flag: "gpu", key: "engine.gpu"},
		{flag: "gpus", key: "engine.gpus"},
		{flag: "tensor-parallel-size", key: "engine.tensor_parallel_size"},
		{flag: "weight-format", key: "engine.weight_format"},
		{flag: "max-model-len", key: "engine.max_model_len"},
	}
	param := func(n string) { keys = append(keys, keyFlag{flag: n, key: "engine.params." + n}) }
	for _, n := range []string{"max-num-batched-tokens", "max-num-seqs", "long-prefill-token-threshold", "block-size"} {
		fs.Int(n, 0, "vLLM --"+n)
		param(n)
	}
	fs.Float64("gpu-memory-utilization", 0, "vLLM --gpu-memory-utilization")
	param("gpu-memory-utilization")
	for _, n := range []string{"enable-prefix-caching", "enable-chunked-prefill", "async-scheduling", "enforce-eager"} {
		fs.Bool(n, false, "vLLM --"+n)
		fs.Bool(vllm.NegationPrefix+n, false, "vLLM --no-"+n)
		param(n)
		param(vllm.NegationPrefix + n)
	}
	fs.String("kv-cache-dtype", "", "vLLM --kv-cache-dtype")
	param("kv-cache-dtype")
	return keys
}

// readSimMeasurements reads benchmark measurements for calibrate/validate.
func readSimMeasurements(path string) ([]calibrate.Point, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageError(err)
	}
	defer f.Close()
	pts, err := calibrate.ReadMeasurements(f, path)
	if err != nil {
		return nil, usageError(err)
	}
	return pts, nil
}

func printSimValidation(w io.Writer, v calibrate.Validation) {
	names := make([]string, 0, len(v.MAPE))
	for n := range v.MAPE {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "%d points; mean absolute percentage error:", len(v.Rows))
	for _, n := range names {
		fmt.Fprintf(w, " %s %.1f%%", n, v.MAPE[n])
	}
	fmt.Fprintln(w)
}
