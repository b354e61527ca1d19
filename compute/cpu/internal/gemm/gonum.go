package gemm

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Gonum is the portable path: gonum's pure-Go blas32 Sgemm (which splits C
// into blocks over GOMAXPROCS goroutines, each summing k in a fixed order,
// so its results do not depend on the number of cores) for the product,
// then the epilogue in one pass over C. It runs on every CPU.
//
// Like the reference BLAS, gonum skips the terms of a zero element of A,
// so 0·Inf would give 0 instead of IEEE's NaN; where A or B holds a
// non-finite value the product runs on the Generic kernel instead, which
// keeps every path's NaN behaviour the same.
var Gonum = &Kernel{name: "gonum", whole: gonumSgemm}

// finite reports whether the rows×cols matrix x of row stride ld holds only
// finite values.
func finite(x []float32, rows, cols, ld int) bool {
	for i := 0; i < rows; i++ {
		for _, v := range x[i*ld:][:cols] {
			if v-v != 0 { // NaN or ±Inf
				return false
			}
		}
	}
	return true
}

// gonumSgemm computes p with gonum; threads is not used (gonum schedules its
// own goroutines). m, n, k > 0.
func gonumSgemm(threads int, p *Params) {
	ar, ac := p.M, p.K
	if p.TransA {
		ar, ac = ac, ar
	}
	br, bc := p.K, p.N
	if p.TransB {
		br, bc = bc, br
	}
	if !finite(p.A, ar, ac, p.LDA) || !finite(p.B, br, bc, p.LDB) {
		Generic.Sgemm(threads, p)
		return
	}
	tA, tB := blas.NoTrans, blas.NoTrans
	if p.TransA {
		tA = blas.Trans
	}
	if p.TransB {
		tB = blas.Trans
	}
	beta := float32(0)
	if p.Accumulate {
		beta = 1
	}
	gonum.Implementation{}.Sgemm(tA, tB, p.M, p.N, p.K, 1, p.A, p.LDA, p.B, p.LDB, beta, p.C, p.LDC)
	if p.Bias == nil && !p.ReLU && p.Mask == nil {
		return
	}
	flags := p.epilogueFlags()
	for i := 0; i < p.M; i++ {
		c := p.C[i*p.LDC:][:p.N]
		for j, v := range c {
			c[j] = epilogue(v, flags, p, i, j)
		}
	}
}
