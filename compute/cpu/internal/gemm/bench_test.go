package gemm

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkPeak times the register-only FMA loop on every core at once.
func BenchmarkPeak(b *testing.B) {
	if AVX2 == nil {
		b.Skip("no AVX2/FMA")
	}
	threads := runtime.GOMAXPROCS(0)
	const iters = 1 << 20
	var flops float64
	for i := 0; i < b.N; i++ {
		parallel(threads, func(int) { FMAPeak(iters) })
		flops += float64(threads) * iters * peakFlopsPerIter
	}
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkPeak512 times the register-only AVX-512 FMA loop on every core
// at once.
func BenchmarkPeak512(b *testing.B) {
	if AVX512 == nil {
		b.Skip("no AVX-512F")
	}
	threads := runtime.GOMAXPROCS(0)
	const iters = 1 << 20
	var flops float64
	for i := 0; i < b.N; i++ {
		parallel(threads, func(int) { FMAPeak512(iters) })
		flops += float64(threads) * iters * peak512FlopsPerIter
	}
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkSgemm(b *testing.B) {
	type shape struct {
		name    string
		ta, tb  bool
		m, n, k int
	}
	shapes := []shape{
		{"fwd-relu-1024x1024x1024", false, true, 1024, 1024, 1024},
		{"dw-relu-1024x1024x1024", true, false, 1024, 1024, 1024},
		{"dx-relu-1024x1024x1024", false, false, 1024, 1024, 1024},
		{"fwd-1024x150x1024", false, true, 1024, 1024, 150},
		{"fwd-1024x1024x1024", false, true, 1024, 1024, 1024},
		{"fwd-1024x1024x128", false, true, 1024, 128, 1024},
		{"dw-1024x1024x1024", true, false, 1024, 1024, 1024},
		{"dw-1024x150x1024", true, false, 1024, 150, 1024},
		{"dw-128x1024x1024", true, false, 128, 1024, 1024},
		{"dx-1024x150x1024", false, false, 1024, 150, 1024},
		{"dx-1024x1024x128", false, false, 1024, 1024, 128},
		{"dx-1024x1024x1024", false, false, 1024, 1024, 1024},
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, kern := range []*Kernel{AVX512, AVX2, Gonum, Generic} {
		if kern == nil {
			continue
		}
		for _, s := range shapes {
			p := &Params{TransA: s.ta, TransB: s.tb, M: s.m, N: s.n, K: s.k,
				A: randSlice(rng, s.m*s.k), B: randSlice(rng, s.k*s.n), C: make([]float32, s.m*s.n), LDC: s.n}
			p.LDA, p.LDB = s.k, s.n
			if strings.Contains(s.name, "relu") {
				for i, v := range p.A {
					if v < 0 {
						p.A[i] = 0
					}
				}
			}
			if s.ta {
				p.LDA = s.m
			}
			if s.tb {
				p.LDB = s.k
			}
			for _, mode := range []SparseMode{SparseNever, SparseAuto} {
				if mode == SparseAuto && !strings.Contains(s.name, "relu") {
					continue
				}
				for _, cols := range []bool{false, true} {
					b.Run(fmt.Sprintf("%s/%s/sparse=%d/cols=%v", kern.name, s.name, mode, cols), func(b *testing.B) {
						p.Sparse = mode
						splitCols = cols
						defer func() { splitCols = true }()
						for i := 0; i < b.N; i++ {
							kern.Sgemm(runtime.GOMAXPROCS(0), p)
						}
						b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					})
				}
			}
		}
	}
}
