//go:build linux

package gemm

import (
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCPUTime is a tuning aid, not a test: it reports the single-thread
// GFLOP/s of the dense and the sparse path at the default MLP's shapes, timed
// by the thread's CPU time (less disturbed by other processes than wall
// time). Run it with DAINX_GEMM_CPUTIME=1 go test -run CPUTime -v.
func TestCPUTime(t *testing.T) {
	if os.Getenv("DAINX_GEMM_CPUTIME") == "" || AVX2 == nil {
		t.Skip("set DAINX_GEMM_CPUTIME=1")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0 := threadCPU()
	fl := FMAPeak(1 << 22)
	t.Logf("peak one core: %.1f GFLOP/s", fl/(threadCPU()-c0).Seconds()/1e9)
	rng := rand.New(rand.NewPCG(1, 1))
	type shape struct {
		name    string
		ta, tb  bool
		m, n, k int
	}
	for _, s := range []shape{
		{"fwd-relu", false, true, 1024, 1024, 1024},
		{"dw-relu", true, false, 1024, 1024, 1024},
		{"dx-relu", false, false, 1024, 1024, 1024},
		{"fwd-150", false, true, 1024, 1024, 150},
		{"fwd-relu-128", false, true, 1024, 128, 1024},
		{"dw-relu-150", true, false, 1024, 150, 1024},
		{"dx-150", false, false, 1024, 150, 1024},
	} {
		p := &Params{TransA: s.ta, TransB: s.tb, M: s.m, N: s.n, K: s.k,
			A: randSlice(rng, s.m*s.k), B: randSlice(rng, s.k*s.n), C: make([]float32, s.m*s.n), LDC: s.n}
		p.LDA, p.LDB = s.k, s.n
		if s.ta {
			p.LDA = s.m
		}
		if s.tb {
			p.LDB = s.k
		}
		if strings.Contains(s.name, "relu") {
			for i, v := range p.A {
				if v < 0 {
					p.A[i] = 0
				}
			}
		}
		type cfg struct{ kc, rows int }
		for _, c := range []cfg{{0, 0}, {spKC, spRows}} {
			mode := SparseAlways
			if c.kc == 0 {
				mode = SparseNever
			} else {
				spKC, spRows = c.kc, c.rows
			}
			p.Sparse = mode
			AVX2.Sgemm(1, p)
			best := time.Hour
			for r := 0; r < 3; r++ {
				c0 := threadCPU()
				for q := 0; q < 10; q++ {
					AVX2.Sgemm(1, p)
				}
				best = min(best, (threadCPU()-c0)/10)
			}
			t.Logf("%-14s kc=%d rows=%d %6.1f GFLOP/s (dense-equivalent), %.1f ms", s.name, c.kc, c.rows, 2*float64(s.m*s.n*s.k)/best.Seconds()/1e9, best.Seconds()*1e3)
		}
	}
}
