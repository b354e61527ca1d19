package computetest

import (
	"fmt"
	"math"
	"testing"
)

// Large Linear case: a batch of LargeBatch rows and an output of LargeOut
// columns, so that the grid of a GEMM has thousands of blocks in both
// dimensions and B·out (2²⁸ elements, 1 GiB) exercises 64-bit offsets and
// grid limits. The input width is small to keep the float64 reference
// cheap.
const (
	LargeBatch = 65536
	LargeIn    = 3
	LargeOut   = 4096
)

// testLinearLarge runs LinearForward (with ReLU) and LinearBackward (dx
// masked, dw and db overwritten) at LargeBatch×LargeIn→LargeOut. y and dy
// hold 2²⁸ elements, so it does not use the guarded buffers: y is filled
// with NaN first and every element must be finite afterwards; 1 024 rows of
// y (the first, the last and random ones) and all of dx, dw and db are
// compared with float64 references, with K and term sizes as in
// testLinearForward and testLinearBackward. It needs about 3 GiB of host
// memory and is skipped under -short.
func testLinearLarge(s *suite) {
	if testing.Short() {
		s.t.Skip("short: the large Linear case needs about 3 GiB and several seconds")
	}
	const B, I, O = LargeBatch, LargeIn, LargeOut
	be := s.be
	xv, wv, bv := s.uniform(B*I), s.uniform(O*I), s.uniform(O)
	x, w, bias := be.Alloc(B*I), be.Alloc(O*I), be.Alloc(O)
	defer x.Free()
	defer w.Free()
	defer bias.Free()
	be.Upload(x, xv)
	be.Upload(w, wv)
	be.Upload(bias, bv)

	// Forward.
	y := be.Alloc(B * O)
	be.Fill(y, float32(math.NaN()))
	be.LinearForward(y, x, w, bias, I, O, true)
	got := make([]float32, B*O)
	if err := be.Download(got, y); err != nil {
		s.t.Fatalf("LinearForward B=%d in=%d out=%d: %v", B, I, O, err)
	}
	y.Free()
	unwritten := 0
	for _, v := range got {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			unwritten++
		}
	}
	if unwritten > 0 {
		s.errorf("LinearForward B=%d in=%d out=%d: %d of %d outputs not finite (unwritten?)", B, I, O, unwritten, B*O)
	}
	rows := []int{0, B - 1}
	for len(rows) < 1024 {
		rows = append(rows, s.rng.IntN(B))
	}
	sub := make([]float32, 0, len(rows)*O)
	want := make([]float64, 0, len(rows)*O)
	sq := 0.0
	for _, b := range rows {
		sub = append(sub, got[b*O:(b+1)*O]...)
		for o := 0; o < O; o++ {
			v, q := float64(bv[o]), float64(bv[o])*float64(bv[o])
			for i := 0; i < I; i++ {
				t := float64(xv[b*I+i]) * float64(wv[o*I+i])
				v += t
				q += t * t
			}
			want = append(want, max(v, 0))
			sq += q
		}
	}
	got = nil
	mag := max(RMS(want), math.Sqrt(sq/float64(len(want))))
	s.close(fmt.Sprintf("LinearForward B=%d in=%d out=%d relu=true (%d sampled rows)", B, I, O, len(rows)),
		NewShape("y", "row,o", len(rows), O), sub, want, I+1, mag)

	// Backward.
	dyv := s.uniform(B * O)
	xr := s.reluInput(B * I)
	dy := be.Alloc(B * O)
	be.Upload(dy, dyv)
	be.Upload(x, xr)
	dx, dw, db := be.Alloc(B*I), be.Alloc(O*I), be.Alloc(O)
	defer dx.Free()
	defer dw.Free()
	defer db.Free()
	be.Fill(dx, float32(math.NaN()))
	be.Fill(dw, float32(math.NaN()))
	be.Fill(db, float32(math.NaN()))
	be.LinearBackward(dx, dw, db, dy, x, w, I, O, true, false)
	gdx, gdw, gdb := make([]float32, B*I), make([]float32, O*I), make([]float32, O)
	if err := be.Download(gdx, dx); err != nil {
		s.t.Fatalf("LinearBackward B=%d in=%d out=%d: %v", B, I, O, err)
	}
	_ = be.Download(gdw, dw)
	_ = be.Download(gdb, db)
	dy.Free()
	wdx, sdx := make([]float64, B*I), make([]float64, B*I)
	wdw, sdw := make([]float64, O*I), make([]float64, O*I)
	wdb, sdb := make([]float64, O), make([]float64, O)
	for b := 0; b < B; b++ {
		for o := 0; o < O; o++ {
			g := float64(dyv[b*O+o])
			wdb[o] += g
			sdb[o] += g * g
			for i := 0; i < I; i++ {
				xi, wi := float64(xr[b*I+i]), float64(wv[o*I+i])
				wdw[o*I+i] += g * xi
				sdw[o*I+i] += g * g * xi * xi
				wdx[b*I+i] += g * wi
				sdx[b*I+i] += g * g * wi * wi
			}
		}
	}
	for j := range wdx {
		if xr[j] <= 0 {
			wdx[j] = 0
		}
	}
	magOf := func(want, sq []float64) float64 {
		t := 0.0
		for _, v := range sq {
			t += v
		}
		return max(RMS(want), math.Sqrt(t/float64(len(sq))))
	}
	what := fmt.Sprintf("LinearBackward B=%d in=%d out=%d maskX=true accumulate=false", B, I, O)
	s.close(what, NewShape("dx", "b,i", B, I), gdx, wdx, O, magOf(wdx, sdx))
	s.close(what, NewShape("dw", "o,i", O, I), gdw, wdw, B, magOf(wdw, sdw))
	s.close(what, NewShape("db", "o", O), gdb, wdb, B, magOf(wdb, sdb))
}
