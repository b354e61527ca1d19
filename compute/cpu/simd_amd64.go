package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:noescape
func adamAVX2(param, grad, mom, vel *float32, n int, c *adamConst)

//go:noescape
func prefetchRowsAsm(base *float32, rows *int32, n int, rowBytes int)

// prefetchRows asks the cache for rows (rows of width float32s of table)
// ahead of their use: the random rows of an embedding table miss every
// cache level, and a loop over them one by one keeps too few misses in
// flight to hide the memory latency. A hint only: it changes no value.
func prefetchRows(table []float32, rows []int32, width int) {
	if len(rows) > 0 && len(table) > 0 {
		prefetchRowsAsm(unsafe.SliceData(table), unsafe.SliceData(rows), len(rows), 4*width)
	}
}

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func addAVX2(dst, src *float32, n int)

// adamSIMD runs the AVX2 Adam loop over the largest multiple of 8 elements
// and returns how many it did.
func adamSIMD(p, g, m, v []float32, c *adamConst) int {
	n := len(p) &^ 7
	if n > 0 {
		adamAVX2(unsafe.SliceData(p), unsafe.SliceData(g), unsafe.SliceData(m), unsafe.SliceData(v), n, c)
	}
	return n
}

// dotSIMD returns the AVX2 dot product of the first n elements, n the
// largest multiple of 32, and n.
func dotSIMD(a, b []float32) (float32, int) {
	n := len(a) &^ 31
	if n == 0 {
		return 0, 0
	}
	return dotAVX2(unsafe.SliceData(a), unsafe.SliceData(b), n), n
}

// addSIMD adds the first n elements, n the largest multiple of 32, and
// returns n.
func addSIMD(dst, src []float32) int {
	n := len(dst) &^ 31
	if n > 0 {
		addAVX2(unsafe.SliceData(dst), unsafe.SliceData(src), n)
	}
	return n
}

//go:noescape
func tile4x24AVX2(c, a, w *float32, rows, k, lda, ldc int, bias, mask, prev *float32, ldm, mode int)

//go:noescape
func sprows96AVX512(c *float32, ldc, rows int, starts *int32, sstride int, ent *spEnt, b *float32, mask *float32, ldm, mode int)

//go:noescape
func tile4x24AVX512(c, a, w *float32, rows, k, lda, ldc int, bias, mask, prev *float32, ldm, mode int)

// narrowAVX512 says that the 4×24 tiles (forward and dx, and dW's outer
// products) and the 96-column sparse-row kernel run on AVX-512
// (tile4x24AVX512, dwAVX512, sprows96AVX512: the same bits as their AVX2
// versions in two thirds or half of the FMAs) where the CPU and the OS
// have it; GODEBUG=cpu.avx512f=off turns it off.
var narrowAVX512 = cpu.X86.HasAVX512F

//go:noescape
func tile8x8AVX2(c, a, w *float32, rows, k, lda, ldc int, bias, mask *float32, ldm, mode int)

//go:noescape
func dwAVX2(acc, dy *float32, ldy, rows int, sl *dwSlots)

// tileSIMD runs tile4x24AVX2 (tw = 24) or tile8x8AVX2 (tw = 8, no prev) on
// rows, a multiple of the tile's rows. The caller has checked that the rows
// of a, c (tw values each, stride ldc), w, bias, mask (tw values from the
// start of each row) and prev (24 values a row) lie in the slices.
func tileSIMD(tw int, c, a, w []float32, rows, k, lda, ldc int, bias, mask, prev []float32, ldm, mode int) {
	var bp, mp *float32
	if mode == tileBias || mode == tileBiasReLU {
		bp = unsafe.SliceData(bias)
	}
	if mode == tileMask {
		mp = unsafe.SliceData(mask)
	}
	if tw == 24 {
		tile := tile4x24AVX2
		if narrowAVX512 {
			tile = tile4x24AVX512
		}
		tile(unsafe.SliceData(c), unsafe.SliceData(a), unsafe.SliceData(w), rows, k, lda, ldc, bp, mp, unsafe.SliceData(prev), ldm, mode)
		return
	}
	if prev != nil {
		panic("cpu: tile8x8 over more than one k block")
	}
	tile8x8AVX2(unsafe.SliceData(c), unsafe.SliceData(a), unsafe.SliceData(w), rows, k, lda, ldc, bp, mp, ldm, mode)
}

// dwSIMD runs dwAVX2 (see dwRows, which has checked the lengths, with 24
// values of dy read from the start of every row).
func dwSIMD(acc *[dwAcc]float32, dy []float32, ldy, rows int, sl *dwSlots) {
	if narrowAVX512 {
		dwAVX512(&acc[0], unsafe.SliceData(dy), ldy, rows, sl)
		return
	}
	dwAVX2(&acc[0], unsafe.SliceData(dy), ldy, rows, sl)
}

//go:noescape
func dwAVX512(acc, dy *float32, ldy, rows int, sl *dwSlots)

//go:noescape
func sprows96AVX2(c *float32, ldc, rows int, starts *int32, sstride int, ent *spEnt, b *float32, mask *float32, ldm, mode int)

//go:noescape
func sprows32AVX2(c *float32, ldc, rows int, starts *int32, sstride int, ent *spEnt, b *float32, mask *float32, ldm, mode int)

//go:noescape
func sprows8AVX2(c *float32, ldc, rows int, starts *int32, sstride int, ent *spEnt, b *float32, mask *float32, ldm, mode int)

//go:noescape
func finiteAVX2(v *float32, n int) bool

// sprowsSIMD runs the sparse-row kernel of width w (96, 32 or 8); spRows
// has checked the lengths.
func sprowsSIMD(w int, c []float32, ldc, rows int, starts []int32, sstride int, ent []spEnt, b []float32, mask []float32, ldm, mode int) {
	var mp *float32
	if mode == spMask {
		mp = unsafe.SliceData(mask)
	}
	cp, sp, ep, bp := unsafe.SliceData(c), unsafe.SliceData(starts), unsafe.SliceData(ent), unsafe.SliceData(b)
	switch w {
	case 96:
		if narrowAVX512 {
			sprows96AVX512(cp, ldc, rows, sp, sstride, ep, bp, mp, ldm, mode)
			return
		}
		sprows96AVX2(cp, ldc, rows, sp, sstride, ep, bp, mp, ldm, mode)
	case 32:
		sprows32AVX2(cp, ldc, rows, sp, sstride, ep, bp, mp, ldm, mode)
	default:
		sprows8AVX2(cp, ldc, rows, sp, sstride, ep, bp, mp, ldm, mode)
	}
}

// finiteSIMD reports whether v (a multiple of 32 values) is finite.
func finiteSIMD(v []float32) bool { return finiteAVX2(unsafe.SliceData(v), len(v)) }
