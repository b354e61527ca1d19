package eval

import (
	"math"

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
