package trace

import (
	"fmt"
	"io"
	"text/template"
	"time"
)

// RecipeOptions fill in the capture recipe.
type RecipeOptions struct {
	// Image is the vLLM container image (default DefaultRecipeImage).
	Image string
	// Model is the served model (default DefaultRecipeModel).
	Model string
	// TensorParallel is the --tensor-parallel-size (default 4).
	TensorParallel int
	// Duration is how long to record at steady state (default 20 s).
	Duration time.Duration
	// Delay is how long the one-shot capture waits before recording
	// (default 10 min): long enough for weights, CUDA graphs and the load
	// ramp to settle.
	Delay time.Duration
}

// Recipe defaults: the reference deployment of DESIGN.md.
const (
	DefaultRecipeImage = "vllm/vllm-openai:latest"
	DefaultRecipeModel = "openai/gpt-oss-120b"
)

var recipeTmpl = template.Must(template.New("recipe").Parse(`# Capturing a steady-state kernel trace of vLLM under load (Nsight Systems)
#
# Why these flags:
#   --trace=cuda,nvtx,osrt            kernels and copies, NVTX ranges, OS runtime calls
#   --cuda-graph-trace=node           vLLM decodes inside CUDA graphs; without this a whole
#                                     graph is one opaque box and its kernels are invisible
#   --trace-fork-before-exec=true     follow vLLM's worker processes (one per GPU)
#   VLLM_WORKER_MULTIPROC_METHOD=spawn  workers start as fresh processes that nsys can
#                                     trace (CUDA cannot be used in forked children anyway)
#   --sample=none --cpuctxsw=none     no CPU sampling: lower overhead, smaller report
# Record a short window ({{.Seconds}} s) at steady state, never the start-up or the ramp:
# at hundreds of users a GPU runs tens of thousands of kernels per second.
# The image must contain nsys: mount an Nsight Systems install at /opt/nsys (below) or
# build a derived image with it.

# 1. Start vLLM under nsys with collection deferred until "nsys start".
docker run -d --name vllm-nsys --gpus all --ipc=host -p 8000:8000 \
  -v /opt/nvidia/nsight-systems:/opt/nsys:ro -v "$PWD/nsys:/nsys" \
  -e VLLM_WORKER_MULTIPROC_METHOD=spawn \
  --entrypoint /opt/nsys/bin/nsys {{.Image}} \
  launch --session-new=spoc --trace=cuda,nvtx,osrt --cuda-graph-trace=node \
    --trace-fork-before-exec=true --sample=none --cpuctxsw=none \
  vllm serve {{.Model}} --tensor-parallel-size {{.TP}}

# 2. Put the server under the load you want to explain (in another shell), e.g.
spoc run --target http://localhost:8000 --users 300 --duration 20m

# 3. Once TTFT/ITL and KV-cache usage are flat (steady state), record a window.
docker exec vllm-nsys /opt/nsys/bin/nsys start --session=spoc \
  --output=/nsys/steady --force-overwrite=true
sleep {{.Seconds}}
docker exec vllm-nsys /opt/nsys/bin/nsys stop --session=spoc

# One-shot alternative to steps 1 and 3: a delayed, fixed-length capture.
#   ... --entrypoint /opt/nsys/bin/nsys {{.Image}} profile --delay={{.DelaySeconds}} \
#       --duration={{.Seconds}} --trace=cuda,nvtx,osrt --cuda-graph-trace=node \
#       --trace-fork-before-exec=true --sample=none --output=/nsys/steady \
#       vllm serve {{.Model}} --tensor-parallel-size {{.TP}}
# (start the load before the delay ends).

# 4. Export to SQLite and analyse.
nsys export --type sqlite --output nsys/steady.sqlite nsys/steady.nsys-rep
spoc trace analyze nsys/steady.sqlite
# or, from a summary only (no per-GPU split or idle time):
nsys stats --report cuda_gpu_kern_sum --format csv nsys/steady.nsys-rep > kern_sum.csv
spoc trace analyze kern_sum.csv
`))

// WriteRecipe prints the capture recipe for containerised vLLM under load.
func WriteRecipe(w io.Writer, opt RecipeOptions) error {
	if opt.Image == "" {
		opt.Image = DefaultRecipeImage
	}
	if opt.Model == "" {
		opt.Model = DefaultRecipeModel
	}
	if opt.TensorParallel <= 0 {
		opt.TensorParallel = 4
	}
	if opt.Duration <= 0 {
		opt.Duration = 20 * time.Second
	}
	if opt.Delay <= 0 {
		opt.Delay = 10 * time.Minute
	}
	if opt.Duration < time.Second || opt.Delay < time.Second {
		return fmt.Errorf("capture recipe: duration %s and delay %s must be at least 1s", opt.Duration, opt.Delay)
	}
	return recipeTmpl.Execute(w, map[string]any{
		"Image": opt.Image, "Model": opt.Model, "TP": opt.TensorParallel,
		"Seconds": int(opt.Duration.Seconds()), "DelaySeconds": int(opt.Delay.Seconds()),
	})
}
