package computetest

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute"
)

// Unit is the unit roundoff of float32, u = 2⁻²⁴: the largest relative error
// of one correctly rounded float32 operation.
const Unit = 0x1p-24

// LinearUnit returns the unit roundoff the Linear operations of a backend in
// precision mode p are held to: p.UnitRoundoff(), that is 2⁻²⁴ for
// compute.FP32 and 2⁻¹¹ for compute.TF32 (operands rounded to 10 mantissa
// bits), and 4·2⁻²⁴ for compute.TF32x3, whose split a = h + l leaves a
// remainder of up to 2⁻²² of a in each operand and drops the l·l' term.
func LinearUnit(p compute.Precision) float64 {
	if p == compute.TF32x3 {
		return 4 * p.UnitRoundoff()
	}
	return p.UnitRoundoff()
}

// C is the constant c of the relative tolerance rtol = c·√K·u.
//
// Under the probabilistic model of rounding error (Higham & Mary, "A new
// approach to probabilistic rounding error analysis", SIAM J. Sci. Comput.
// 41(5), 2019) the error of a K-term float32 sum or dot product behaves like
// √K·u times the size of its terms, whatever the summation order (sequential,
// blocked or tree). Independent roundings are uniform in [−u, u] with
// standard deviation u/√3, so for K ≥ 1 a bound of 4·√K·u sits several
// standard deviations out: a correct kernel never trips it, while an
// off-by-one, a dropped term or a term read twice is off by far more.
const C = 4

// Exact is the reduction length that demands bit equality: pass it to Close
// for pure data movement (a copy, a gather), where no arithmetic rounds.
const Exact = 0

// Tolerance returns the absolute and relative tolerance for float32 results
// whose longest feeding reduction has k terms, the terms being of size mag:
//
//	rtol = C·√k·u,  atol = rtol·mag
//
// atol covers elements whose exact value is small because of cancellation:
// their rounding error scales with the size of the partial sums, not with
// the result. For a sum Σⱼ tⱼ that size is √(Σⱼ tⱼ²) on average over the
// outputs; for an output with many elements of random sign it equals
// rms(want), which is what Close uses. For k ≤ 0 (Exact) both are zero.
func Tolerance(mag float64, k int) (atol, rtol float64) {
	return ToleranceUnit(mag, k, Unit)
}

// ToleranceUnit is Tolerance for results whose operations round with unit
// roundoff u instead of float32's: rtol = C·√k·u, atol = rtol·mag. The
// suite passes LinearUnit(Options.Precision) for the Linear operations.
func ToleranceUnit(mag float64, k int, u float64) (atol, rtol float64) {
	if k <= 0 {
		return 0, 0
	}
	rtol = C * math.Sqrt(float64(k)) * u
	return rtol * mag, rtol
}

// RMS returns the root mean square of the finite elements of v, 0 if none.
func RMS(v []float64) float64 {
	s, n := 0.0, 0
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		s += x * x
		n++
	}
	if n == 0 {
		return 0
	}
	return math.Sqrt(s / float64(n))
}

// Shape names a row-major array so that a flat index can be reported as
// y[b=3,o=17]. Dims and Sizes list the dimensions outermost first; with no
// Dims an index is reported as name[i].
type Shape struct {
	Name  string
	Dims  []string
	Sizes []int
}

// NewShape returns the Shape of the array name whose dimensions are the
// comma-separated names in dims with the given sizes:
//
//	NewShape("y", "b,o", batch, out)
//
// It panics if the number of names and sizes differ.
func NewShape(name, dims string, sizes ...int) Shape {
	s := Shape{Name: name, Sizes: sizes}
	if dims != "" {
		s.Dims = strings.Split(dims, ",")
	}
	if len(s.Dims) != len(sizes) {
		panic(fmt.Sprintf("computetest: NewShape(%q, %q) with %d sizes", name, dims, len(sizes)))
	}
	return s
}

// String returns the array with its extents, e.g. "y[b<33,o<17]".
func (s Shape) String() string {
	if len(s.Dims) == 0 {
		return s.Name
	}
	parts := make([]string, len(s.Dims))
	for d, name := range s.Dims {
		parts[d] = fmt.Sprintf("%s<%d", name, s.Sizes[d])
	}
	return s.Name + "[" + strings.Join(parts, ",") + "]"
}

// Index returns flat index i decoded into named coordinates, e.g.
// "y[b=3,o=17]".
func (s Shape) Index(i int) string {
	if len(s.Dims) == 0 {
		return fmt.Sprintf("%s[%d]", s.Name, i)
	}
	coord := make([]string, len(s.Dims))
	r := i
	for d := len(s.Dims) - 1; d >= 0; d-- {
		n := s.Sizes[d]
		if d == 0 || n <= 0 {
			coord[d] = fmt.Sprintf("%s=%d", s.Dims[d], r)
			r = 0
			continue
		}
		coord[d] = fmt.Sprintf("%s=%d", s.Dims[d], r%n)
		r /= n
	}
	return s.Name + "[" + strings.Join(coord, ",") + "]"
}

// maxReport is the number of mismatching elements a failure lists.
const maxReport = 5

// Close is CloseMag with mag = RMS(want): the size of the summed terms is
// estimated from the outputs themselves, which is sound when the output has
// many elements of random sign.
func Close(t testing.TB, op string, s Shape, got []float32, want []float64, k int) bool {
	t.Helper()
	return CloseMag(t, op, s, got, want, k, RMS(want))
}

// CloseMag reports whether each element of the float32 result got agrees with
// the float64 reference want, and calls t.Errorf once if not. An element
// passes when
//
//	|got−want| ≤ atol + rtol·|want|,  (atol, rtol) = Tolerance(mag, k)
//
// where k is the length of the longest reduction feeding the element
// (K = in for a Linear output, K = batch for its weight gradient, one more
// for each value added to a non-zero output) and mag the size of the terms
// summed: √(mean over outputs of Σⱼ tⱼ²), which the reference loop of a
// (multi)linear operation computes when given the squares of its inputs.
// Use it instead of Close when the output has few elements (a bias
// gradient with out = 1 has one), where one result can be small by
// cancellation and rms(want) underestimates the partial sums.
//
// A NaN matches only a NaN and an infinity only itself. With k = Exact the
// float32 bits must be equal (any NaN still matches any NaN).
//
// The message names op and the shape, counts the mismatches, gives the
// largest absolute error and lists the first five mismatching elements by
// decoded index ("y[b=3,o=17] got … want …"). It also fails if the lengths
// differ.
func CloseMag(t testing.TB, op string, s Shape, got []float32, want []float64, k int, mag float64) bool {
	t.Helper()
	return closeMag(t, op, s, got, want, k, mag, Unit)
}

// closeMag is CloseMag with the tolerance of unit roundoff u.
func closeMag(t testing.TB, op string, s Shape, got []float32, want []float64, k int, mag, u float64) bool {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s %v: got %d elements, want %d", op, s, len(got), len(want))
		return false
	}
	atol, rtol := ToleranceUnit(mag, k, u)
	var (
		bad    int
		maxErr float64
		maxAt  = -1
		lines  []string
	)
	for i, w := range want {
		g := float64(got[i])
		ok := true
		switch {
		case math.IsNaN(w) || math.IsNaN(g):
			ok = math.IsNaN(w) && math.IsNaN(g)
		case k <= Exact:
			ok = math.Float32bits(got[i]) == math.Float32bits(float32(w))
		case math.IsInf(w, 0) || math.IsInf(g, 0):
			ok = g == w
		default:
			ok = math.Abs(g-w) <= atol+rtol*math.Abs(w)
		}
		if ok {
			continue
		}
		bad++
		e := math.Abs(g - w)
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		if maxAt < 0 || e > maxErr {
			maxErr, maxAt = e, i
		}
		if len(lines) < maxReport {
			lines = append(lines, fmt.Sprintf("\t%s got %.9g want %.17g (|err| %.3g, allowed %.3g)",
				s.Index(i), got[i], w, e, atol+rtol*math.Abs(w)))
		}
	}
	if bad == 0 {
		return true
	}
	tol := "exact"
	if k > Exact {
		tol = fmt.Sprintf("K=%d u=%.3g rtol=%.3g atol=%.3g for terms of size %.3g", k, u, rtol, atol, mag)
	}
	t.Errorf("%s %v: %d of %d elements differ (%s); max |err| %.3g at %s\n%s",
		op, s, bad, len(want), tol, maxErr, s.Index(maxAt), strings.Join(lines, "\n"))
	return false
}

// EqualInt32 reports whether got equals want element for element, and calls
// t.Errorf once if not, naming op and the shape and listing the first five
// mismatching elements by decoded index. Integer outputs (alias draws) are
// exact on every backend.
func EqualInt32(t testing.TB, op string, s Shape, got, want []int32) bool {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s %v: got %d elements, want %d", op, s, len(got), len(want))
		return false
	}
	var (
		bad   int
		lines []string
	)
	for i := range want {
		if got[i] == want[i] {
			continue
		}
		bad++
		if len(lines) < maxReport {
			lines = append(lines, fmt.Sprintf("\t%s got %d want %d", s.Index(i), got[i], want[i]))
		}
	}
	if bad == 0 {
		return true
	}
	t.Errorf("%s %v: %d of %d elements differ\n%s", op, s, bad, len(want), strings.Join(lines, "\n"))
	return false
}
