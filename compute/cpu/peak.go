package cpu

import (
	"sync"
	"time"

	"github.com/dainx/dainx/compute/cpu/internal/gemm"
)

// PeakGFLOPS measures the machine's single-precision FMA peak: threads
// goroutines each run a register-only loop of independent 8-wide FMAs for
// about d, and the total rate is returned in GFLOP/s. It returns 0 on a CPU
// without AVX2 and FMA.
func PeakGFLOPS(threads int, d time.Duration) float64 {
	if gemm.AVX2 == nil {
		return 0
	}
	const iters = 1 << 18
	gemm.FMAPeak(iters) // warm up (clock ramp)
	flops := make([]float64, threads)
	start := time.Now()
	var wg sync.WaitGroup
	for t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < d {
				flops[t] += gemm.FMAPeak(iters)
			}
		}()
	}
	wg.Wait()
	sec := time.Since(start).Seconds()
	total := 0.0
	for _, f := range flops {
		total += f
	}
	return total / sec / 1e9
}
