package gemm

// Generic is the pure-Go 4×4 kernel, available on every CPU.
var Generic = &Kernel{name: "generic", mr: 4, nr: 4, micro: micro4x4}

// micro4x4 is the pure-Go micro-kernel: a 4×4 tile held in 16 scalars.
func micro4x4(kc int, a, b, c []float32, ldc, flags int, bias, mask []float32, ldm int) {
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	a, b = a[:kc*4], b[:kc*4]
	for q := 0; q < len(a); q += 4 {
		aq, bq := a[q:q+4:q+4], b[q:q+4:q+4]
		a0, a1, a2, a3 := aq[0], aq[1], aq[2], aq[3]
		b0, b1, b2, b3 := bq[0], bq[1], bq[2], bq[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	acc := [4][4]float32{
		{c00, c01, c02, c03},
		{c10, c11, c12, c13},
		{c20, c21, c22, c23},
		{c30, c31, c32, c33},
	}
	for r := 0; r < 4; r++ {
		row := c[r*ldc:][:4]
		for j := 0; j < 4; j++ {
			v := acc[r][j]
			if flags&flagAcc != 0 {
				v += row[j]
			}
			if flags&flagBias != 0 {
				v += bias[j]
			}
			if flags&flagReLU != 0 && v < 0 {
				v = 0
			}
			if flags&flagMask != 0 && !(mask[r*ldm+j] > 0) {
				v = 0
			}
			row[j] = v
		}
	}
}
