package calibrate

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"

	"github.com/spoc-project/spoc/perfmodel"
)

// Options configure Fit, Validate and LeaveOneOut.
type Options struct {
	// Predictor re-creates points; nil means Replay{Seed: 1}.
	Predictor Predictor
	// Model fills points that do not name one (the reference CSV does not);
	// empty means DefaultModel.
	Model string
	// Start is the fit's starting point and supplies the factors not fitted;
	// the zero value means perfmodel.UncalibratedFactors.
	Start perfmodel.Factors
	// Params names the factors to fit (perfmodel.FactorNames); nil means
	// DefaultParams.
	Params []string
	// Weights weighs each metric in the loss; nil means DefaultWeights.
	Weights map[string]float64
	// HuberDelta is where the loss on a log ratio turns from quadratic to
	// linear (default 0.05, about 5 % error).
	HuberDelta float64
	// MaxEvaluations bounds the objective evaluations of one fit (default 400).
	MaxEvaluations int
	// SimplexStep is the initial simplex edge in the free space (logit of
	// fractions, log of seconds; default 0.3, about ±30 %).
	SimplexStep float64
	// Tolerance stops a phase of the fit when it improves the loss by less
	// than this fraction (default 1e-6).
	Tolerance float64
	// Prior weighs a ridge penalty, mean squared distance of the fitted
	// factors from Start in the free space, added to the loss (default 1e-5;
	// negative disables it).
	Prior float64
	// Parallelism is how many points are replayed at once (default GOMAXPROCS).
	Parallelism int
}

// DefaultModel is the model of the reference measurements.
const DefaultModel = "openai/gpt-oss-120b"

// DefaultParams are the factors the reference data identifies: MoE
// efficiency (weight streaming at small batch, unpacked BF16 math in
// prefill), attention efficiency (long contexts, long prompts), the NVLink
// fraction and all-reduce latency (TP dependence), the CUDA-graph kernel gap
// (the TP-independent floor of TPOT), and the API server's time to first
// token. Dense GEMM fractions are collinear with the MoE and attention ones
// on single-model data; the CPU step and per-sequence overheads are hidden by
// async scheduling in every reference run, and eager kernels never run
// there: they stay at their starting values.
var DefaultParams = []string{"moe_compute", "moe_memory", "moe_fp8_compute", "moe_fp8_memory", "attention_compute", "attention_memory", "network",
	"graph_kernel_seconds", "all_reduce_latency_seconds", "request_overhead_seconds", "prompt_token_overhead_seconds"}

// DefaultWeights weigh median TTFT at half the others: the reference runs
// repeat it only within 13 %, against 0.5 % for throughput and TPOT.
var DefaultWeights = map[string]float64{MetricThroughput: 1, MetricTPOT: 1, MetricTTFT: 0.5}

func (o Options) withDefaults() Options {
	if o.Predictor == nil {
		o.Predictor = Replay{Seed: 1}
	}
	if o.Model == "" {
		o.Model = DefaultModel
	}
	if o.Start == (perfmodel.Factors{}) {
		o.Start = perfmodel.UncalibratedFactors
	}
	if o.Params == nil {
		o.Params = DefaultParams
	}
	if o.Weights == nil {
		o.Weights = DefaultWeights
	}
	if o.HuberDelta == 0 {
		o.HuberDelta = 0.05
	}
	if o.MaxEvaluations == 0 {
		o.MaxEvaluations = 400
	}
	if o.SimplexStep == 0 {
		o.SimplexStep = 0.3
	}
	if o.Tolerance == 0 {
		o.Tolerance = 1e-6
	}
	if o.Prior == 0 {
		o.Prior = 1e-5
	}
	if o.Prior < 0 {
		o.Prior = 0
	}
	if o.Parallelism <= 0 {
		o.Parallelism = runtime.GOMAXPROCS(0)
	}
	return o
}

// Row is one point's prediction.
type Row struct {
	Point     Point   `json:"point"`
	Predicted Metrics `json:"predicted"`
	// ErrorPercent is (predicted − measured) / measured × 100 per metric.
	ErrorPercent map[string]float64 `json:"error_percent"`
}

// Validation compares predictions with measurements.
type Validation struct {
	Rows []Row `json:"rows"`
	// MAPE is the mean absolute percentage error per metric.
	MAPE map[string]float64 `json:"mape_percent"`
	// Loss is the fit's robust objective at these predictions.
	Loss float64 `json:"loss"`
}

// Validate predicts every point under the given factors and reports the
// error per point and the MAPE per metric.
func Validate(ctx context.Context, points []Point, f perfmodel.Factors, opts Options) (Validation, error) {
	opts = opts.withDefaults()
	pts, err := prepare(points, opts.Model)
	if err != nil {
		return Validation{}, err
	}
	if err := f.Validate(); err != nil {
		return Validation{}, fmt.Errorf("validate: %w", err)
	}
	ev := newEvaluator(pts, opts)
	preds, err := ev.predict(ctx, f)
	if err != nil {
		return Validation{}, err
	}
	return ev.validation(preds), nil
}

// prepare copies the points, fills in the model and validates them.
func prepare(points []Point, model string) ([]Point, error) {
	if len(points) == 0 {
		return nil, fmt.Errorf("calibrate: no measurement points")
	}
	pts := make([]Point, len(points))
	for i, p := range points {
		if p.Model == "" {
			p.Model = model
		}
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
		pts[i] = p
	}
	return pts, nil
}

// evaluator replays each distinct configuration once per factor set.
type evaluator struct {
	points []Point
	unique []int // index into points of each distinct configuration
	of     []int // points[i] is predicted by unique[of[i]]
	order  []int // unique configurations, longest replay first
	opts   Options
}

func newEvaluator(points []Point, opts Options) *evaluator {
	ev := &evaluator{points: points, of: make([]int, len(points)), opts: opts}
	seen := map[string]int{}
	for i := range points {
		k := points[i].Key()
		u, ok := seen[k]
		if !ok {
			u = len(ev.unique)
			seen[k] = u
			ev.unique = append(ev.unique, i)
		}
		ev.of[i] = u
	}
	// Longest replays (most engine steps) first, so the workers finish together.
	steps := func(u int) int {
		p := &points[ev.unique[u]]
		return p.NumPrompts * p.OutputLen / p.Concurrency
	}
	for u := range ev.unique {
		ev.order = append(ev.order, u)
	}
	sort.SliceStable(ev.order, func(a, b int) bool { return steps(ev.order[a]) > steps(ev.order[b]) })
	return ev
}

// predict replays the distinct configurations in parallel; the result does
// not depend on the parallelism.
func (ev *evaluator) predict(ctx context.Context, f perfmodel.Factors) ([]Metrics, error) {
	preds := make([]Metrics, len(ev.unique))
	errs := make([]error, len(ev.unique))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(ev.opts.Parallelism, len(ev.unique)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range next {
				preds[u], errs[u] = ev.opts.Predictor.Predict(ctx, ev.points[ev.unique[u]], f)
			}
		}()
	}
	for _, u := range ev.order {
		next <- u
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("predict: %w", err)
		}
	}
	out := make([]Metrics, len(ev.points))
	for i := range ev.points {
		out[i] = preds[ev.of[i]]
	}
	return out, nil
}

// residuals are signed square roots of each weighted Huber term, so that
// their sum of squares is twice the weighted sum in loss: least-squares
// refinement minimises the same objective.
func (ev *evaluator) residuals(preds []Metrics, out []float64) []float64 {
	out = out[:0]
	d := ev.opts.HuberDelta
	for i, p := range ev.points {
		for _, name := range MetricNames {
			w := ev.opts.Weights[name]
			if w == 0 {
				continue
			}
			pred := preds[i].Get(name)
			if !(pred > 0) {
				out = append(out, math.NaN())
				continue
			}
			l := math.Log(pred / p.Measured.Get(name))
			out = append(out, math.Copysign(math.Sqrt(2*w*huber(l, d)), l))
		}
	}
	return out
}

// huber is the Huber function of x with threshold d: quadratic within d,
// linear beyond.
func huber(x, d float64) float64 {
	r := math.Abs(x)
	if r <= d {
		return 0.5 * r * r
	}
	return d * (r - 0.5*d)
}

// weightSum is the loss's normaliser: the sum of metric weights over points.
func (ev *evaluator) weightSum() float64 {
	var w float64
	for _, name := range MetricNames {
		w += ev.opts.Weights[name]
	}
	return w * float64(len(ev.points))
}

// loss is the weighted mean Huber loss of log(predicted/measured): half the
// residuals' sum of squares over the weights; +Inf when a prediction is not
// positive.
func (ev *evaluator) loss(preds []Metrics) float64 {
	var sum float64
	for _, r := range ev.residuals(preds, nil) {
		if math.IsNaN(r) {
			return math.Inf(1)
		}
		sum += r * r
	}
	return sum / 2 / ev.weightSum()
}

func (ev *evaluator) validation(preds []Metrics) Validation {
	v := Validation{MAPE: map[string]float64{}, Loss: ev.loss(preds)}
	for i, p := range ev.points {
		row := Row{Point: p, Predicted: preds[i], ErrorPercent: map[string]float64{}}
		for _, name := range MetricNames {
			meas := p.Measured.Get(name)
			e := (preds[i].Get(name) - meas) / meas * 100
			row.ErrorPercent[name] = e
			v.MAPE[name] += math.Abs(e) / float64(len(ev.points))
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}
