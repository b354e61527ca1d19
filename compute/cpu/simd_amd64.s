// AVX2 loops of the CPU backend. Each handles the first n elements, n a
// multiple of its stride; the Go caller does the tail.

#include "textflag.h"

// func adamAVX2(param, grad, mom, vel *float32, n int, c *adamConst)
// Same float32 operations, in the same order and unfused, as adamGo, so the
// results are bit-identical (VSQRTPS is correctly rounded like the float64
// square root rounded to float32).
TEXT ·adamAVX2(SB), NOSPLIT, $0-48
	MOVQ param+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ mom+16(FP), R8
	MOVQ vel+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ c+40(FP), AX
	VBROADCASTSS 0(AX), Y8   // b1
	VBROADCASTSS 4(AX), Y9   // b2
	VBROADCASTSS 8(AX), Y10  // 1-b1
	VBROADCASTSS 12(AX), Y11 // 1-b2
	VBROADCASTSS 16(AX), Y12 // step
	VBROADCASTSS 20(AX), Y13 // 1/sqrt(c2)
	VBROADCASTSS 24(AX), Y14 // eps
	XORQ BX, BX
	SHRQ $3, CX
	JZ adamdone

adamloop:
	VMOVUPS (SI)(BX*4), Y0       // g
	VMULPS (R8)(BX*4), Y8, Y1    // b1*m
	VMULPS Y0, Y10, Y2           // (1-b1)*g
	VADDPS Y2, Y1, Y1            // m'
	VMOVUPS Y1, (R8)(BX*4)
	VMULPS (R9)(BX*4), Y9, Y3    // b2*v
	VMULPS Y0, Y11, Y4           // (1-b2)*g
	VMULPS Y0, Y4, Y4            // ·g
	VADDPS Y4, Y3, Y3            // v'
	VMOVUPS Y3, (R9)(BX*4)
	VSQRTPS Y3, Y3
	VMULPS Y13, Y3, Y3
	VADDPS Y14, Y3, Y3           // sqrt(v')·rc2 + eps
	VMULPS Y1, Y12, Y1           // step·m'
	VDIVPS Y3, Y1, Y1
	VMOVUPS (DI)(BX*4), Y5
	VSUBPS Y1, Y5, Y5
	VMOVUPS Y5, (DI)(BX*4)
	ADDQ $8, BX
	DECQ CX
	JNZ adamloop

adamdone:
	VZEROUPPER
	RET

// func dotAVX2(a, b *float32, n int) float32
// n a multiple of 32: four 8-wide FMA accumulators, summed as
// ((s0+s1)+(s2+s3)), then the eight lanes pairwise.
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	SHRQ $5, CX
	JZ dotsum

dotloop:
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ dotloop

dotsum:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func addAVX2(dst, src *float32, n int)
// dst[i] += src[i], n a multiple of 32.
TEXT ·addAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $5, CX
	JZ adddone

addloop:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ addloop

adddone:
	VZEROUPPER
	RET
