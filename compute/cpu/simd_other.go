//go:build !amd64

package cpu

// No SIMD loops on this architecture: the generic path is the only one
// (Kernels never offers avx2 here).

func adamSIMD(p, g, m, v []float32, c *adamConst) int { return 0 }
func dotSIMD(a, b []float32) (float32, int)           { return 0, 0 }
func addSIMD(dst, src []float32) int                  { return 0 }
