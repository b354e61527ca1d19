package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// AVX512 is the 12×32 AVX-512F assembly kernel; nil when the CPU (or the OS,
// which cpu.X86 accounts for) lacks AVX-512F, when the AVX2 kernel is off,
// or under GODEBUG=cpu.avx512f=off.
//
// Its register tile is chosen from the 32 ZMM registers: 12 rows × 2 ZMM
// of C (24 accumulators) and one row of the packed B micro-panel in 2 ZMM.
// Each of a k step's 24 FMAs takes its A value as an embedded broadcast
// from memory ({1to16}), so a step is 26 instructions (2 vector loads, 24
// FMAs) instead of 38 with the 12 A values broadcast into registers first.
// On a Sapphire Rapids–class Intel Xeon (2026-11-27, two cores) that form
// ran the training step at 33.8 ms against 42.8–46.5 ms, with the same
// bits; on Zen 4 it is as fast or slightly faster
// (bench/results/xeon-2026-11-27/README.md). As in BLIS's kernels for
// Skylake-SP (Van Zee & van de Geijn, 2015; the 32×12 sgemm kernel there
// is the transpose of this one),
// the broadcast operand's micro-panel (12×kc, 12 KiB) is the one that stays
// in L1: the macro-kernel runs the tiles of a row of A micro-panels across
// all the B micro-panels of the packed B block, which lives in L2 (its
// width nc is sized from the L2 cache; see blockNC512).
//
// Every element of C is summed exactly as on the 6×16 AVX2 kernel (the same
// k blocks, one FMA per term in increasing k from zero, then C, the bias,
// ReLU and the mask in that order), so the two give the same bits; only
// the tiles and the order in which they are computed differ.
var AVX512 *Kernel

// initAVX512 sets AVX512; it runs from the package's init after AVX2 is set.
func initAVX512() {
	if AVX2 != nil && cpu.X86.HasAVX512F {
		AVX512 = &Kernel{name: "avx512", mr: 12, nr: 32, micro: micro12x32, micron: micro12x32n, microcols: micro12x32cols, microedge: micro12x32edge,
			sprows: sprowsAVX2, mc: mcBlock, nc: blockNC512(l2Bytes()), rowsOuter: true}
	}
}

//go:noescape
func kern12x32n(kc int, a, b, c *float32, ldc, flags int, bias, mask *float32, ldm, ntiles, as, bs, cs, ms, bis int, cmask uint32)

// micro12x32 is the 12×32 micro-kernel on one tile. The callers guarantee
// the lengths: a holds kc·12, b kc·32 values, c reaches 11·ldc+32, bias 32
// and mask 11·ldm+32 when their flags are set.
func micro12x32(kc int, a, b, c []float32, ldc, flags int, bias, mask []float32, ldm int) {
	var bp, mp *float32
	if flags&flagBias != 0 {
		bp = unsafe.SliceData(bias)
	}
	if flags&flagMask != 0 {
		mp = unsafe.SliceData(mask)
	}
	kern12x32n(kc, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, flags, bp, mp, ldm, 1, 0, 0, 0, 0, 0, 0xffffffff)
}

// micro12x32edge is micro12x32 on a tile of 12 rows and cols < 32 columns
// of C (the B micro-panel zero past cols): only those columns of C, the
// bias and the mask are read and written. The callers guarantee the
// lengths: c reaches 11·ldc+cols, bias cols and mask 11·ldm+cols when
// their flags are set.
func micro12x32edge(kc int, a, b, c []float32, ldc, flags int, bias, mask []float32, ldm, cols int) {
	var bp, mp *float32
	if flags&flagBias != 0 {
		bp = unsafe.SliceData(bias)
	}
	if flags&flagMask != 0 {
		mp = unsafe.SliceData(mask)
	}
	kern12x32n(kc, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, flags, bp, mp, ldm, 1, 0, 0, 0, 0, 0, uint32(1)<<cols-1)
}

// micro12x32n runs the micro-kernel over ntiles full tiles down the rows:
// A micro-panels 12·kc apart, C and the mask 12 rows apart, one B
// micro-panel and bias (macro's order, when rowsOuter is off). The callers
// guarantee the lengths as for micro12x32, for the last tile.
func micro12x32n(kc int, a, b, c []float32, ldc, flags int, bias, mask []float32, ldm, ntiles int) {
	var bp, mp *float32
	if flags&flagBias != 0 {
		bp = unsafe.SliceData(bias)
	}
	if flags&flagMask != 0 {
		mp = unsafe.SliceData(mask)
	}
	kern12x32n(kc, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, flags, bp, mp, ldm, ntiles, 12*kc, 0, 12*ldc, 12*ldm, 0, 0xffffffff)
}

// micro12x32cols runs the micro-kernel over ntiles full tiles across the
// columns: one A micro-panel, B micro-panels kc·32 apart, C, the mask and
// the bias 32 columns apart. The callers guarantee the lengths as for
// micro12x32, for the last tile.
func micro12x32cols(kc int, a, b, c []float32, ldc, flags int, bias, mask []float32, ldm, ntiles int) {
	var bp, mp *float32
	bis, ms := 0, 0
	if flags&flagBias != 0 {
		bp, bis = unsafe.SliceData(bias), 32
	}
	if flags&flagMask != 0 {
		mp, ms = unsafe.SliceData(mask), 32
	}
	kern12x32n(kc, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, flags, bp, mp, ldm, ntiles, 0, 32*kc, 32, ms, bis, 0xffffffff)
}

//go:noescape
func fmaPeak512(n int) float32

// FMAPeak512 runs n iterations of a register-only loop of 16 independent
// 16-wide FMAs on the calling goroutine and returns the flops done (0
// without the AVX-512 kernel, e.g. under GODEBUG=cpu.avx512f=off).
func FMAPeak512(n int) float64 {
	if AVX512 == nil {
		return 0
	}
	fmaPeak512(n)
	return float64(n) * peak512FlopsPerIter
}

//go:noescape
func trans4(d *float32, ldd int, s *float32, lds int, nq int)

//go:noescape
func copy12(d, s *float32, lds, kb int)

//go:noescape
func copy32(d, s *float32, lds, kb int)
