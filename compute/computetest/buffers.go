package computetest

import (
	"fmt"
	"math"
	"slices"

	"github.com/dainx/dainx/compute"
)

// sizes are the buffer lengths of the buffer tests.
var sizes = []int{0, 1, 31, 32, 33, 255, 256, 257, 1000}

func testName(s *suite) {
	if s.be.Name() == "" {
		s.errorf("Name() is empty")
	}
	if s.be.Device() == "" {
		s.errorf("Device() is empty")
	}
}

// testAlloc checks that Alloc returns zeroed buffers of the right length,
// also when the storage of a freed buffer holding NaN could be reused.
func testAlloc(s *suite) {
	for _, n := range sizes {
		dirty := s.be.Alloc(n)
		s.be.Fill(dirty, float32(math.NaN()))
		if err := s.be.Sync(); err != nil {
			s.t.Fatalf("Sync: %v", err)
		}
		dirty.Free()
		b := s.be.Alloc(n)
		s.f32s = append(s.f32s, b)
		if b.Len() != n {
			s.errorf("Alloc(%d).Len() = %d", n, b.Len())
			continue
		}
		got := make([]float32, n)
		if err := s.be.Download(got, b); err != nil {
			s.t.Fatalf("Download: %v", err)
		}
		for i, v := range got {
			if math.Float32bits(v) != 0 {
				s.errorf("Alloc(%d): element %d is %v, want +0", n, i, v)
				break
			}
		}
	}
}

func testAllocI32(s *suite) {
	for _, n := range sizes {
		dirty := s.be.AllocI32(n)
		s.be.UploadI32(dirty, slices.Repeat([]int32{-1}, n))
		if err := s.be.Sync(); err != nil {
			s.t.Fatalf("Sync: %v", err)
		}
		dirty.Free()
		b := s.be.AllocI32(n)
		s.i32s = append(s.i32s, b)
		if b.Len() != n {
			s.errorf("AllocI32(%d).Len() = %d", n, b.Len())
			continue
		}
		got := make([]int32, n)
		if err := s.be.DownloadI32(got, b); err != nil {
			s.t.Fatalf("DownloadI32: %v", err)
		}
		if i := slices.IndexFunc(got, func(v int32) bool { return v != 0 }); i >= 0 {
			s.errorf("AllocI32(%d): element %d is %d, want 0", n, i, got[i])
		}
	}
}

// special are float32 values whose bits must survive every copy.
var special = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1,
	math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 0x1p-127, // subnormals
	math.MaxFloat32, -math.MaxFloat32,
	float32(math.Inf(1)), float32(math.Inf(-1)),
	float32(math.NaN()), math.Float32frombits(0xffc12345), math.Float32frombits(0x7fc00001),
}

// bitsEqual reports the first index where a and b differ in bits, or −1.
func bitsEqual(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// testUploadDownload round-trips random values and special values (signed
// zeros, subnormals, infinities, NaN payloads) through a guarded view and
// through a whole buffer, bit for bit.
func testUploadDownload(s *suite) {
	for _, n := range sizes {
		vals := s.uniform(n)
		for i := range min(n, len(special)) {
			vals[(i*7)%n] = special[i]
		}
		b := s.f32("buf", vals) // Upload of the parent, then read through the view
		what := fmt.Sprintf("UploadDownload n=%d", n)
		if i := bitsEqual(s.read(what, b), vals); i >= 0 {
			s.errorf("%s: element %d round-tripped as %#08x, want %#08x", what, i,
				math.Float32bits(s.read(what, b)[i]), math.Float32bits(vals[i]))
		}
		// Upload into the view and Download the view itself.
		again := s.uniform(n)
		s.be.Upload(b.view, again)
		got := make([]float32, n)
		if err := s.be.Download(got, b.view); err != nil {
			s.t.Fatalf("%s: Download: %v", what, err)
		}
		if i := bitsEqual(got, again); i >= 0 {
			s.errorf("%s: view element %d round-tripped as %v, want %v", what, i, got[i], again[i])
		}
		s.read(what+" after Upload to view", b) // guards
	}
}

func testUploadDownloadI32(s *suite) {
	for _, n := range sizes {
		vals := make([]int32, n)
		for i := range vals {
			vals[i] = int32(s.rng.Uint32())
		}
		ext := []int32{0, -1, 1, math.MaxInt32, math.MinInt32}
		for i := range min(n, len(ext)) {
			vals[(i*5)%n] = ext[i]
		}
		b := s.i32("buf", vals)
		what := fmt.Sprintf("UploadDownloadI32 n=%d", n)
		s.equalI32(what, NewShape("buf", "i", n), s.readI32(what, b), vals)
		again := make([]int32, n)
		for i := range again {
			again[i] = int32(s.rng.Uint32())
		}
		s.be.UploadI32(b.view, again)
		got := make([]int32, n)
		if err := s.be.DownloadI32(got, b.view); err != nil {
			s.t.Fatalf("%s: DownloadI32: %v", what, err)
		}
		s.equalI32(what+" view", NewShape("buf", "i", n), got, again)
		s.readI32(what+" after UploadI32 to view", b)
	}
}

// testFill fills guarded views with ordinary and special values.
func testFill(s *suite) {
	for _, n := range sizes {
		for _, v := range []float32{0, 3.25, float32(math.Copysign(0, -1)), float32(math.Inf(-1)), float32(math.NaN())} {
			b := s.f32("dst", s.uniform(n))
			s.be.Fill(b.view, v)
			what := fmt.Sprintf("Fill n=%d v=%v", n, v)
			got := s.read(what, b)
			for i, g := range got {
				if math.Float32bits(g) != math.Float32bits(v) && !(math.IsNaN(float64(g)) && math.IsNaN(float64(v))) {
					s.errorf("%s: element %d is %v (bits %#08x)", what, i, g, math.Float32bits(g))
					break
				}
			}
		}
	}
}

// testCopy copies between guarded views, including special values.
func testCopy(s *suite) {
	for _, n := range sizes {
		vals := s.uniform(n)
		for i := range min(n, len(special)) {
			vals[(i*3)%n] = special[i]
		}
		src := s.f32("src", vals)
		dst := s.f32("dst", nans(n))
		s.be.Copy(dst.view, src.view)
		what := fmt.Sprintf("Copy n=%d", n)
		got := s.read(what, dst)
		if i := bitsEqual(got, vals); i >= 0 {
			s.errorf("%s: element %d is %#08x, want %#08x", what, i, math.Float32bits(got[i]), math.Float32bits(vals[i]))
		}
		s.unchanged(what, []*fbuf{src}, nil)
	}
}

// testCopyI32 copies between guarded I32 views, extreme values included.
func testCopyI32(s *suite) {
	for _, n := range sizes {
		vals := make([]int32, n)
		for i := range vals {
			vals[i] = int32(s.rng.Uint32())
		}
		for i, v := range []int32{0, -1, math.MaxInt32, math.MinInt32} {
			if i < n {
				vals[(i*7)%n] = v
			}
		}
		src := s.i32("src", vals)
		dst := s.i32("dst", make([]int32, n))
		s.be.CopyI32(dst.view, src.view)
		what := fmt.Sprintf("CopyI32 n=%d", n)
		s.equalI32(what, NewShape("dst", "i", n), s.readI32(what, dst), vals)
		s.equalI32(what+" source", NewShape("src", "i", n), s.readI32(what, src), vals)
	}
}

// testSlice checks that views address the right elements of their parent:
// writes through a view land at its offset, nested views add offsets, a view
// downloads its own range, and Len is the view's length.
func testSlice(s *suite) {
	const n = 300
	base := s.uniform(n)
	for _, c := range []struct{ off, m, off2, m2 int }{
		{0, n, 0, n}, {0, 0, 0, 0}, {n, 0, 0, 0}, {1, 33, 2, 31}, {17, 257, 255, 2}, {299, 1, 0, 1}, {100, 150, 149, 1},
	} {
		what := fmt.Sprintf("Slice(%d, %d).Slice(%d, %d)", c.off, c.m, c.off2, c.m2)
		p := s.be.Alloc(n)
		s.f32s = append(s.f32s, p)
		s.be.Upload(p, base)
		v := p.Slice(c.off, c.m)
		if v.Len() != c.m {
			s.errorf("%s: view Len() = %d, want %d", what, v.Len(), c.m)
			continue
		}
		w := v.Slice(c.off2, c.m2)
		if w.Len() != c.m2 {
			s.errorf("%s: nested view Len() = %d, want %d", what, w.Len(), c.m2)
			continue
		}
		// Download through the nested view.
		got := make([]float32, c.m2)
		if err := s.be.Download(got, w); err != nil {
			s.t.Fatalf("%s: Download: %v", what, err)
		}
		at := c.off + c.off2
		if i := bitsEqual(got, base[at:at+c.m2]); i >= 0 {
			s.errorf("%s: view element %d is %v, want parent element %d = %v", what, i, got[i], at+i, base[at+i])
		}
		// Write through the nested view and read the parent.
		vals := s.uniform(c.m2)
		s.be.Upload(w, vals)
		want := slices.Clone(base)
		copy(want[at:], vals)
		all := make([]float32, n)
		if err := s.be.Download(all, p); err != nil {
			s.t.Fatalf("%s: Download: %v", what, err)
		}
		if i := bitsEqual(all, want); i >= 0 {
			s.errorf("%s: after Upload to the view, parent element %d is %v, want %v", what, i, all[i], want[i])
		}
		// Fill through the view touches exactly its range.
		s.be.Fill(w, 7)
		for i := at; i < at+c.m2; i++ {
			want[i] = 7
		}
		if err := s.be.Download(all, p); err != nil {
			s.t.Fatalf("%s: Download: %v", what, err)
		}
		if i := bitsEqual(all, want); i >= 0 {
			s.errorf("%s: after Fill of the view, parent element %d is %v, want %v", what, i, all[i], want[i])
		}
	}
	// I32 views.
	p := s.be.AllocI32(n)
	s.i32s = append(s.i32s, p)
	w := p.Slice(40, 200).Slice(3, 50)
	if w.Len() != 50 {
		s.errorf("I32 nested view Len() = %d, want 50", w.Len())
		return
	}
	vals := make([]int32, 50)
	for i := range vals {
		vals[i] = int32(i + 1)
	}
	s.be.UploadI32(w, vals)
	all := make([]int32, n)
	if err := s.be.DownloadI32(all, p); err != nil {
		s.t.Fatalf("DownloadI32: %v", err)
	}
	want := make([]int32, n)
	copy(want[43:], vals)
	s.equalI32("Slice I32 (40, 200).Slice(3, 50)", NewShape("parent", "i", n), all, want)
}

// testFree checks that freeing a view leaves its parent intact and that
// freeing twice does nothing.
func testFree(s *suite) {
	vals := s.uniform(100)
	p := s.be.Alloc(100)
	s.be.Upload(p, vals)
	p.Slice(10, 20).Free()
	p.Slice(0, 100).Free()
	got := make([]float32, 100)
	if err := s.be.Download(got, p); err != nil {
		s.t.Fatalf("Download after freeing a view: %v", err)
	}
	if i := bitsEqual(got, vals); i >= 0 {
		s.errorf("Free of a view changed parent element %d from %v to %v", i, vals[i], got[i])
	}
	p.Free()
	p.Free()

	ip := s.be.AllocI32(100)
	ip.Slice(5, 5).Free()
	igot := make([]int32, 100)
	if err := s.be.DownloadI32(igot, ip); err != nil {
		s.t.Fatalf("DownloadI32 after freeing a view: %v", err)
	}
	ip.Free()
	ip.Free()
	s.be.Alloc(0).Free()
	s.be.AllocI32(0).Free()
	if err := s.be.Sync(); err != nil {
		s.errorf("Sync after Free: %v", err)
	}
}

func testSync(s *suite) {
	b := s.be.Alloc(1000)
	s.f32s = append(s.f32s, b)
	s.be.Fill(b, 1)
	if err := s.be.Sync(); err != nil {
		s.errorf("Sync: %v", err)
	}
	if err := s.be.Sync(); err != nil {
		s.errorf("second Sync: %v", err)
	}
}

// foreignF32 and foreignI32 are buffers of no backend: passing them must
// panic ("Passing a buffer of one backend to another panics").
type foreignF32 struct{ n int }

func (f foreignF32) Len() int                     { return f.n }
func (f foreignF32) Slice(off, n int) compute.F32 { return foreignF32{n} }
func (foreignF32) Free()                          {}

type foreignI32 struct{ n int }

func (f foreignI32) Len() int                     { return f.n }
func (f foreignI32) Slice(off, n int) compute.I32 { return foreignI32{n} }
func (foreignI32) Free()                          {}

// panics runs f and returns whether it panicked.
func panics(f func()) (did bool) {
	defer func() {
		if recover() != nil {
			did = true
		}
	}()
	f()
	return false
}

// testPanics checks misuse that the compute package documents as a panic,
// for every operation: negative sizes, out-of-range views, lengths that do
// not match, non-positive widths, steps or orders, buffers of another
// backend, and every operation that takes a Layout with invalid layouts.
func testPanics(s *suite) {
	be := s.be
	a := func(n int) compute.F32 {
		b := be.Alloc(n)
		s.f32s = append(s.f32s, b)
		return b
	}
	ai := func(n int) compute.I32 {
		b := be.AllocI32(n)
		s.i32s = append(s.i32s, b)
		return b
	}
	x10, x11, x1, x2 := a(10), a(11), a(1), a(2)
	w6, y4, y5 := a(6), a(4), a(5)
	cells2, th3, al4 := ai(2), ai(3), ai(4)
	cases := []struct {
		what string
		f    func()
	}{
		{"Alloc(-1)", func() { be.Alloc(-1) }},
		{"AllocI32(-1)", func() { be.AllocI32(-1) }},
		{"F32 Slice(-1, 1)", func() { x10.Slice(-1, 1) }},
		{"F32 Slice(0, 11) of 10", func() { x10.Slice(0, 11) }},
		{"F32 Slice(10, 1) of 10", func() { x10.Slice(10, 1) }},
		{"F32 Slice(0, -1)", func() { x10.Slice(0, -1) }},
		{"F32 view Slice past the view (parent has room)", func() { x11.Slice(0, 5).Slice(1, 5) }},
		{"I32 Slice(0, 3) of 2", func() { cells2.Slice(0, 3) }},
		{"I32 view Slice past the view", func() { th3.Slice(1, 1).Slice(0, 2) }},
		{"Upload 11 into 10", func() { be.Upload(x10, make([]float32, 11)) }},
		{"UploadI32 1 into 2", func() { be.UploadI32(cells2, make([]int32, 1)) }},
		{"Download 10 into 11", func() { _ = be.Download(make([]float32, 11), x10) }},
		{"DownloadI32 3 into 2", func() { _ = be.DownloadI32(make([]int32, 3), cells2) }},
		{"Copy 11 into 10", func() { be.Copy(x10, x11) }},
		// cells2 is one cell of order 2; table x10 is 5 rows of width 2.
		{"Gather x of wrong length", func() { be.Gather(x2, x10, cells2, 2, 2, compute.ModeMajor) }},
		{"Gather order 0", func() { be.Gather(a(4), x10, cells2, 0, 2, compute.ModeMajor) }},
		{"Gather width 0", func() { be.Gather(a(0), x10, cells2, 2, 0, compute.ModeMajor) }},
		{"ScatterRows dx of wrong length", func() { be.ScatterRows(x10, y5, cells2, 2, 2, compute.ModeMajor) }},
		// LinearForward with in 3, out 2: x 2×3 (6), w 2×3 (6), y 2×2 (4), bias 2.
		{"LinearForward in 0", func() { be.LinearForward(y4, w6, w6, x2, 0, 2, false) }},
		{"LinearForward out 0", func() { be.LinearForward(y4, w6, w6, x2, 3, 0, false) }},
		{"LinearForward w of wrong length", func() { be.LinearForward(y4, w6, y5, x2, 3, 2, false) }},
		{"LinearForward y of wrong length", func() { be.LinearForward(y5, w6, w6, x2, 3, 2, false) }},
		{"LinearForward bias of wrong length", func() { be.LinearForward(y4, w6, w6, x1, 3, 2, false) }},
		{"LinearBackward dy of wrong length", func() { be.LinearBackward(nil, a(6), a(2), y5, w6, w6, 3, 2, false, false) }},
		{"LinearBackward dx of wrong length", func() { be.LinearBackward(y5, nil, nil, y4, w6, w6, 3, 2, false, false) }},
		{"MSEGrad y of wrong length", func() { be.MSEGrad(x10, nil, x10, x11, 1) }},
		{"Adam g of wrong length", func() {
			be.Adam(x10, x11, a(10), a(10), compute.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: 1})
		}},
		{"InfluenceDot score of wrong length", func() { be.InfluenceDot(a(3), y4, w6, w6, x2, 3, 2, 1) }},
		{"SampleAlias alias of other length", func() { be.SampleAlias(ai(4), 2, 0, th3, al4, 1, 0) }},
		{"Fill of a foreign F32", func() { be.Fill(foreignF32{4}, 0) }},
		{"Copy from a foreign F32", func() { be.Copy(y4, foreignF32{4}) }},
		{"UploadI32 into a foreign I32", func() { be.UploadI32(foreignI32{2}, make([]int32, 2)) }},
		{"ScatterRows order 0", func() { be.ScatterRows(x10, a(4), cells2, 0, 2, compute.ModeMajor) }},
		{"ScatterRows table not a multiple of width", func() { be.ScatterRows(x11, a(4), cells2, 2, 2, compute.ModeMajor) }},
		{"Gather cells not a multiple of order", func() { be.Gather(a(6), x10, ai(3), 2, 2, compute.ModeMajor) }},
		{"LinearForward x not a multiple of in", func() { be.LinearForward(y4, a(7), w6, x2, 3, 2, false) }},
		{"LinearBackward w of wrong length", func() { be.LinearBackward(nil, nil, nil, y4, w6, y5, 3, 2, false, false) }},
		{"LinearBackward dw of wrong length", func() { be.LinearBackward(nil, y5, nil, y4, w6, w6, 3, 2, false, false) }},
		{"LinearBackward db of wrong length", func() { be.LinearBackward(nil, nil, a(3), y4, w6, w6, 3, 2, false, false) }},
		{"LinearBackward in 0", func() { be.LinearBackward(nil, nil, nil, y4, w6, w6, 0, 2, false, false) }},
		{"MSEGrad delta of wrong length", func() { be.MSEGrad(x11, nil, x10, x10, 1) }},
		{"Mul a of wrong length", func() { be.Mul(x10, x11, x10) }},
		{"Mul b of wrong length", func() { be.Mul(x10, x10, x11) }},
		{"MSEGrad sq of length 2", func() { be.MSEGrad(x10, x2, x10, x10, 1) }},
		{"Adam step 0", func() {
			be.Adam(x10, a(10), a(10), a(10), compute.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: 0})
		}},
		{"Adam v of wrong length", func() {
			be.Adam(x10, a(10), a(10), x11, compute.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: 1})
		}},
		{"InfluenceDot gb of wrong length", func() { be.InfluenceDot(a(2), y4, w6, w6, x1, 3, 2, 1) }},
		{"InfluenceDot gw of wrong length", func() { be.InfluenceDot(a(2), y4, w6, y5, x2, 3, 2, 1) }},
		{"InfluenceDot dy of wrong length", func() { be.InfluenceDot(a(2), y5, w6, w6, x2, 3, 2, 1) }},
		// EmbeddingInfluence: 1 score, cells2 one cell of order 2, dx 1×(2·2), gtable 5×2.
		{"EmbeddingInfluence dx of wrong length", func() { be.EmbeddingInfluence(x1, y5, cells2, x10, 2, compute.ModeMajor, 1) }},
		{"EmbeddingInfluence cells not a multiple of scores", func() { be.EmbeddingInfluence(x2, y4, ai(3), x10, 2, compute.ModeMajor, 1) }},
		{"EmbeddingInfluence width 0", func() { be.EmbeddingInfluence(x1, a(0), cells2, x10, 0, compute.ModeMajor, 1) }},
		{"EmbeddingInfluence no scores, some cells", func() { be.EmbeddingInfluence(a(0), a(0), cells2, x10, 2, compute.ModeMajor, 1) }},
		{"EntityImportance cells not a multiple of scores", func() { be.EntityImportance(x10, x2, ai(3)) }},
		{"EntityImportance no scores, some cells", func() { be.EntityImportance(x10, a(0), cells2) }},
		{"SampleAlias col = order", func() { be.SampleAlias(ai(4), 2, 2, th3, ai(3), 1, 0) }},
		{"SampleAlias out not a multiple of order", func() { be.SampleAlias(ai(5), 2, 0, th3, ai(3), 1, 0) }},
		{"SampleAlias empty table", func() { be.SampleAlias(ai(4), 2, 0, ai(0), ai(0), 1, 0) }},
		{"Adam L2 negative", func() {
			be.Adam(x10, a(10), a(10), a(10), compute.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: 1, L2: -1e-4})
		}},
		{"Adam L2 NaN", func() {
			be.Adam(x10, a(10), a(10), a(10), compute.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: 1, L2: math.NaN()})
		}},
		{"SparseAdam L2 +Inf", func() {
			be.SparseAdam(x10, a(4), a(10), a(10), cells2, ai(1), 2, compute.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: 1, L2: math.Inf(1)})
		}},
		// Pairwise: y2 is 2 cells, x of order 2 and width 5 is 2×10 (20).
		{"PairwiseForward order 0", func() { be.PairwiseForward(x2, a(20), 0, 5) }},
		{"PairwiseForward width 1", func() { be.PairwiseForward(x2, a(4), 2, 1) }},
		{"PairwiseForward x of wrong length", func() { be.PairwiseForward(x2, a(21), 2, 5) }},
		{"PairwiseForward nil y", func() { be.PairwiseForward(nil, a(20), 2, 5) }},
		{"PairwiseForward of a foreign F32", func() { be.PairwiseForward(foreignF32{2}, a(20), 2, 5) }},
		{"PairwiseBackward dx of wrong length", func() { be.PairwiseBackward(a(19), x2, a(20), 2, 5) }},
		{"PairwiseBackward dy of wrong length", func() { be.PairwiseBackward(a(20), x1, a(20), 2, 5) }},
		{"PairwiseBackward width 1", func() { be.PairwiseBackward(a(4), x2, a(4), 2, 1) }},
		{"PairwiseBackward nil dx", func() { be.PairwiseBackward(nil, x2, a(20), 2, 5) }},
	}
	// Every operation that takes a Layout panics on every value that is
	// not ModeMajor or RankMajor, with otherwise valid arguments.
	for _, l := range []compute.Layout{-1, 2, 3, 1 << 20} {
		l := l
		cases = append(cases, []struct {
			what string
			f    func()
		}{
			{fmt.Sprintf("Gather layout %d", l), func() { be.Gather(a(4), x10, cells2, 2, 2, l) }},
			{fmt.Sprintf("ScatterRows layout %d", l), func() { be.ScatterRows(x10, a(4), cells2, 2, 2, l) }},
			{fmt.Sprintf("EmbeddingInfluence layout %d", l), func() { be.EmbeddingInfluence(x1, a(4), cells2, x10, 2, l, 1) }},
		}...)
	}
	// The same arguments with a valid layout do not panic.
	for _, l := range []compute.Layout{compute.ModeMajor, compute.RankMajor} {
		if panics(func() {
			be.Gather(a(4), x10, cells2, 2, 2, l)
			be.ScatterRows(a(10), a(4), cells2, 2, 2, l)
			be.EmbeddingInfluence(a(1), a(4), cells2, x10, 2, l, 1)
		}) {
			s.errorf("layout %d: valid arguments panicked", l)
		}
	}
	// Valid pairwise and L2 calls do not panic.
	if panics(func() {
		be.PairwiseForward(x2, a(20), 2, 5)
		be.PairwiseBackward(a(20), x2, a(20), 2, 5)
		be.Adam(a(10), a(10), a(10), a(10), compute.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: 1, L2: 1e-4})
	}) {
		s.errorf("valid PairwiseForward, PairwiseBackward or Adam with L2 panicked")
	}
	for _, c := range cases {
		if !panics(c.f) {
			s.errorf("%s: did not panic", c.what)
		}
	}
	if err := be.Sync(); err != nil {
		s.errorf("Sync after recovered panics: %v (a panic must not poison the backend)", err)
	}
}
