package tpe

import (
	"math"
	"math/rand/v2"

	"github.com/spoc-project/spoc/search"
)

// Bandwidth of the trial kernels (Optuna's multivariate rule): a fraction
// sigma0 of the parameter's range, shrinking as n^(-1/(d+4)) with n trials
// in d dimensions (Scott's rule), never below range/min(100, kernels).
const sigma0 = 0.2

// parzen is a joint Parzen density over a space: one kernel per observed
// point plus a broad prior kernel, each the product over parameters of a
// truncated Gaussian (numbers, internal coordinates) or a categorical
// distribution.
type parzen struct {
	space search.Space
	dims  []dim
	// logW are the kernels' log mixture weights; the prior kernel is last.
	logW []float64
	// cum are the cumulative weights for drawing a kernel.
	cum []float64
	// scratch holds per-kernel log densities while one point is scored.
	scratch []float64
}

type dim struct {
	categorical bool
	// Numbers: the truncation interval in internal coordinates (widened by
	// half a cell for discrete parameters), and each kernel's centre,
	// width and log truncation mass.
	lo, hi   float64
	discrete bool
	mu, sd   []float64
	logZ     []float64
	// Categoricals: each kernel's log probability of each choice.
	logP [][]float64
}

func newParzen(space search.Space, points [][]float64, priorWeight float64) *parzen {
	n := len(points)
	k := n + 1
	pz := &parzen{space: space, dims: make([]dim, len(space.Params)), logW: make([]float64, k), cum: make([]float64, k), scratch: make([]float64, k)}
	total := float64(n) + priorWeight
	acc := 0.0
	for i := range k {
		w := 1.0
		if i == n {
			w = priorWeight
		}
		pz.logW[i] = math.Log(w / total)
		acc += w / total
		pz.cum[i] = acc
	}
	d := float64(len(space.Params))
	for j, sp := range space.Params {
		dm := &pz.dims[j]
		if sp.Kind == search.KindCategorical {
			dm.categorical = true
			c := len(sp.Choices)
			dm.logP = make([][]float64, k)
			for i := range k {
				row := make([]float64, c)
				for ch := range row {
					row[ch] = priorWeight / float64(k)
				}
				if i < n {
					row[int(points[i][j])]++
				}
				sum := 0.0
				for _, v := range row {
					sum += v
				}
				for ch := range row {
					row[ch] = math.Log(row[ch] / sum)
				}
				dm.logP[i] = row
			}
			continue
		}
		dm.lo, dm.hi = sp.Bounds()
		if sp.Step > 0 && !sp.Log {
			dm.discrete = true
			dm.lo -= sp.Step / 2
			dm.hi += sp.Step / 2
		} else if sp.Log && sp.Kind == search.KindInt {
			dm.discrete = true // Bounds already widened by half an integer
		}
		span := dm.hi - dm.lo
		if span <= 0 {
			span = 1
		}
		sigma := sigma0 * math.Pow(float64(max(n, 1)), -1/(d+4)) * span
		minSigma := span / math.Min(100, float64(1+k))
		dm.mu = make([]float64, k)
		dm.sd = make([]float64, k)
		dm.logZ = make([]float64, k)
		for i := range k {
			mu, sd := 0.0, sigma
			if i < n {
				mu = points[i][j]
			} else {
				mu, sd = (dm.lo+dm.hi)/2, span
			}
			sd = math.Max(minSigma, math.Min(span, sd))
			dm.mu[i], dm.sd[i] = mu, sd
			dm.logZ[i] = math.Log(math.Max(normCDF((dm.hi-mu)/sd)-normCDF((dm.lo-mu)/sd), 1e-300))
		}
	}
	return pz
}

// draw fills x with a point drawn from the mixture, in internal
// coordinates snapped to valid values (choice indexes for categoricals).
func (pz *parzen) draw(r *rand.Rand, x []float64) {
	u := r.Float64()
	kernel := len(pz.cum) - 1
	for i, c := range pz.cum {
		if u < c {
			kernel = i
			break
		}
	}
	for j, sp := range pz.space.Params {
		dm := &pz.dims[j]
		if dm.categorical {
			row := dm.logP[kernel]
			v := r.Float64()
			ch := len(row) - 1
			for c, lp := range row {
				v -= math.Exp(lp)
				if v < 0 {
					ch = c
					break
				}
			}
			x[j] = float64(ch)
			continue
		}
		v := truncNormal(r, dm.mu[kernel], dm.sd[kernel], dm.lo, dm.hi)
		x[j] = sp.ToInternal(sp.FromInternal(v))
	}
}

// logDensity is the log of the mixture's density (probability for
// discrete parameters) at x, a point draw returned.
func (pz *parzen) logDensity(x []float64) float64 {
	for i := range pz.scratch {
		pz.scratch[i] = pz.logW[i]
	}
	for j, sp := range pz.space.Params {
		dm := &pz.dims[j]
		if dm.categorical {
			ch := int(x[j])
			for i := range pz.scratch {
				pz.scratch[i] += dm.logP[i][ch]
			}
			continue
		}
		a, b := x[j], x[j]
		if dm.discrete {
			a, b = cell(sp, x[j])
		}
		for i := range pz.scratch {
			pz.scratch[i] += logKernel(a, b, dm.mu[i], dm.sd[i]) - dm.logZ[i]
		}
	}
	return logSumExp(pz.scratch)
}

// cell is the interval of internal coordinates that FromInternal maps to
// the value at x.
func cell(sp search.Param, x float64) (a, b float64) {
	if sp.Log {
		v := math.Round(math.Exp(x))
		return math.Log(math.Max(v-0.5, 0.5)), math.Log(v + 0.5)
	}
	return x - sp.Step/2, x + sp.Step/2
}

// logKernel is the log of a Gaussian's mass on [a, b], or of its density
// at a when a == b.
func logKernel(a, b, mu, sd float64) float64 {
	za, zb := (a-mu)/sd, (b-mu)/sd
	if a == b {
		return -0.5*za*za - math.Log(sd) - 0.5*math.Log(2*math.Pi)
	}
	var mass float64
	if za > 0 {
		// upper tail: difference of complements keeps precision
		mass = 0.5 * (math.Erfc(za/math.Sqrt2) - math.Erfc(zb/math.Sqrt2))
	} else {
		mass = normCDF(zb) - normCDF(za)
	}
	if mass > 1e-12 {
		return math.Log(mass)
	}
	// Far in a tail: the density at the cell's centre times its width.
	zm := (za + zb) / 2
	return -0.5*zm*zm - 0.5*math.Log(2*math.Pi) + math.Log(zb-za)
}

func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// truncNormal draws from N(mu, sd²) restricted to [lo, hi] by inverting
// the CDF.
func truncNormal(r *rand.Rand, mu, sd, lo, hi float64) float64 {
	a, b := normCDF((lo-mu)/sd), normCDF((hi-mu)/sd)
	if !(b > a) {
		return math.Max(lo, math.Min(hi, mu))
	}
	u := a + r.Float64()*(b-a)
	u = math.Max(1e-300, math.Min(1-1e-16, u))
	v := mu + sd*math.Sqrt2*math.Erfinv(2*u-1)
	return math.Max(lo, math.Min(hi, v))
}

func logSumExp(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, x)
	}
	if math.IsInf(m, -1) {
		return m
	}
	s := 0.0
	for _, x := range v {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}
