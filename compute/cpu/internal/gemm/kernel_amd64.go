package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// AVX2 is the 6×16 AVX2/FMA assembly kernel; nil when the CPU lacks AVX2 or
// FMA (or the OS does not save the YMM registers, which cpu.X86 accounts
// for).
var AVX2 *Kernel

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		AVX2 = &Kernel{name: "avx2", mr: 6, nr: 16, micro: micro6x16, micron: micro6x16n, sprows: sprowsAVX2}
	}
	initAVX512()
}

func micro6x16(kc int, a, b, c []float32, ldc, flags int, bias, mask []float32, ldm int) {
	// The callers guarantee the lengths: a holds kc·6, b kc·16 values, c
	// reaches 5·ldc+16, bias 16 and mask 5·ldm+16 when their flags are set.
	micro6x16n(kc, a, b, c, ldc, flags, bias, mask, ldm, 1)
}

//go:noescape
func kern6x16n(kc int, a, b, c *float32, ldc int, flags int, bias, mask *float32, ldm int, ntiles int)

// micro6x16n runs the micro-kernel over ntiles full tiles down the rows in one
// call. The callers guarantee the lengths as for micro6x16, for the last
// tile.
func micro6x16n(kc int, a, b, c []float32, ldc, flags int, bias, mask []float32, ldm, ntiles int) {
	var bp, mp *float32
	if flags&flagBias != 0 {
		bp = unsafe.SliceData(bias)
	}
	if flags&flagMask != 0 {
		mp = unsafe.SliceData(mask)
	}
	kern6x16n(kc, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, flags, bp, mp, ldm, ntiles)
}

//go:noescape
func sprows96(rows int, starts *int32, sstride int, ent *spEntry, b, c *float32, ldc int, flags int, bias, mask *float32, ldm int)

//go:noescape
func sprows32(rows int, starts *int32, sstride int, ent *spEntry, b, c *float32, ldc int, flags int, bias, mask *float32, ldm int)

//go:noescape
func trans8(d *float32, ldd int, s *float32, lds int, nq int)

//go:noescape
func trans6(d *float32, ldd int, s *float32, lds int, nq int)

// transposeAsm does the part of transpose it can with AVX2: rows in groups
// of 8, then a last group of exactly 6 or 4 rows, whole blocks of 8
// columns. It returns the number of leading columns q done for every row.
func transposeAsm(d []float32, ldd int, s []float32, lds, rows, kb int) int {
	nq := kb / 8
	if AVX2 == nil || nq == 0 {
		return 0
	}
	switch rows % 8 {
	case 0:
	case 6:
	case 4:
		if AVX512 == nil { // trans4 serves the 12-row panels of the AVX-512 kernel
			return 0
		}
	default:
		return 0
	}
	_ = d[(nq*8-1)*ldd+rows-1]
	_ = s[(rows-1)*lds+nq*8-1]
	r := 0
	for ; r+8 <= rows; r += 8 {
		trans8(&d[r], ldd, &s[r*lds], lds, nq)
	}
	switch rows - r {
	case 6:
		trans6(&d[r], ldd, &s[r*lds], lds, nq)
	case 4:
		trans4(&d[r], ldd, &s[r*lds], lds, nq)
	}
	return nq * 8
}

//go:noescape
func copy6(d, s *float32, lds, kb int)

// packATrans packs npan full mr-row micro-panels (mr = 6 or 12) of a
// transposed A: for q < kb and panel t < npan, d[t·mr·kb + q·mr + r] =
// s[q·lds + t·mr + r]. It works in blocks of 16 q, so the 16 source rows
// stay in L1 while every panel takes its mr columns. It reports false (doing
// nothing) where there is no assembly for mr.
func packATrans(d, s []float32, lds, kb, npan, mr int) bool {
	if mr != 6 && (mr != 12 || AVX512 == nil) {
		return false
	}
	_, _ = d[npan*mr*kb-1], s[(kb-1)*lds+npan*mr-1]
	for q0 := 0; q0 < kb; q0 += 16 {
		nq := min(16, kb-q0)
		for t := 0; t < npan; t++ {
			if mr == 6 {
				copy6(&d[t*6*kb+q0*6], &s[q0*lds+t*6], lds, nq)
			} else {
				copy12(&d[t*12*kb+q0*12], &s[q0*lds+t*12], lds, nq)
			}
		}
	}
	return true
}

//go:noescape
func copy16(d, s *float32, lds, kb int)

// copyRows16 sets d[q·16+c] = s[q·lds+c] for q < kb, c < 16; it reports
// false (doing nothing) where there is no assembly.
func copyRows16(d, s []float32, lds, kb int) bool {
	_, _ = d[kb*16-1], s[(kb-1)*lds+15]
	copy16(&d[0], &s[0], lds, kb)
	return true
}

// copyRows32 sets d[q·32+c] = s[q·lds+c] for q < kb, c < 32; it reports
// false (doing nothing) where there is no assembly.
func copyRows32(d, s []float32, lds, kb int) bool {
	if AVX512 == nil {
		return false
	}
	_, _ = d[kb*32-1], s[(kb-1)*lds+31]
	copy32(&d[0], &s[0], lds, kb)
	return true
}

//go:noescape
func fmaPeak(n int) float32

// FMAPeak runs n iterations of a register-only loop of independent 8-wide
// FMAs on the calling goroutine and returns the flops done (0 without
// AVX2/FMA).
func FMAPeak(n int) float64 {
	if AVX2 == nil {
		return 0
	}
	fmaPeak(n)
	return float64(n) * peakFlopsPerIter
}

// sprowsAVX2 adapts sprows96 and sprows32. The caller guarantees the
// lengths: starts holds (rows−1)·sstride+2 values, every entry it points at
// is in ent, b holds 64·w values and c, bias and mask reach w columns of
// their last row.
func sprowsAVX2(w, rows int, starts []int32, sstride int, ent []spEntry, b, c []float32, ldc, flags int, bias, mask []float32, ldm int) {
	var bp, mp *float32
	if flags&flagBias != 0 {
		bp = unsafe.SliceData(bias)
	}
	if flags&flagMask != 0 {
		mp = unsafe.SliceData(mask)
	}
	_ = starts[(rows-1)*sstride+1]
	if w == 96 {
		sprows96(rows, &starts[0], sstride, unsafe.SliceData(ent), unsafe.SliceData(b), unsafe.SliceData(c), ldc, flags, bp, mp, ldm)
	} else {
		sprows32(rows, &starts[0], sstride, unsafe.SliceData(ent), unsafe.SliceData(b), unsafe.SliceData(c), ldc, flags, bp, mp, ldm)
	}
}
