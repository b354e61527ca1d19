package cpu

import (
	"runtime"
	"sync"
	"time"

	"github.com/dainx/dainx/compute/cpu/internal/gemm"
)

// Peak is the measured single-precision FMA peak of the CPU, in GFLOP/s, in
// the widest vector ISA it has, with each ISA's own beside it.
type Peak struct {
	// Wall is the rate all threads reached together by the wall clock
	// (lowered when other processes share the cores), in ISA.
	Wall float64
	// PerCore is the best rate of one thread by its own CPU time (on
	// Linux; by the wall clock elsewhere): one core's peak, whatever else
	// runs on the machine, in ISA.
	PerCore float64
	// ISA is the widest vector ISA measured, whose rates Wall and PerCore
	// are: "avx512" (16-wide FMAs on ZMM registers) where the CPU has
	// AVX-512F (and GODEBUG=cpu.avx512f=off does not hide it), else
	// "avx2" (8-wide on YMM), "" without AVX2 and FMA.
	ISA string
	// AVX2 and AVX512 are the rates of each ISA's loop (AVX512 zero
	// where it is not measured).
	AVX2, AVX512 Rate
}

// Rate is one FMA loop's measured peak in GFLOP/s (see Peak).
type Rate struct {
	Wall, PerCore float64
}

// PeakGFLOPS measures the FMA peak in GFLOP/s: threads goroutines, each on
// its own OS thread, run a register-only loop of independent FMAs for about
// d, once with 8-wide AVX2 FMAs (12 chains) and, where the CPU has
// AVX-512F, again for about d with 16-wide AVX-512 ones (16 chains). Wall
// and PerCore are the widest ISA's. It returns zeros on a CPU without AVX2
// and FMA.
func PeakGFLOPS(threads int, d time.Duration) Peak {
	if gemm.AVX2 == nil {
		return Peak{}
	}
	p := Peak{ISA: "avx2", AVX2: peakOf(gemm.FMAPeak, threads, d)}
	p.Wall, p.PerCore = p.AVX2.Wall, p.AVX2.PerCore
	if gemm.AVX512 != nil {
		p.ISA, p.AVX512 = "avx512", peakOf(gemm.FMAPeak512, threads, d)
		p.Wall, p.PerCore = p.AVX512.Wall, p.AVX512.PerCore
	}
	return p
}

// peakOf measures the peak of the loop fma (which runs n iterations and
// returns the flops done) on threads threads for about d.
func peakOf(fma func(n int) float64, threads int, d time.Duration) Rate {
	const iters = 1 << 18
	fma(iters) // clock ramp
	flops := make([]float64, threads)
	perCore := make([]float64, threads)
	start := time.Now()
	onThreads(threads, func(t int) {
		c0, w0 := threadCPU(), time.Now()
		for time.Since(start) < d {
			flops[t] += fma(iters)
		}
		sec := (threadCPU() - c0).Seconds()
		if sec <= 0 {
			sec = time.Since(w0).Seconds()
		}
		perCore[t] = flops[t] / sec / 1e9
	})
	r := Rate{}
	for t := range flops {
		r.Wall += flops[t]
		r.PerCore = max(r.PerCore, perCore[t])
	}
	r.Wall /= time.Since(start).Seconds() * 1e9
	return r
}

// GEMMCeiling measures what GEMM can sustain on this machine when every core
// is busy with one: threads goroutines, each on its own OS thread, run
// independent single-threaded n×n×n products (C = A·Bᵀ, the forward
// pass's shape) on the fastest kernel for about d; it returns their total
// rate by the wall clock in GFLOP/s (the sum of the threads' rates, each
// timed after a warm-up product). No split of one product over the same
// threads can beat it by much (a split only adds packing and waits), so it
// bounds the backend's multi-threaded GEMM rate from above, shared caches
// and memory bandwidth included.
func GEMMCeiling(threads, n int, d time.Duration) float64 {
	k := gemm.Best()
	rates := make([]float64, threads)
	onThreads(threads, func(t int) {
		a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
		for i := range a {
			a[i] = float32((i*7+t)%13) / 13
			b[i] = float32((i*5+t)%11) / 11
		}
		p := &gemm.Params{TransB: true, M: n, N: n, K: n, A: a, LDA: n, B: b, LDB: n, C: c, LDC: n, Sparse: gemm.SparseNever}
		k.Sgemm(1, p) // warm-up
		flops, start := 0.0, time.Now()
		for time.Since(start) < d {
			k.Sgemm(1, p)
			flops += 2 * float64(n) * float64(n) * float64(n)
		}
		rates[t] = flops / time.Since(start).Seconds() / 1e9
	})
	total := 0.0
	for _, r := range rates {
		total += r
	}
	return total
}

// onThreads runs f(0), …, f(threads−1) at once, each on a goroutine locked
// to its own OS thread, and waits for them.
func onThreads(threads int, f func(t int)) {
	var wg sync.WaitGroup
	for t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			f(t)
		}()
	}
	wg.Wait()
}
