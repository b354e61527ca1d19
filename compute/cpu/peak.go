package cpu

import (
	"runtime"
	"sync"
	"time"

	"github.com/dainx/dainx/compute/cpu/internal/gemm"
)

// Peak is the measured single-precision FMA peak of the CPU.
type Peak struct {
	// Wall is the rate all threads reached together by the wall clock
	// (lowered when other processes share the cores).
	Wall float64
	// PerCore is the best rate of one thread by its own CPU time (on
	// Linux; by the wall clock elsewhere): one core's peak, whatever else
	// runs on the machine.
	PerCore float64
}

// PeakGFLOPS measures the FMA peak in GFLOP/s: threads goroutines, each on
// its own OS thread, run a register-only loop of independent 8-wide FMAs
// for about d. It returns zeros on a CPU without AVX2 and FMA.
func PeakGFLOPS(threads int, d time.Duration) Peak {
	if gemm.AVX2 == nil {
		return Peak{}
	}
	const iters = 1 << 18
	gemm.FMAPeak(iters) // clock ramp
	flops := make([]float64, threads)
	perCore := make([]float64, threads)
	start := time.Now()
	onThreads(threads, func(t int) {
		c0, w0 := threadCPU(), time.Now()
		for time.Since(start) < d {
			flops[t] += gemm.FMAPeak(iters)
		}
		sec := (threadCPU() - c0).Seconds()
		if sec <= 0 {
			sec = time.Since(w0).Seconds()
		}
		perCore[t] = flops[t] / sec / 1e9
	})
	p := Peak{}
	for t := range flops {
		p.Wall += flops[t]
		p.PerCore = max(p.PerCore, perCore[t])
	}
	p.Wall /= time.Since(start).Seconds() * 1e9
	return p
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
