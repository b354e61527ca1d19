package eval

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// MeanStd returns the mean and the sample standard deviation (n−1 in the
// denominator) of x; the deviation is 0 for a single value and both are NaN
// for none.
func MeanStd(x []float64) (mean, std float64) {
	switch len(x) {
	case 0:
		return math.NaN(), math.NaN()
	case 1:
		return x[0], 0
	}
	return stat.MeanStdDev(x, nil)
}

// Welch returns the two-sided Welch t-test of the null hypothesis that a and
// b come from populations with the same mean, without assuming equal
// variances:
//
//	t = (ā − b̄) / √(s²_a/n_a + s²_b/n_b)
//	ν = (s²_a/n_a + s²_b/n_b)² / ((s²_a/n_a)²/(n_a−1) + (s²_b/n_b)²/(n_b−1))
//	p = 2·(1 − F_ν(|t|))
//
// with F_ν the Student t distribution's CDF. When both samples have zero
// variance, p is 1 if the means are equal and 0 otherwise (t ±Inf). It
// returns NaNs if a sample has fewer than 2 values.
//
// References: B. L. Welch, "The generalization of 'Student's' problem when
// several different population variances are involved", Biometrika 34, 1947.
func Welch(a, b []float64) (t, df, p float64) {
	if len(a) < 2 || len(b) < 2 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	ma, sa := MeanStd(a)
	mb, sb := MeanStd(b)
	va, vb := sa*sa/float64(len(a)), sb*sb/float64(len(b))
	if va+vb == 0 {
		if ma == mb {
			return 0, math.Inf(1), 1
		}
		return math.Copysign(math.Inf(1), ma-mb), math.Inf(1), 0
	}
	t = (ma - mb) / math.Sqrt(va+vb)
	df = (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
	p = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t))
	return t, df, p
}

// Paired returns the two-sided paired t-test of the null hypothesis that
// the differences dᵢ = aᵢ − bᵢ of matched samples (here: two methods on the
// same split) have mean zero:
//
//	t = d̄ / (s_d/√n),  ν = n − 1,  p = 2·(1 − F_ν(|t|))
//
// When every difference is equal, p is 1 if it is zero and 0 otherwise. It
// returns NaNs if the samples differ in length or have fewer than 2 pairs.
func Paired(a, b []float64) (t, df, p float64) {
	if len(a) != len(b) || len(a) < 2 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	m, s := MeanStd(d)
	df = float64(len(d) - 1)
	if s == 0 {
		if m == 0 {
			return 0, df, 1
		}
		return math.Copysign(math.Inf(1), m), df, 0
	}
	t = m / (s / math.Sqrt(float64(len(d))))
	p = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t))
	return t, df, p
}

// MeanCI returns the mean of the paired differences dᵢ = aᵢ − bᵢ and its
// two-sided confidence interval at level (0.95 for 95%) from the Student t
// distribution with n − 1 degrees of freedom:
//
//	d̄ ± t_{(1+level)/2, n−1} · s_d/√n
//
// It returns NaNs if the samples differ in length or have fewer than 2
// pairs; a zero deviation gives the interval [d̄, d̄].
func MeanCI(a, b []float64, level float64) (mean, lo, hi float64) {
	if len(a) != len(b) || len(a) < 2 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	m, s := MeanStd(d)
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(d) - 1)}.Quantile((1 + level) / 2)
	h := q * s / math.Sqrt(float64(len(d)))
	return m, m - h, m + h
}

// Holm returns Holm's step-down adjustment of the p-values p of one family
// of tests, which controls the family-wise error rate: with the m non-NaN
// p-values sorted increasingly, p₍₁₎ ≤ … ≤ p₍ₘ₎,
//
//	p̃₍ᵢ₎ = max_{j ≤ i} min(1, (m − j + 1)·p₍ⱼ₎)
//
// in p's order. A NaN stays NaN and does not count towards m. Rejecting
// where p̃ < α rejects exactly the hypotheses Holm's procedure rejects at
// level α.
//
// Reference: S. Holm, "A simple sequentially rejective multiple test
// procedure", Scandinavian Journal of Statistics 6(2), 65–70, 1979.
func Holm(p []float64) []float64 {
	out := make([]float64, len(p))
	var idx []int
	for i, v := range p {
		out[i] = math.NaN()
		if !math.IsNaN(v) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(i, j int) bool { return p[idx[i]] < p[idx[j]] })
	m, run := len(idx), 0.0
	for j, i := range idx {
		run = math.Max(run, math.Min(1, float64(m-j)*p[i]))
		out[i] = run
	}
	return out
}
