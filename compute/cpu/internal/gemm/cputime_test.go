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

// TestCPUTime reports single-thread GFLOP/s by thread CPU time (robust to
// other processes); run with DAINX_GEMM_CPUTIME=1 -v.
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
		for _, c := range []cfg{{0, 0}, {32, 32}, {32, 16}, {48, 16}, {64, 16}, {64, 32}} {
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

// TestSpKernelCPU times sprows on an L1-resident panel.
var sameRow = 0

func TestSpKernelCPU(t *testing.T) {
	if os.Getenv("DAINX_GEMM_CPUTIME") == "" || AVX2 == nil {
		t.Skip("set DAINX_GEMM_CPUTIME=1")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(1, 1))
	for _, kc := range []int{32, 48, 64} {
		const rows = 64
		b := aligned(kc * 96)
		nnz := kc / 2
		ent := make([]spEntry, rows*nnz)
		starts := make([]int32, rows+1)
		for r := 0; r < rows; r++ {
			starts[r] = int32(r * nnz)
			q := 0
			for e := 0; e < nnz; e++ {
				ent[r*nnz+e] = spEntry{int32(q*128) * int32(sameRow), rng.Float32()}
				q += 1 + rng.IntN(2)
				q = min(q, kc-1)
			}
		}
		starts[rows] = int32(rows * nnz)
		c := aligned(rows * 96)
		const reps = 20000
		c0 := threadCPU()
		for i := 0; i < reps; i++ {
			AVX2.sprows(96, rows, starts, 1, ent, b, c, 96, 1, nil, nil, 0)
		}
		d := threadCPU() - c0
		fl := float64(reps) * rows * float64(nnz) * 96 * 2
		t.Logf("kc=%d: %.1f GFLOP/s of actual flops", kc, fl/d.Seconds()/1e9)
	}
}
