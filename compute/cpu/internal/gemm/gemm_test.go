package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// kernels returns the kernels to test; the AVX2 and AVX-512 ones are
// skipped with a message when the CPU lacks the features.
func kernels(t *testing.T) []*Kernel {
	ks := []*Kernel{Generic, Gonum}
	if AVX2 != nil {
		ks = append(ks, AVX2)
	} else {
		t.Log("CPU lacks AVX2/FMA: avx2 kernel not tested")
	}
	if AVX512 != nil {
		ks = append(ks, AVX512)
	} else {
		t.Log("CPU lacks AVX-512F (or GODEBUG=cpu.avx512f=off): avx512 kernel not tested")
	}
	return ks
}

// refGemm is the float64 reference of Params: C (=|+=) op(A)·op(B) then the
// epilogue. sq, if not nil, receives the same sum of squared terms (the size
// of the summed terms, for the tolerance).
func refGemm(p *Params, c0 []float32) (want, mag []float64) {
	want = make([]float64, p.M*p.N)
	mag = make([]float64, p.M*p.N)
	for i := 0; i < p.M; i++ {
		for j := 0; j < p.N; j++ {
			s, q := 0.0, 0.0
			if p.Accumulate {
				s = float64(c0[i*p.LDC+j])
				q = s * s
			}
			for k := 0; k < p.K; k++ {
				var a, b float32
				if p.TransA {
					a = p.A[k*p.LDA+i]
				} else {
					a = p.A[i*p.LDA+k]
				}
				if p.TransB {
					b = p.B[j*p.LDB+k]
				} else {
					b = p.B[k*p.LDB+j]
				}
				s += float64(a) * float64(b)
				q += float64(a) * float64(b) * float64(a) * float64(b)
			}
			if p.Bias != nil {
				s += float64(p.Bias[j])
				q += float64(p.Bias[j]) * float64(p.Bias[j])
			}
			if p.ReLU && s < 0 {
				s = 0
			}
			if p.Mask != nil && !(p.Mask[i*p.LDMask+j] > 0) {
				s = 0
			}
			want[i*p.N+j] = s
			mag[i*p.N+j] = math.Sqrt(q)
		}
	}
	return want, mag
}

func randSlice(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(2*rng.Float64() - 1)
	}
	return v
}

var sizes = []int{1, 2, 5, 6, 7, 15, 16, 17, 63, 64, 65, 255, 257}

func TestSgemm(t *testing.T) {
	// Split even the small products, to test the splits.
	defer func(v int) { minThreadMACs = v }(minThreadMACs)
	minThreadMACs = 1
	rng := rand.New(rand.NewPCG(1, 1))
	for _, kern := range kernels(t) {
		for ci := 0; ci < 400; ci++ {
			m, n, k := sizes[rng.IntN(len(sizes))], sizes[rng.IntN(len(sizes))], sizes[rng.IntN(len(sizes))]
			switch ci % 40 {
			case 0:
				m, n, k = 300, 150, 600 // several k and m blocks
			case 1:
				m, n, k = 130, 200, 129 // several sparse blocks and panels
			}
			p := &Params{TransA: rng.IntN(2) == 0, TransB: rng.IntN(2) == 0, M: m, N: n, K: k, Accumulate: rng.IntN(3) == 0,
				Sparse: SparseMode(rng.IntN(3))}
			pad := rng.IntN(3) * 3 // leading dimensions larger than the rows
			if p.TransA {
				p.LDA = m + pad
				p.A = randSlice(rng, (k-1)*p.LDA+m)
			} else {
				p.LDA = k + pad
				p.A = randSlice(rng, (m-1)*p.LDA+k)
			}
			if rng.IntN(2) == 0 {
				// ReLU-like: about half exact zeros, some rows all zero.
				for i := range p.A {
					if p.A[i] < 0 || rng.IntN(50) == 0 {
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
			desc := fmt.Sprintf("%s m=%d n=%d k=%d transA=%v transB=%v acc=%v bias=%v relu=%v mask=%v pad=%d sparse=%d",
				kern.name, m, n, k, p.TransA, p.TransB, p.Accumulate, p.Bias != nil, p.ReLU, p.Mask != nil, pad, p.Sparse)
			want, mag := refGemm(p, c0)
			var first []float32
			for _, threads := range []int{1, 2, 3} {
				p.C = slices.Clone(c0)
				kern.Sgemm(threads, p)
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						got, w := float64(p.C[i*p.LDC+j]), want[i*n+j]
						tol := 4 * math.Sqrt(float64(k+2)) * 0x1p-24 * (mag[i*n+j] + math.Abs(w))
						if math.Abs(got-w) > tol || math.IsNaN(got) {
							t.Fatalf("%s threads=%d: C[%d,%d] = %v, want %v (tol %.3g)", desc, threads, i, j, got, w, tol)
						}
					}
				}
				// Padding between rows is untouched.
				for i := 0; i < m-1; i++ {
					for j := n; j < p.LDC; j++ {
						if math.Float32bits(p.C[i*p.LDC+j]) != math.Float32bits(c0[i*p.LDC+j]) {
							t.Fatalf("%s: padding C[%d,%d] written", desc, i, j)
						}
					}
				}
				if first == nil {
					first = p.C
				} else if !slices.EqualFunc(first, p.C, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
					t.Fatalf("%s: threads=%d gives different bits from threads=1", desc, threads)
				}
			}
		}
	}
}

// TestNaN checks that a NaN in A reaches its row of C, through ReLU too.
func TestNaN(t *testing.T) {
	for _, kern := range kernels(t) {
		m, n, k := 13, 37, 9
		rng := rand.New(rand.NewPCG(2, 2))
		p := &Params{M: m, N: n, K: k, A: randSlice(rng, m*k), LDA: k, B: randSlice(rng, k*n), LDB: n,
			C: make([]float32, m*n), LDC: n, Epilogue: Epilogue{ReLU: true, Bias: randSlice(rng, n)}}
		p.A[7*k+3] = float32(math.NaN())
		kern.Sgemm(2, p)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				if isNaN := math.IsNaN(float64(p.C[i*n+j])); isNaN != (i == 7) {
					t.Fatalf("%s: C[%d,%d] = %v", kern.name, i, j, p.C[i*n+j])
				}
			}
		}
	}
}

// TestSparseNonFinite checks that a non-finite B disables the sparse path:
// 0·Inf must still give NaN.
func TestSparseNonFinite(t *testing.T) {
	for _, kern := range kernels(t) {
		m, n, k := 8, 100, 70
		rng := rand.New(rand.NewPCG(3, 3))
		p := &Params{M: m, N: n, K: k, A: make([]float32, m*k), LDA: k, B: randSlice(rng, k*n), LDB: n,
			C: make([]float32, m*n), LDC: n, Sparse: SparseAlways}
		p.A[3*k+5] = 1 // row 3 has one nonzero; the others are all zero
		p.B[9*n+4] = float32(math.Inf(1))
		kern.Sgemm(2, p)
		for i := 0; i < m; i++ {
			if !math.IsNaN(float64(p.C[i*n+4])) {
				t.Errorf("%s: C[%d,4] = %v, want NaN (0·Inf)", kern.name, i, p.C[i*n+4])
			}
		}
		if got, want := p.C[3*n], p.B[5*n]; got != want {
			t.Errorf("%s: C[3,0] = %v, want %v", kern.name, got, want)
		}
	}
}

// TestEmptyK checks k = 0: C = epilogue(0) or epilogue(C).
func TestEmptyK(t *testing.T) {
	for _, kern := range kernels(t) {
		for _, acc := range []bool{false, true} {
			c := []float32{-1, 2, 3, -4}
			p := &Params{M: 2, N: 2, K: 0, C: c, LDC: 2, Accumulate: acc, Epilogue: Epilogue{Bias: []float32{0.5, -3}, ReLU: true}}
			kern.Sgemm(2, p)
			want := []float32{0.5, 0, 0.5, 0}
			if acc {
				want = []float32{0, 0, 3.5, 0}
			}
			if !slices.Equal(c, want) {
				t.Errorf("%s acc=%v: %v, want %v", kern.name, acc, c, want)
			}
		}
	}
}
