package computetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dainx/dainx/compute"
)

// Options adjusts what RunWith requires of a backend.
type Options struct {
	// Nondeterministic names operations, by Backend method name (e.g.
	// "ScatterRows"), whose results may differ in the last bits between two
	// runs on identical inputs, typically because they accumulate with
	// floating-point atomics. For these a difference between runs is logged
	// instead of failed; the values must still pass the tolerance of Close.
	// Every other operation must be bit-reproducible.
	Nondeterministic []string
	// SkipLarge skips the large Linear case (LinearLarge: 2²⁸-element
	// outputs, about 3 GiB of host memory and seconds to minutes on a CPU),
	// for a backend's secondary code paths, whose index arithmetic the
	// default path already covers. It is also skipped under -short.
	SkipLarge bool
	// Precision is the mode the backend multiplies the matrices of its
	// Linear layers in (compute.FP32, the zero value, for a backend without
	// modes). The Linear operations (LinearForward, LinearBackward,
	// LinearLarge, InfluenceDot) are held to the tolerance of that mode,
	// LinearUnit(Precision); every other operation to float32's, Unit.
	Precision compute.Precision
}

// Run runs the conformance suite on be, one subtest per Backend method,
// requiring every operation to be bit-reproducible. It never calls
// be.Close. See the package documentation for what is checked.
func Run(t *testing.T, be compute.Backend) {
	t.Helper()
	RunWith(t, be, Options{})
}

// RunWith is Run with options.
func RunWith(t *testing.T, be compute.Backend, opt Options) {
	t.Helper()
	t.Logf("backend %q on %s, Linear layers held to %v (unit roundoff %.3g)", be.Name(), be.Device(), opt.Precision, LinearUnit(opt.Precision))
	for _, c := range suiteOps {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "LinearLarge" && opt.SkipLarge {
				t.Skip("Options.SkipLarge")
			}
			unit := Unit
			if linearOps[c.name] {
				unit = LinearUnit(opt.Precision)
			}
			s := &suite{
				t:      t,
				be:     be,
				unit:   unit,
				op:     c.name,
				rng:    rand.New(rand.NewPCG(1, 1)),
				nondet: slices.Contains(opt.Nondeterministic, c.name),
			}
			defer s.freeAll()
			c.fn(s)
			if err := be.Sync(); err != nil {
				t.Fatalf("%s: Sync: %v", c.name, err)
			}
		})
	}
}

// suiteOps lists the subtests of Run in order.
var suiteOps = []struct {
	name string
	fn   func(*suite)
}{
	{"Name", testName},
	{"Alloc", testAlloc},
	{"AllocI32", testAllocI32},
	{"UploadDownload", testUploadDownload},
	{"UploadDownloadI32", testUploadDownloadI32},
	{"Fill", testFill},
	{"Copy", testCopy},
	{"CopyI32", testCopyI32},
	{"Slice", testSlice},
	{"Free", testFree},
	{"Sync", testSync},
	{"Panics", testPanics},
	{"Gather", testGather},
	{"ScatterRows", testScatterRows},
	{"LinearForward", testLinearForward},
	{"LinearBackward", testLinearBackward},
	{"LinearLarge", testLinearLarge},
	{"MSEGrad", testMSEGrad},
	{"Mul", testMul},
	{"LinearForwardMSE", testLinearForwardMSE},
	{"Adam", testAdam},
	{"DistinctRows", testDistinctRows},
	{"CompactRows", testCompactRows},
	{"SparseAdam", testSparseAdam},
	{"PairwiseForward", testPairwiseForward},
	{"PairwiseBackward", testPairwiseBackward},
	{"InfluenceDot", testInfluenceDot},
	{"EmbeddingInfluence", testEmbeddingInfluence},
	{"EntityImportance", testEntityImportance},
	{"SampleAlias", testSampleAlias},
}

// linearOps are the subtests held to the tolerance of Options.Precision.
var linearOps = map[string]bool{"LinearForward": true, "LinearBackward": true, "LinearLarge": true, "InfluenceDot": true}

// maxFailures is the number of failed checks after which an operation's
// subtest stops.
const maxFailures = 10

// suite is the state of one operation's subtest.
type suite struct {
	t        *testing.T
	be       compute.Backend
	op       string
	rng      *rand.Rand
	nondet   bool
	unit     float64 // unit roundoff of the tolerance (Unit or LinearUnit)
	failures int
	loggedND bool
	f32s     []compute.F32
	i32s     []compute.I32
}

// failed counts a failed check and stops the subtest after maxFailures.
func (s *suite) failed() {
	s.t.Helper()
	s.failures++
	if s.failures >= maxFailures {
		s.t.Fatalf("%s: stopping after %d failed checks", s.op, s.failures)
	}
}

func (s *suite) errorf(format string, args ...any) {
	s.t.Helper()
	s.t.Errorf(format, args...)
	s.failed()
}

func (s *suite) close(what string, sh Shape, got []float32, want []float64, k int, mag float64) {
	s.t.Helper()
	if !closeMag(s.t, what, sh, got, want, k, mag, s.unit) {
		s.failed()
	}
}

func (s *suite) equalI32(what string, sh Shape, got, want []int32) {
	s.t.Helper()
	if !EqualInt32(s.t, what, sh, got, want) {
		s.failed()
	}
}

func (s *suite) freeAll() {
	for _, b := range s.f32s {
		b.Free()
	}
	for _, b := range s.i32s {
		b.Free()
	}
	s.f32s, s.i32s = nil, nil
}

// Guard bands. Every buffer of a case is a view at offset guardLo into a
// parent with guardLo elements before it and guardHi after it; the guards
// hold guardF32 (a quiet NaN with a payload, so that arithmetic on it shows)
// or guardI32. guardLo is odd so that views are not vector-aligned.
const (
	guardLo  = 17
	guardHi  = 19
	guardI32 = int32(-0x21524111) // 0xDEADBEEF
)

var guardF32 = math.Float32frombits(0x7fc0dead)

// fbuf is a guarded float32 buffer.
type fbuf struct {
	name   string
	parent compute.F32
	view   compute.F32
	init   []float32 // contents uploaded into view
}

// ibuf is a guarded int32 buffer.
type ibuf struct {
	name   string
	parent compute.I32
	view   compute.I32
	init   []int32
}

// f32 allocates a guarded buffer holding vals.
func (s *suite) f32(name string, vals []float32) *fbuf {
	n := len(vals)
	p := s.be.Alloc(guardLo + n + guardHi)
	s.f32s = append(s.f32s, p)
	host := make([]float32, guardLo+n+guardHi)
	for i := range host {
		host[i] = guardF32
	}
	copy(host[guardLo:], vals)
	s.be.Upload(p, host)
	return &fbuf{name: name, parent: p, view: p.Slice(guardLo, n), init: slices.Clone(vals)}
}

// i32 allocates a guarded buffer holding vals.
func (s *suite) i32(name string, vals []int32) *ibuf {
	n := len(vals)
	p := s.be.AllocI32(guardLo + n + guardHi)
	s.i32s = append(s.i32s, p)
	host := make([]int32, guardLo+n+guardHi)
	for i := range host {
		host[i] = guardI32
	}
	copy(host[guardLo:], vals)
	s.be.UploadI32(p, host)
	return &ibuf{name: name, parent: p, view: p.Slice(guardLo, n), init: slices.Clone(vals)}
}

// reset uploads the initial contents into the view again.
func (s *suite) reset(b *fbuf) { s.be.Upload(b.view, b.init) }

// read downloads b's parent, checks that its guards are intact and returns
// the contents of the view.
func (s *suite) read(what string, b *fbuf) []float32 {
	s.t.Helper()
	n := len(b.init)
	host := make([]float32, guardLo+n+guardHi)
	if err := s.be.Download(host, b.parent); err != nil {
		s.t.Fatalf("%s: Download %s: %v", what, b.name, err)
	}
	for i, v := range host {
		if i >= guardLo && i < guardLo+n {
			continue
		}
		if math.Float32bits(v) != math.Float32bits(guardF32) {
			s.errorf("%s: %s: guard element %d (view is [%d, %d) of %d) overwritten: %v (bits %#08x)",
				what, b.name, i-guardLo, 0, n, len(host), v, math.Float32bits(v))
			break
		}
	}
	return host[guardLo : guardLo+n]
}

// readI32 is read for ibuf.
func (s *suite) readI32(what string, b *ibuf) []int32 {
	s.t.Helper()
	n := len(b.init)
	host := make([]int32, guardLo+n+guardHi)
	if err := s.be.DownloadI32(host, b.parent); err != nil {
		s.t.Fatalf("%s: DownloadI32 %s: %v", what, b.name, err)
	}
	for i, v := range host {
		if i >= guardLo && i < guardLo+n {
			continue
		}
		if v != guardI32 {
			s.errorf("%s: %s: guard element %d (view is [0, %d)) overwritten: %d", what, b.name, i-guardLo, n, v)
			break
		}
	}
	return host[guardLo : guardLo+n]
}

// unchanged checks that read-only inputs still hold their initial contents,
// bit for bit, and that their guards are intact.
func (s *suite) unchanged(what string, fs []*fbuf, is []*ibuf) {
	s.t.Helper()
	for _, b := range fs {
		got := s.read(what, b)
		for i, v := range got {
			if math.Float32bits(v) != math.Float32bits(b.init[i]) {
				s.errorf("%s: read-only input %s[%d] changed from %v to %v", what, b.name, i, b.init[i], v)
				break
			}
		}
	}
	for _, b := range is {
		got := s.readI32(what, b)
		if i := firstDiffI32(got, b.init); i >= 0 {
			s.errorf("%s: read-only input %s[%d] changed from %d to %d", what, b.name, i, b.init[i], got[i])
		}
	}
}

// sameBits checks the determinism of an output: a second run from the same
// state must give the same bits.
func (s *suite) sameBits(what, name string, first, again []float32) {
	s.t.Helper()
	for i := range first {
		if math.Float32bits(first[i]) == math.Float32bits(again[i]) {
			continue
		}
		if s.nondet {
			if !s.loggedND {
				s.t.Logf("%s: %s[%d] differs between two runs on the same inputs (%v, then %v); allowed by Options.Nondeterministic",
					what, name, i, first[i], again[i])
				s.loggedND = true
			}
			return
		}
		s.errorf("%s: not deterministic: %s[%d] is %v on one run and %v on the next, from the same inputs",
			what, name, i, first[i], again[i])
		return
	}
}

func firstDiffI32(a, b []int32) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// result is one float output of a case: its buffer, its reference state (in
// float64, updated in place by the reference loop), the reduction length
// after one and after two applications, and optionally the reference state
// of the same loop run on the squares of the inputs, which gives the size of
// the summed terms (see CloseMag).
type result struct {
	b      *fbuf
	shape  Shape
	k1, k2 int
	want   []float64
	sq     []float64
}

// out returns the result for b, its reference state starting at b's
// initial contents.
func out(b *fbuf, sh Shape, k1, k2 int) *result {
	return &result{b: b, shape: sh, k1: k1, k2: k2, want: f64(b.init)}
}

// withSq adds the squared reference state, starting at the squares of b's
// initial contents; the case's reference function must update it.
func (r *result) withSq() *result {
	r.sq = squares(r.b.init)
	return r
}

// mag returns the size of the terms summed into r: the larger of rms(want)
// and, when known, √(mean Σⱼ tⱼ²) from the squared reference.
func (r *result) mag() float64 {
	m := RMS(r.want)
	if r.sq != nil {
		s, n := 0.0, 0
		for _, v := range r.sq {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				s += v
				n++
			}
		}
		if n > 0 {
			m = max(m, math.Sqrt(s/float64(n)))
		}
	}
	return m
}

// squares returns the squares of v in float64 (exact for float32 inputs).
func squares(v []float32) []float64 {
	w := make([]float64, len(v))
	for i, x := range v {
		w[i] = float64(x) * float64(x)
	}
	return w
}

// sqr returns the squares of a slice that may be nil.
func sqr(r *result) []float64 {
	if r == nil {
		return nil
	}
	return r.sq
}

// exercise runs a case: the backend operation run and its reference ref are
// applied once and the outputs compared, applied a second time without
// resetting (so += outputs must accumulate and = outputs must not) and
// compared again; then the outputs are reset, run is applied once more and
// must reproduce the first result bit for bit; finally the read-only inputs
// must be unchanged.
func (s *suite) exercise(desc string, outs []*result, ins []*fbuf, iins []*ibuf, run, ref func()) {
	s.t.Helper()
	what := s.op + " " + desc
	run()
	ref()
	first := make([][]float32, len(outs))
	for i, o := range outs {
		first[i] = slices.Clone(s.read(what, o.b))
		s.close(what, o.shape, first[i], o.want, o.k1, o.mag())
	}
	run()
	ref()
	for _, o := range outs {
		s.close(what+" (applied twice)", o.shape, s.read(what, o.b), o.want, o.k2, o.mag())
	}
	for _, o := range outs {
		s.reset(o.b)
	}
	run()
	for i, o := range outs {
		s.sameBits(what, o.b.name, first[i], s.read(what, o.b))
	}
	s.unchanged(what, ins, iins)
}

// Inputs.

// uniform returns n values uniform in [−1, 1), rounded to float32.
func (s *suite) uniform(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(2*s.rng.Float64() - 1)
	}
	return v
}

// positive returns n values uniform in [0.5, 1.5), rounded to float32.
func (s *suite) positive(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(0.5 + s.rng.Float64())
	}
	return v
}

// nans returns n NaNs: the initial contents of = outputs, which must be
// overwritten everywhere.
func nans(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.NaN())
	}
	return v
}

// cellsFor returns batch cells of a tensor with the given mode sizes as
// global embedding rows (offₙ + iₙ, batch×order). Cell 1 repeats cell 0 and
// the last cell repeats cell 2, so that every batch of 4 or more has
// duplicate rows in every mode.
func (s *suite) cellsFor(batch int, dims []int) []int32 {
	order := len(dims)
	c := make([]int32, batch*order)
	for b := 0; b < batch; b++ {
		off := 0
		for n, d := range dims {
			c[b*order+n] = int32(off + s.rng.IntN(d))
			off += d
		}
	}
	if batch >= 2 {
		copy(c[order:2*order], c[:order])
	}
	if batch >= 4 {
		copy(c[(batch-1)*order:], c[2*order:3*order])
	}
	return c
}

// maxCount returns the largest number of times one value occurs in cells.
func maxCount(cells []int32) int {
	count := map[int32]int{}
	m := 0
	for _, c := range cells {
		count[c]++
		m = max(m, count[c])
	}
	return m
}

func f64(v []float32) []float64 {
	w := make([]float64, len(v))
	for i, x := range v {
		w[i] = float64(x)
	}
	return w
}

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}

// view returns the view of b, or a nil F32 (not a typed nil) for a nil b.
func view(b *fbuf) compute.F32 {
	if b == nil {
		return nil
	}
	return b.view
}

// Shape sweeps.
var (
	// batches are the batch sizes of every operation: empty, one, and
	// around the usual GPU block sizes.
	batches = []int{0, 1, 31, 32, 33, 255, 256, 257}
	// linearShapes are (in, out) pairs: out = 1 is the output layer, 17, 33
	// and 7 are not multiples of 16, 64→32 is a typical hidden layer (at
	// batch 257, large enough for the CPU backend to run LinearBackward's
	// dw and dx at the same time), 3→20 and 20→3 are skinny (few inputs or
	// few outputs, like CoSTCo's first layer).
	linearShapes = [][2]int{{1, 1}, {7, 1}, {16, 16}, {17, 33}, {64, 32}, {33, 1}, {3, 20}, {20, 3}}
	// widths are embedding widths E.
	widths = []int{1, 7, 16, 33}
	// modeSets are tensor mode sizes Iₙ (the first order of them are used):
	// a small table, where a batch repeats rows many times, and a larger one.
	modeSets = [][]int{{5, 3, 8, 2}, {61, 47, 13, 29}}
)

func layoutName(l compute.Layout) string {
	switch l {
	case compute.ModeMajor:
		return "ModeMajor"
	case compute.RankMajor:
		return "RankMajor"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// batchShape is the shape of a B×(N·E) batch matrix in the given layout.
func batchShape(name string, batch, order, width int, l compute.Layout) Shape {
	if l == compute.RankMajor {
		return NewShape(name, "b,e,n", batch, width, order)
	}
	return NewShape(name, "b,n,e", batch, order, width)
}
