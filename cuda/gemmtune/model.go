// Package gemmtune is the CPU side of the self-tuning GEMM family of the
// CUDA backend (docs/gpu-tuning.md): the closed family of tile variants
// per precision (kernels/*_128x64.cu, *_128x128.cu and today's 64×64
// kernels), an analytic model that ranks them for a GEMM shape on a device
// described by its properties, the deterministic split-K rule, the on-disk
// cache of the winners of timing, and the DAINX_GEMM_TUNE setting. It needs
// no GPU; package cuda times the model's top choices on the device.
package gemmtune

import (
	"fmt"
	"math"
	"sort"

	"github.com/dainx/dainx/compute"
)

// Op is one of the three GEMMs of a Linear layer; it fixes the operand
// layouts (kernels/common.cuh kKContig/kRContig).
type Op int

// The GEMMs of a Linear layer y = x·wᵀ + b (x B×I, w O×I).
const (
	Forward Op = iota // y (B×O) = x·wᵀ: M = B, N = O, K = I
	DX                // dx (B×I) = dy·w: M = B, N = I, K = O
	DW                // dw (O×I) = dyᵀ·x (and db): M = O, N = I, K = B
)

// String returns "forward", "dx" or "dw".
func (o Op) String() string {
	switch o {
	case Forward:
		return "forward"
	case DX:
		return "dx"
	case DW:
		return "dw"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Variant is one member of the family: a tiling of the GEMM kernels of one
// precision class (tensor cores for TF32 and 3xTF32, SIMT for fp32).
// Variants of one class give bit-identical results.
type Variant struct {
	Name     string // e.g. "tc_128x64"; the kernels are linear_forward_<suffix> …
	Suffix   string // kernel name suffix: "", "_128x64", "_tc", "_tc_128x64"
	TC       bool   // tensor cores (mma.sync TF32), compute capability ≥ 8.0
	BM, BN   int    // CTA tile (rows of C × columns of C)
	WM, WN   int    // warp tile (TC) or thread tile ×(threads per warp row) (SIMT: TM×TN = 8×8 or 4×4)
	TM, TN   int    // SIMT outputs per thread (0 for TC)
	Threads  int    // threads per block
	DynSmem  int    // dynamic shared memory, bytes (0: static only)
	Static   int    // static shared memory of the forward/dx kernels, bytes
	StaticDW int    // static shared memory of the dw kernel, bytes
	Regs     int    // registers per thread (ptxas sm_90, the most over the three kernels)
}

// SmemBytes returns the shared memory one block of op needs, bytes.
func (v Variant) SmemBytes(op Op) int {
	if op == DW {
		return v.DynSmem + v.StaticDW
	}
	return v.DynSmem + v.Static
}

// Kernel returns the name of the kernel of op, e.g. linear_backward_dw_tc_128x64.
func (v Variant) Kernel(op Op) string {
	base := map[Op]string{Forward: "linear_forward", DX: "linear_backward_dx", DW: "linear_backward_dw"}[op]
	return base + v.Suffix
}

// The family. Index 0 of each class is the fixed choice of dainx before
// tuning (64×64 tiles). Shared memory and registers are those ptxas
// reports for sm_90 (make check-kernels); kernels/gemm_tc.cuh and
// gemm_simt.cuh define the tiles.
var (
	tcFamily = []Variant{
		{Name: "tc_64x64", Suffix: "_tc", TC: true, BM: 64, BN: 64, WM: 32, WN: 32, Threads: 128, Static: 40960, StaticDW: 41472, Regs: 187},
		{Name: "tc_128x64", Suffix: "_tc_128x64", TC: true, BM: 128, BN: 64, WM: 32, WN: 32, Threads: 256, DynSmem: 61440, StaticDW: 1024, Regs: 159},
		{Name: "tc_128x128", Suffix: "_tc_128x128", TC: true, BM: 128, BN: 128, WM: 64, WN: 32, Threads: 256, DynSmem: 81920, StaticDW: 1024, Regs: 229},
	}
	simtFamily = []Variant{
		{Name: "simt_64x64", Suffix: "", BM: 64, BN: 64, TM: 4, TN: 4, Threads: 256, Static: 17408, StaticDW: 18432, Regs: 63},
		{Name: "simt_128x64", Suffix: "_128x64", BM: 128, BN: 64, TM: 8, TN: 8, Threads: 128, Static: 25600, StaticDW: 27648, Regs: 255},
		{Name: "simt_128x128", Suffix: "_128x128", BM: 128, BN: 128, TM: 8, TN: 8, Threads: 256, Static: 33792, StaticDW: 35840, Regs: 201},
	}
)

// Family returns the variants of precision p, today's fixed choice first.
// The slice must not be modified.
func Family(p compute.Precision) []Variant {
	if p == compute.FP32 {
		return simtFamily
	}
	return tcFamily
}

// Lookup returns the variant of precision p named name.
func Lookup(p compute.Precision, name string) (Variant, bool) {
	for _, v := range Family(p) {
		if v.Name == name {
			return v, true
		}
	}
	return Variant{}, false
}

// Device is what the model needs of a GPU; package cuda reads it from the
// driver, and Known holds recorded ones.
type Device struct {
	Name         string
	Major, Minor int     // compute capability
	SMs          int     // multiprocessors
	SmemPerSM    int     // shared memory per SM, bytes
	SmemOptIn    int     // the most one block may opt in to, bytes
	RegsPerSM    int     // 32-bit registers per SM
	ThreadsPerSM int     // resident threads per SM
	BlocksPerSM  int     // resident blocks per SM
	ClockKHz     int     // SM clock, kHz
	MemGBs       float64 // DRAM bandwidth, GB/s
	Driver       int     // cuDriverGetVersion (e.g. 12040); 0 if unknown
}

// Known are recorded device properties (the data sheets and the CUDA
// occupancy tables), for the model's tests and `dainx tune -model-only`.
var Known = map[string]Device{
	"h100": {Name: "NVIDIA H100 80GB HBM3", Major: 9, Minor: 0, SMs: 132, SmemPerSM: 228 << 10, SmemOptIn: 227 << 10,
		RegsPerSM: 65536, ThreadsPerSM: 2048, BlocksPerSM: 32, ClockKHz: 1980000, MemGBs: 3350},
	"a100": {Name: "NVIDIA A100-SXM4-40GB", Major: 8, Minor: 0, SMs: 108, SmemPerSM: 164 << 10, SmemOptIn: 163 << 10,
		RegsPerSM: 65536, ThreadsPerSM: 2048, BlocksPerSM: 32, ClockKHz: 1410000, MemGBs: 1555},
	"l4": {Name: "NVIDIA L4", Major: 8, Minor: 9, SMs: 58, SmemPerSM: 100 << 10, SmemOptIn: 99 << 10,
		RegsPerSM: 65536, ThreadsPerSM: 1536, BlocksPerSM: 24, ClockKHz: 2040000, MemGBs: 300},
}

// flopsPerClock returns the dense peak FLOP per clock per SM of the tensor
// cores (TF32 mma.sync) or of the fp32 pipes for compute capability
// major.minor.
func flopsPerClock(major, minor int, tc bool) float64 {
	switch {
	case major >= 9:
		if tc {
			return 2048
		}
		return 256
	case major == 8 && minor == 0:
		if tc {
			return 1024
		}
		return 128
	default: // 8.6, 8.7, 8.9
		if tc {
			return 512
		}
		return 256
	}
}

// Shape is one GEMM: C (M×N) = Σ over K, cut into Parts split-K chunks
// (Split's rule, the same for every variant, so results do not depend on
// the choice).
type Shape struct {
	Op        Op
	M, N, K   int
	Parts     int
	Precision compute.Precision
}

// String returns e.g. "forward 1024x1024x150 parts 1 tf32".
func (s Shape) String() string {
	return fmt.Sprintf("%v %dx%dx%d parts %d %v", s.Op, s.M, s.N, s.K, s.Parts, s.Precision)
}

// Estimate is the model's prediction for one variant.
type Estimate struct {
	Variant
	Fits        bool    // the block's shared memory, registers and threads fit the device
	Why         string  // why not, when !Fits
	Micros      float64 // predicted time, µs, launch included
	Blocks      int     // blocks of the grid
	BlocksPerSM int     // resident blocks per SM (occupancy)
	Waves       float64 // Blocks / (SMs · BlocksPerSM)
	Bound       string  // "sm" (tensor/fp32 pipes, shared memory or issue), "dram" or "l2"
}

// l2Factor is the L2 bandwidth the model assumes, as a multiple of DRAM's.
const l2Factor = 4

// LaunchMicros is the fixed cost of one launch the model adds, µs.
const LaunchMicros = 3.0

// Model returns the estimate of variant v for shape s on device d.
//
// The SM time is the busiest SM's blocks, ⌈blocks/SMs⌉, each taking the
// largest of its tensor-core or fp32 cycles (its padded tile's FLOPs over
// the SM's peak per clock), its shared-memory cycles (fragment and
// operand-tile bytes at 128 bytes per clock) and its issue cycles (4 warp
// instructions per clock), divided by the occupancy's latency hiding
// (resident warps over the 4, or 8 for 4×4 SIMT tiles, that saturate an
// SM), at the SM clock. DRAM time is the operands and the output once, L2
// time the operand tiles every block reads and the split-K parts, at 4×
// the DRAM bandwidth. The
// estimate is the launch cost plus the largest of the three.
func Model(d Device, v Variant, s Shape) Estimate {
	e := Estimate{Variant: v}
	smem := v.SmemBytes(s.Op)
	switch {
	case v.TC && d.Major < 8:
		e.Why = fmt.Sprintf("tensor-core mma.sync TF32 needs compute capability 8.0, device has %d.%d", d.Major, d.Minor)
		return e
	case smem > d.SmemOptIn:
		e.Why = fmt.Sprintf("needs %d bytes of shared memory per block, device allows %d", smem, d.SmemOptIn)
		return e
	}
	bpsm := min(d.SmemPerSM/(smem+1024), d.RegsPerSM/(v.Regs*v.Threads), d.ThreadsPerSM/v.Threads, d.BlocksPerSM)
	if bpsm < 1 {
		e.Why = "one block does not fit an SM (registers or threads)"
		return e
	}
	e.Fits = true
	e.BlocksPerSM = bpsm
	parts := max(s.Parts, 1)
	kchunk := (s.K + parts - 1) / parts
	e.Blocks = ceilDiv(s.M, v.BM) * ceilDiv(s.N, v.BN) * parts
	e.Waves = float64(e.Blocks) / float64(d.SMs*bpsm)
	perSM := ceilDiv(e.Blocks, d.SMs)
	warps := v.Threads / 32
	x3 := s.Precision == compute.TF32x3

	k := float64(kchunk)
	flops := 2 * float64(v.BM*v.BN) * k
	var smemBytes, issue float64
	if v.TC {
		if x3 {
			flops *= 3
		}
		mi, nj := v.WM/16, v.WN/8
		frag := float64(mi*4 + nj*2) // fragment elements per lane per k-step of 8
		cvt := 1.0
		mma := float64(mi * nj)
		if x3 {
			cvt, mma = 3, 3*mma
		}
		smemBytes = k * (float64(warps*(v.WM+v.WN))*4 + float64(v.BM+v.BN)*4)
		issue = k / 8 * float64(warps) * (frag*(1+cvt) + mma) / 4
	} else {
		tx := v.BN / v.TN
		rows, cols := max(32/tx, 1), min(tx, 32)
		smemBytes = k * (float64(warps*(rows*v.TM+cols*v.TN))*4 + float64(v.BM+v.BN)*4)
		fma := float64(v.TM * v.TN)
		lds := float64(v.TM+v.TN) / 4
		issue = k * float64(warps) * (fma + lds + 2) / 4
	}
	pipe := flops / flopsPerClock(d.Major, d.Minor, v.TC)
	block := math.Max(pipe, math.Max(smemBytes/128, issue))
	// Warps that saturate an SM: one per sub-partition when each has
	// enough independent MMAs or FMAs in flight (8×8 SIMT outputs, 32×32 or
	// larger warp tiles), two for the 4×4 SIMT tiles.
	sat := 4.0
	if !v.TC && v.TM*v.TN < 64 {
		sat = 8
	}
	util := math.Min(1, float64(min(bpsm, perSM)*warps)/sat)
	smTime := float64(perSM) * block / util / (float64(d.ClockKHz) * 1e3) * 1e6 // µs

	m, n, kk := float64(s.M), float64(s.N), float64(s.K)
	dram := 4 * (m*kk + n*kk + m*n) / (d.MemGBs * 1e3) // µs
	l2Bytes := 4 * (m*kk*float64(ceilDiv(s.N, v.BN)) + n*kk*float64(ceilDiv(s.M, v.BM)))
	if parts > 1 {
		l2Bytes += 4 * m * n * float64(2*parts) // parts written and read back
	}
	l2 := l2Bytes / (l2Factor * d.MemGBs * 1e3)
	e.Micros, e.Bound = smTime, "sm"
	if dram > e.Micros {
		e.Micros, e.Bound = dram, "dram"
	}
	if l2 > e.Micros {
		e.Micros, e.Bound = l2, "l2"
	}
	e.Micros += LaunchMicros
	return e
}

// Rank returns the estimates of every variant of s.Precision for s on d:
// the variants that fit first, fastest predicted first (ties keep family
// order), then those that do not fit.
func Rank(d Device, s Shape) []Estimate {
	fam := Family(s.Precision)
	es := make([]Estimate, len(fam))
	for i, v := range fam {
		es[i] = Model(d, v, s)
	}
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Fits != es[j].Fits {
			return es[i].Fits
		}
		return es[i].Fits && es[i].Micros < es[j].Micros
	})
	return es
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
