// Package roofline measures the two ceilings a stage of dainx can be held
// by on this machine — the single-precision FMA peak and the memory
// bandwidth — and places a measured stage against them (Williams,
// Waterman & Patterson, "Roofline: an insightful visual performance model
// for multicore architectures", CACM 52(4), 2009). It is for benchmarks
// (make bench-scale); nothing in dainx's library depends on it.
package roofline

import (
	"runtime"
	"sync"
	"time"

	"github.com/dainx/dainx/compute/cpu"
)

// Machine is what Measure found.
type Machine struct {
	// ISA is the widest vector ISA of the FMA loop ("avx512", "avx2"; ""
	// without AVX2 and FMA, when PeakGFLOPS is 0).
	ISA string `json:"isa"`
	// PeakGFLOPS is the machine's single-precision FMA peak: one core's
	// (by its own CPU time) times Threads, in GFLOP/s (compute/cpu.Peak).
	PeakGFLOPS float64 `json:"peak_gflops"`
	// WallGFLOPS is what the threads reached together by the wall clock,
	// lower than PeakGFLOPS when other processes share the cores.
	WallGFLOPS float64 `json:"wall_gflops"`
	// CopyGBps and TriadGBps are STREAM's copy (a[i] = b[i], 16 bytes per
	// element) and triad (a[i] = b[i] + s·c[i], 24 bytes per element)
	// over arrays of ArrayMiB each, the best of the repetitions, in 10⁹
	// bytes/s; Threads goroutines each take a contiguous part.
	CopyGBps  float64 `json:"copy_gbps"`
	TriadGBps float64 `json:"triad_gbps"`
	ArrayMiB  int     `json:"array_mib"`
	Threads   int     `json:"threads"`
}

// Balance returns the machine balance in FLOP per byte: PeakGFLOPS over
// TriadGBps (0 when either is unknown). A stage whose arithmetic
// intensity is below it is bound by memory on this machine.
func (m Machine) Balance() float64 {
	if m.PeakGFLOPS <= 0 || m.TriadGBps <= 0 {
		return 0
	}
	return m.PeakGFLOPS / m.TriadGBps
}

// Measure runs the FMA loop for about d and the STREAM loops over three
// arrays of arrayMiB MiB of float64s (choose several times the last-level
// cache; 128 is) for five repetitions each, on threads goroutines
// (0: GOMAXPROCS). It allocates 3·arrayMiB MiB for its duration.
func Measure(threads int, d time.Duration, arrayMiB int) Machine {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := cpu.PeakGFLOPS(threads, d)
	m := Machine{ISA: p.ISA, PeakGFLOPS: p.PerCore * float64(threads), WallGFLOPS: p.Wall, ArrayMiB: arrayMiB, Threads: threads}
	n := arrayMiB << 20 / 8
	a, b, c := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range b {
		b[i], c[i] = float64(i&1023), 1
	}
	parts := func(fn func(lo, hi int)) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for t := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fn(t*n/threads, (t+1)*n/threads)
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	best := func(bytes float64, fn func(lo, hi int)) float64 {
		var gbps float64
		for range 5 {
			gbps = max(gbps, bytes/parts(fn).Seconds()/1e9)
		}
		return gbps
	}
	m.CopyGBps = best(16*float64(n), func(lo, hi int) { copy(a[lo:hi], b[lo:hi]) })
	const s = 3.0
	m.TriadGBps = best(24*float64(n), func(lo, hi int) {
		x, y, z := a[lo:hi], b[lo:hi], c[lo:hi]
		for i := range x {
			x[i] = y[i] + s*z[i]
		}
	})
	return m
}

// Stage is one stage of a run placed against a Machine.
type Stage struct {
	Name    string  `json:"stage"`
	Cells   float64 `json:"cells"`   // cells it processed (passes included)
	Seconds float64 `json:"seconds"` // its wall time
	// Flops and Bytes are its modelled work in all (FLOP, bytes of memory
	// traffic); 0 when not modelled.
	Flops float64 `json:"flops"`
	Bytes float64 `json:"bytes"`
	// Derived by Place.
	CellsPerS   float64 `json:"cells_per_s"`
	GFLOPS      float64 `json:"gflops"`
	GBps        float64 `json:"gbps"`
	FlopPerCell float64 `json:"flop_per_cell"`
	BytePerCell float64 `json:"byte_per_cell"`
	Intensity   float64 `json:"flop_per_byte"`
	// Bound is "compute" when the stage's intensity is at or above the
	// machine balance, "memory" below it ("" when not modelled), and
	// OfBound the fraction of that bound's roof it reached: GFLOPS over
	// the peak, or GBps over the triad bandwidth.
	Bound   string  `json:"bound"`
	OfBound float64 `json:"of_bound"`
	// OfPeak and OfBandwidth are GFLOPS over the FMA peak and GBps over
	// the triad bandwidth.
	OfPeak      float64 `json:"of_peak"`
	OfBandwidth float64 `json:"of_bandwidth"`
}

// Place fills s's derived fields against m.
func (s *Stage) Place(m Machine) {
	if s.Seconds <= 0 || s.Cells <= 0 {
		return
	}
	s.CellsPerS = s.Cells / s.Seconds
	s.GFLOPS, s.GBps = s.Flops/s.Seconds/1e9, s.Bytes/s.Seconds/1e9
	s.FlopPerCell, s.BytePerCell = s.Flops/s.Cells, s.Bytes/s.Cells
	if m.PeakGFLOPS > 0 {
		s.OfPeak = s.GFLOPS / m.PeakGFLOPS
	}
	if m.TriadGBps > 0 {
		s.OfBandwidth = s.GBps / m.TriadGBps
	}
	if s.Bytes <= 0 {
		return
	}
	s.Intensity = s.Flops / s.Bytes
	if bal := m.Balance(); bal > 0 {
		s.Bound, s.OfBound = "memory", s.OfBandwidth
		if s.Intensity >= bal {
			s.Bound, s.OfBound = "compute", s.OfPeak
		}
	}
}
