package gemm

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// The benchmarks of this file take the AVX-512 kernel apart on the step's
// 1024³ products, to find where a machine's time goes (issue 33): the
// micro-kernel alone with its operands in L1 or L2, the packing alone, and
// the whole product under every split, mc, nc and loop order. They change
// package variables and restore them; run them alone (-test.run '^$').

// BenchmarkAVX512Micro times the 12×32 micro-kernel alone (kc = 256, no
// packing, C in L1): "l1" runs one tile over the same B micro-panel (32 KiB,
// in L1) again and again; "l2" runs one A micro-panel across the nb/32 B
// micro-panels of a packed block of nb columns (256·nb·4 bytes, from L2 or
// beyond), as the macro-kernel does.
func BenchmarkAVX512Micro(b *testing.B) {
	if AVX512 == nil {
		b.Skip("no AVX-512F")
	}
	const kc = 256
	rng := rand.New(rand.NewPCG(1, 2))
	a := randSlice(rng, 12*kc)
	for _, nb := range []int{32, 256, 512, 1024, 2048} {
		pb := randSlice(rng, kc*nb)
		c := make([]float32, 12*nb)
		b.Run(fmt.Sprintf("nb=%d", nb), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				micro12x32cols(kc, a, pb, c, nb, flagAcc, nil, nil, 0, nb/32)
			}
			b.ReportMetric(2*float64(12*nb*kc)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkAVX512Pack times the packing of a whole 1024×1024 operand, as
// one thread does for one product: A in mc×kc blocks (as in the forward
// product, TransA false, and in dW, TransA true) and B in kc×32 panels (as
// in dx, TransB false, and the forward product, TransB true). GB/s count
// the operand's 4 MiB once.
func BenchmarkAVX512Pack(b *testing.B) {
	if AVX512 == nil {
		b.Skip("no AVX-512F")
	}
	const n, kc = 1024, 256
	rng := rand.New(rand.NewPCG(1, 3))
	src := randSlice(rng, n*n)
	dst := make([]float32, AVX512.blockMC()*kc)
	panel := make([]float32, kc*32)
	for _, trans := range []bool{false, true} {
		p := &Params{TransA: trans, TransB: trans, M: n, N: n, K: n, A: src, LDA: n, B: src, LDB: n}
		b.Run(fmt.Sprintf("A/trans=%v", trans), func(b *testing.B) {
			mc := AVX512.blockMC()
			for i := 0; i < b.N; i++ {
				for pc := 0; pc < n; pc += kc {
					for ic := 0; ic < n; ic += mc {
						AVX512.packA(dst, p, ic, min(mc, n-ic), pc, kc)
					}
				}
			}
			b.ReportMetric(4*float64(n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
		b.Run(fmt.Sprintf("B/trans=%v", trans), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for pc := 0; pc < n; pc += kc {
					for j := 0; j < n; j += 32 {
						packPanel(panel, p, pc, kc, j, 32, 32)
					}
				}
			}
			b.ReportMetric(4*float64(n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkAVX512Sweep times the step's three 1024³ products on
// GOMAXPROCS threads, to choose the AVX-512 kernel's blocking: under each
// split of Sgemm (cols, rows: barrier-free, each thread packing one
// operand whole; shared: the rows split sharing each packed B block), each
// mc and nc, and both macro-kernel orders.
func BenchmarkAVX512Sweep(b *testing.B) {
	if AVX512 == nil {
		b.Skip("no AVX-512F")
	}
	defer func(rows bool, mc, nc int, sc, sr bool) {
		AVX512.rowsOuter, AVX512.mc, AVX512.nc, splitCols, splitRows = rows, mc, nc, sc, sr
	}(AVX512.rowsOuter, AVX512.mc, AVX512.nc, splitCols, splitRows)
	rng := rand.New(rand.NewPCG(1, 1))
	const n = 1024
	threads := runtime.GOMAXPROCS(0)
	for _, s := range []struct {
		name   string
		ta, tb bool
	}{{"fwd", false, true}, {"dw", true, false}, {"dx", false, false}} {
		p := &Params{TransA: s.ta, TransB: s.tb, M: n, N: n, K: n, A: randSlice(rng, n*n), LDA: n,
			B: randSlice(rng, n*n), LDB: n, C: make([]float32, n*n), LDC: n, Sparse: SparseNever}
		for _, split := range []string{"cols", "rows", "shared"} {
			if threads == 1 && split != "cols" {
				continue
			}
			for _, mc := range []int{48, 96, 144, 288, 576} {
				for _, nc := range []int{256, 512, 1024, 2048, ncBlock} {
					for _, rows := range []bool{true, false} {
						b.Run(fmt.Sprintf("%s/split=%s/mc=%d/nc=%d/rowsOuter=%v", s.name, split, mc, nc, rows), func(b *testing.B) {
							AVX512.rowsOuter, AVX512.mc, AVX512.nc = rows, mc, nc
							splitCols, splitRows = split == "cols", split == "rows"
							for i := 0; i < b.N; i++ {
								AVX512.Sgemm(threads, p)
							}
							b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
						})
					}
				}
			}
		}
	}
}
