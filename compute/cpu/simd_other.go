//go:build !amd64

package cpu

import "math"

// No SIMD loops on this architecture: the generic path is the only one
// (Kernels never offers avx2 here).

// narrowAVX512 is false: no AVX-512 kernels here.
const narrowAVX512 = false

func adamSIMD(p, g, m, v []float32, c *adamConst) int       { return 0 }
func prefetchRows(table []float32, rows []int32, width int) {}
func dotSIMD(a, b []float32) (float32, int)                 { return 0, 0 }
func addSIMD(dst, src []float32) int                        { return 0 }

func tileSIMD(tw int, c, a, w []float32, rows, k, lda, ldc int, bias, mask, prev []float32, ldm, mode int) {
	panic("cpu: no SIMD tile kernel on this architecture")
}

func dwSIMD(acc *[dwAcc]float32, dy []float32, ldy, rows int, sl *dwSlots) {
	panic("cpu: no SIMD dW kernel on this architecture")
}

func sprowsSIMD(w int, c []float32, ldc, rows int, starts []int32, sstride int, ent []spEnt, b []float32, mask []float32, ldm, mode int) {
	panic("cpu: no SIMD sparse-row kernel on this architecture")
}

func finiteSIMD(v []float32) bool {
	for _, x := range v {
		if math.Float32bits(x)&0x7f800000 == 0x7f800000 {
			return false
		}
	}
	return true
}
