package cpu

import "unsafe"

//go:noescape
func adamAVX2(param, grad, mom, vel *float32, n int, c *adamConst)

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
