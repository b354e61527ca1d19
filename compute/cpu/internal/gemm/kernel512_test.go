package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"testing"
)

// shapes512 are products around the 12×32 tile and its blocks: M, N, K not
// multiples of the tile, K = 1, tiny, tall and skinny, wide and flat, and
// several k, m and n blocks (n past the kernel's nc, which the tests lower
// to 64 to take several column blocks).
var shapes512 = [][3]int{
	{1, 1, 1}, {1, 32, 1}, {12, 32, 1}, {12, 32, 7}, {11, 31, 5}, {13, 33, 17},
	{24, 64, 256}, {25, 65, 257}, {2, 3, 300}, {1000, 3, 9}, {1000, 33, 1},
	{3, 1000, 11}, {7, 530, 40}, {150, 97, 129}, {145, 70, 513}, {36, 96, 64},
	{12, 160, 3}, {289, 129, 31},
}

// randParams returns a product of the given shape with every option drawn
// from rng (transposes, padding, accumulation, bias, ReLU, mask with NaN,
// half-zero A, sparse mode), and the C it starts from.
func randParams(rng *rand.Rand, m, n, k int) (*Params, []float32) {
	p := &Params{TransA: rng.IntN(2) == 0, TransB: rng.IntN(2) == 0, M: m, N: n, K: k, Accumulate: rng.IntN(3) == 0,
		Sparse: SparseMode(rng.IntN(3))}
	pad := rng.IntN(3) * 5
	if p.TransA {
		p.LDA = m + pad
		p.A = randSlice(rng, (k-1)*p.LDA+m)
	} else {
		p.LDA = k + pad
		p.A = randSlice(rng, (m-1)*p.LDA+k)
	}
	if rng.IntN(2) == 0 {
		for i := range p.A {
			if p.A[i] < 0 {
				p.A[i] = 0
			}
		}
	}
	if p.TransB {
		p.LDB = k + pad
		p.B = randSlice(rng, (n-1)*p.LDB+k)
	} else {
		p.LDB = n + pad
		p.B = randSlice(rng, (k-1)*p.LDB+n)
	}
	p.LDC = n + pad
	c0 := randSlice(rng, (m-1)*p.LDC+n)
	if !p.Accumulate {
		for i := range c0 {
			c0[i] = float32(math.NaN())
		}
	}
	if rng.IntN(2) == 0 {
		p.Bias = randSlice(rng, n)
	}
	p.ReLU = rng.IntN(2) == 0
	if rng.IntN(2) == 0 {
		p.LDMask = n + pad
		p.Mask = randSlice(rng, (m-1)*p.LDMask+n)
		p.Mask[0] = float32(math.NaN())
	}
	return p, c0
}

func desc(p *Params) string {
	return fmt.Sprintf("m=%d n=%d k=%d transA=%v transB=%v acc=%v bias=%v relu=%v mask=%v sparse=%d",
		p.M, p.N, p.K, p.TransA, p.TransB, p.Accumulate, p.Bias != nil, p.ReLU, p.Mask != nil, p.Sparse)
}

func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// smallBlocks lowers the AVX-512 kernel's nc to 64 for the test, so that
// the shapes above take several column blocks.
func smallBlocks(t *testing.T) {
	nc := AVX512.nc
	AVX512.nc = 64
	t.Cleanup(func() { AVX512.nc = nc })
}

// bothOrders runs f with the AVX-512 kernel's macro-kernel in both orders:
// row tiles outer (its default) and column panels outer (as the AVX2
// kernel's).
func bothOrders(f func(order string)) {
	defer func(v bool) { AVX512.rowsOuter = v }(AVX512.rowsOuter)
	for _, rows := range []bool{true, false} {
		AVX512.rowsOuter = rows
		order := "rows-outer"
		if !rows {
			order = "cols-outer"
		}
		f(order)
	}
}

// TestAVX512Reference checks the 12×32 AVX-512 kernel against the float64
// reference on shapes512, each with every thread count from 1 to 3, with
// the tolerance derived for a float32 sum of k+2 terms (4·√(k+2)·u times
// the terms' root sum of squares plus |C|, u = 2⁻²⁴); it also checks that
// the padding of C is left alone and that every thread count gives the same
// bits.
func TestAVX512Reference(t *testing.T) {
	if AVX512 == nil {
		t.Skip("no AVX-512F (or GODEBUG=cpu.avx512f=off): avx512 kernel not tested")
	}
	smallBlocks(t)
	defer func(v int) { minThreadMACs = v }(minThreadMACs)
	minThreadMACs = 1
	rng := rand.New(rand.NewPCG(512, 1))
	bothOrders(func(order string) {
		for _, sh := range shapes512 {
			for rep := 0; rep < 3; rep++ {
				m, n, k := sh[0], sh[1], sh[2]
				p, c0 := randParams(rng, m, n, k)
				want, mag := refGemm(p, c0)
				var first []float32
				for threads := 1; threads <= 3; threads++ {
					p.C = slices.Clone(c0)
					AVX512.Sgemm(threads, p)
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							got, w := float64(p.C[i*p.LDC+j]), want[i*n+j]
							tol := 4 * math.Sqrt(float64(k+2)) * 0x1p-24 * (mag[i*n+j] + math.Abs(w))
							if math.Abs(got-w) > tol || math.IsNaN(got) {
								t.Fatalf("%s %s threads=%d: C[%d,%d] = %v, want %v (tol %.3g)", order, desc(p), threads, i, j, got, w, tol)
							}
						}
						for j := n; i < m-1 && j < p.LDC; j++ {
							if math.Float32bits(p.C[i*p.LDC+j]) != math.Float32bits(c0[i*p.LDC+j]) {
								t.Fatalf("%s: padding C[%d,%d] written", desc(p), i, j)
							}
						}
					}
					if first == nil {
						first = p.C
					} else if !sameBits(first, p.C) {
						t.Fatalf("%s %s: threads=%d gives different bits from threads=1", order, desc(p), threads)
					}
				}
			}
		}
	})
}

// TestAVX512SameBitsAsAVX2 checks what the AVX512 kernel's documentation
// promises: it sums every element of C as the AVX2 kernel does, so the two
// give the same bits, on every shape of shapes512 and on the step's own
// (forward x·Wᵀ + b with ReLU, dW = dyᵀ·x, dx = dy·W masked), run twice.
func TestAVX512SameBitsAsAVX2(t *testing.T) {
	if AVX512 == nil || AVX2 == nil {
		t.Skip("no AVX-512F or no AVX2: nothing to compare")
	}
	smallBlocks(t)
	rng := rand.New(rand.NewPCG(512, 2))
	bothOrders(func(order string) {
		check := func(p *Params, c0 []float32) {
			t.Helper()
			p.C = slices.Clone(c0)
			AVX2.Sgemm(2, p)
			ref := p.C
			for run := 0; run < 2; run++ {
				p.C = slices.Clone(c0)
				AVX512.Sgemm(1+run, p)
				if !sameBits(ref, p.C) {
					for i := range ref {
						if math.Float32bits(ref[i]) != math.Float32bits(p.C[i]) {
							t.Fatalf("%s %s run %d: C[%d] = %v on avx512, %v on avx2", order, desc(p), run, i, p.C[i], ref[i])
						}
					}
				}
			}
		}
		for _, sh := range shapes512 {
			for rep := 0; rep < 4; rep++ {
				p, c0 := randParams(rng, sh[0], sh[1], sh[2])
				check(p, c0)
			}
		}
		// The training step's three GEMMs on a 150→200 layer, batch 97.
		batch, in, out := 97, 150, 200
		x, w, dy := randSlice(rng, batch*in), randSlice(rng, out*in), randSlice(rng, batch*out)
		for i := range x {
			x[i] = max(x[i], 0)
		}
		check(&Params{TransB: true, M: batch, N: out, K: in, A: x, LDA: in, B: w, LDB: in, LDC: out,
			Epilogue: Epilogue{Bias: randSlice(rng, out), ReLU: true}}, make([]float32, batch*out))
		check(&Params{TransA: true, M: out, N: in, K: batch, A: dy, LDA: out, B: x, LDB: in, LDC: in, Accumulate: true},
			randSlice(rng, out*in))
		check(&Params{M: batch, N: in, K: out, A: dy, LDA: out, B: w, LDB: in, LDC: in,
			Epilogue: Epilogue{Mask: x, LDMask: in}}, make([]float32, batch*in))
	})
}

// TestAVX512Blocks checks the AVX-512 kernel's cache blocking: nc from the
// L2 size a multiple of 32 within [256, ncBlock], and mc a multiple of 12.
func TestAVX512Blocks(t *testing.T) {
	for _, c := range []struct{ l2, nc int }{{0, 512}, {256 << 10, 256}, {1 << 20, 512}, {2 << 20, 1024}, {32 << 20, ncBlock}} {
		if got := blockNC512(c.l2); got != c.nc {
			t.Errorf("blockNC512(%d) = %d, want %d", c.l2, got, c.nc)
		}
	}
	if AVX512 != nil {
		if AVX512.blockMC()%AVX512.mr != 0 || AVX512.blockNC()%AVX512.nr != 0 {
			t.Errorf("avx512 blocks mc %d, nc %d: not multiples of the 12×32 tile", AVX512.blockMC(), AVX512.blockNC())
		}
		t.Logf("avx512: L2 %d bytes, mc %d, kc %d, nc %d", l2Bytes(), AVX512.blockMC(), kcBlock, AVX512.blockNC())
	}
}

// TestAVX512Off re-runs this test binary with GODEBUG=cpu.avx512f=off: the
// AVX-512 kernel and its peak loop must then be off, Best must be the AVX2
// kernel, and the AVX2 kernel must still pass the reference tests.
func TestAVX512Off(t *testing.T) {
	if os.Getenv("DAINX_TEST_NOAVX512") == "1" {
		if AVX512 != nil || ByName("avx512") != nil || FMAPeak512(10) != 0 {
			t.Fatal("AVX-512 kernel on under GODEBUG=cpu.avx512f=off")
		}
		if AVX2 != nil && Best() != AVX2 {
			t.Fatalf("Best() = %s, want avx2", Best().name)
		}
		return
	}
	if AVX512 == nil {
		t.Skip("no AVX-512 kernel to turn off")
	}
	if testing.Short() {
		t.Skip("short mode")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^(TestAVX512Off|TestSgemm|TestNaN)$", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), "DAINX_TEST_NOAVX512=1", "GODEBUG=cpu.avx512f=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("with AVX-512 off: %v\n%s", err, out)
	}
	t.Logf("with AVX-512 off:\n%s", out)
}

// TestFMAPeak512 checks that the AVX-512 peak loop runs and counts 512
// flops per iteration.
func TestFMAPeak512(t *testing.T) {
	if AVX512 == nil {
		t.Skip("no AVX-512 kernel")
	}
	if got := FMAPeak512(1000); got != 512000 {
		t.Errorf("FMAPeak512(1000) = %v flops, want 512000", got)
	}
}
