package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dainx/dainx/compute/cpu/internal/gemm"
)

// TestNarrowMatchesGEMM checks that the narrow layers' kernels (skinny.go,
// sparserows.go) give the avx2 (and avx512) GEMM's results bit for bit, with their rows
// split over 1 and 3 goroutines (split even when small), with the GEMM's
// sparse-A path chosen by sample (which the sparse-row kernels follow) and
// off.
func TestNarrowMatchesGEMM(t *testing.T) {
	if gemm.AVX2 == nil {
		t.Skip("CPU lacks AVX2/FMA: the narrow kernels are not used")
	}
	defer func(v int) { skinnyRowMACs = v }(skinnyRowMACs)
	skinnyRowMACs = 1 << 8
	type shape struct {
		batch, in, out int
		dyDensity      float64
	}
	shapes := []shape{
		{5120, 3, 20, 0.5}, {1000, 20, 3, 0.5}, {257, 7, 1, 0.5}, {33, 16, 16, 0.5}, {300, 20, 20, 0.5},
		{256, 400, 20, 0.15}, {259, 300, 20, 0.1}, {300, 64, 24, 0.1}, {7, 600, 17, 0.2}, {600, 520, 24, 0.1},
	}
	kerns := []string{"avx2"}
	if gemm.AVX512 != nil {
		kerns = append(kerns, "avx512")
	}
	for _, kern := range kerns {
		for _, sparse := range []string{"auto", "off"} {
			for _, s := range shapes {
				for _, v := range []struct{ acc, maskX bool }{{false, true}, {true, true}, {false, false}} {
					acc := v.acc
					desc := fmt.Sprintf("%s sparse=%s B=%d in=%d out=%d acc=%v maskX=%v", kern, sparse, s.batch, s.in, s.out, acc, v.maskX)
					if !narrow(s.in, s.out) {
						t.Fatalf("%s: not a narrow layer", desc)
					}
					rng := rand.New(rand.NewPCG(uint64(s.batch), uint64(s.in)))
					vals := func(n int, density float64) []float32 {
						v := make([]float32, n)
						for i := range v {
							if rng.Float64() < density {
								v[i] = float32(rng.NormFloat64())
							}
						}
						return v
					}
					x, w, bias := vals(s.batch*s.in, 0.5), vals(s.out*s.in, 1), vals(s.out, 1)
					dy, dw0, db0 := vals(s.batch*s.out, s.dyDensity), vals(s.out*s.in, 1), vals(s.out, 1)
					// The GEMM's results.
					be, err := NewWith(Options{Kernel: kern, Sparse: sparse, Threads: 1})
					if err != nil {
						t.Fatal(err)
					}
					y := make([]float32, s.batch*s.out)
					be.kern.Sgemm(1, &gemm.Params{TransB: true, M: s.batch, N: s.out, K: s.in, A: x, LDA: s.in, B: w, LDB: s.in, C: y, LDC: s.out,
						Epilogue: gemm.Epilogue{Bias: bias, ReLU: true}, Sparse: be.sparse})
					dx := make([]float32, s.batch*s.in)
					p := &gemm.Params{M: s.batch, N: s.in, K: s.out, A: dy, LDA: s.out, B: w, LDB: s.in, C: dx, LDC: s.in, Sparse: be.sparse}
					if v.maskX {
						p.Mask, p.LDMask = x, s.in
					}
					be.kern.Sgemm(1, p)
					dw, db := make([]float32, len(dw0)), make([]float32, len(db0))
					if acc {
						copy(dw, dw0)
						copy(db, db0)
					}
					be.kern.Sgemm(1, &gemm.Params{TransA: true, M: s.out, N: s.in, K: s.batch, A: dy, LDA: s.out, B: x, LDB: s.in, C: dw, LDC: s.in,
						Accumulate: acc, Sparse: be.sparse})
					be.colSums(db, dy, s.batch, s.out, acc)
					for _, threads := range []int{1, 3} {
						be, _ := NewWith(Options{Kernel: kern, Sparse: sparse, Threads: threads})
						gy := make([]float32, len(y))
						be.LinearForward(vec(gy), vec(x), vec(w), vec(bias), s.in, s.out, true)
						gdx, gdw, gdb := make([]float32, len(dx)), make([]float32, len(dw)), make([]float32, len(db))
						if acc {
							copy(gdw, dw0)
							copy(gdb, db0)
						}
						be.LinearBackward(vec(gdx), vec(gdw), vec(gdb), vec(dy), vec(x), vec(w), s.in, s.out, v.maskX, acc)
						for _, c := range []struct {
							name      string
							got, want []float32
						}{{"y", gy, y}, {"dx", gdx, dx}, {"dw", gdw, dw}, {"db", gdb, db}} {
							for i := range c.want {
								if math.Float32bits(c.got[i]) != math.Float32bits(c.want[i]) {
									t.Errorf("%s threads=%d: %s[%d] = %v, GEMM %v", desc, threads, c.name, i, c.got[i], c.want[i])
									break
								}
							}
						}
					}
				}
			}
		}
	}
}
