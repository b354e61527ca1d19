// AVX2 loops of the CPU backend. Each handles the first n elements, n a
// multiple of its stride; the Go caller does the tail.

#include "textflag.h"

// Adam's guard. The float32 path gives the exact float32 results whatever
// the values, but x86 takes a microcode assist (about 100 cycles) for every
// float32 operation on a subnormal value, and the first moments of dead
// units and of rows a step does not touch decay into that range within a
// few hundred steps. So a vector of 8 lanes takes the float64 path below
// (the same bits, no subnormal float64 values) when g, m or v has a lane
// that is neither 0 nor at least 2⁻⁴⁰ in magnitude; then no operation of
// the step meets a subnormal value unless v or g exceed about 2⁸⁰. The guard
// chooses the speed only, never the bits.
DATA adamAbs<>+0(SB)/8, $0x7fffffff7fffffff
DATA adamAbs<>+8(SB)/8, $0x7fffffff7fffffff
DATA adamAbs<>+16(SB)/8, $0x7fffffff7fffffff
DATA adamAbs<>+24(SB)/8, $0x7fffffff7fffffff
GLOBL adamAbs<>(SB), RODATA|NOPTR, $32
// 2⁻⁴⁰'s bits minus one.
DATA adamLo<>+0(SB)/8, $0x2b7fffff2b7fffff
DATA adamLo<>+8(SB)/8, $0x2b7fffff2b7fffff
DATA adamLo<>+16(SB)/8, $0x2b7fffff2b7fffff
DATA adamLo<>+24(SB)/8, $0x2b7fffff2b7fffff
GLOBL adamLo<>(SB), RODATA|NOPTR, $32
DATA adamOnes<>+0(SB)/8, $-1
DATA adamOnes<>+8(SB)/8, $-1
DATA adamOnes<>+16(SB)/8, $-1
DATA adamOnes<>+24(SB)/8, $-1
GLOBL adamOnes<>(SB), RODATA|NOPTR, $32

// ADAM_TINY1 sets y to each lane's magnitude bits of x minus one, wrapping
// (0 becomes the largest unsigned value); ADAM_TINY ands the unsigned
// minimum of that over x into Y1 (with Y2).
#define ADAM_TINY1(x, y) \
	VPAND adamAbs<>(SB), x, y \
	VPADDD adamOnes<>(SB), y, y

#define ADAM_TINY(x) \
	ADAM_TINY1(x, Y2) \
	VPMINUD Y2, Y1, Y1

// ADAM_RND rounds the 4 float64 lanes of y to float32 and back (X15).
#define ADAM_RND(y) \
	VCVTPD2PSY y, X15 \
	VCVTPS2PD X15, y

// ADAM_EXACT4 is the step of 4 lanes at byte offset off from BX*4, every
// float32 operation evaluated in float64 and rounded to float32: exactly
// the float32 result (53 ≥ 2·24 + 2 bits), subnormal results included,
// since no float64 value here is subnormal. Y8–Y14 hold the constants in
// float64.
#define ADAM_EXACT4(off) \
	VCVTPS2PD off(SI)(BX*4), Y0 \
	VCVTPS2PD off(R8)(BX*4), Y1 \
	VMULPD Y1, Y8, Y1 \
	ADAM_RND(Y1) \
	VMULPD Y0, Y10, Y2 \
	ADAM_RND(Y2) \
	VADDPD Y2, Y1, Y1 \
	ADAM_RND(Y1) \
	VMOVUPS X15, off(R8)(BX*4) \
	VCVTPS2PD off(R9)(BX*4), Y3 \
	VMULPD Y3, Y9, Y3 \
	ADAM_RND(Y3) \
	VMULPD Y0, Y11, Y4 \
	ADAM_RND(Y4) \
	VMULPD Y0, Y4, Y4 \
	ADAM_RND(Y4) \
	VADDPD Y4, Y3, Y3 \
	ADAM_RND(Y3) \
	VMOVUPS X15, off(R9)(BX*4) \
	VSQRTPD Y3, Y3 \
	ADAM_RND(Y3) \
	VMULPD Y13, Y3, Y3 \
	ADAM_RND(Y3) \
	VADDPD Y14, Y3, Y3 \
	ADAM_RND(Y3) \
	VMULPD Y1, Y12, Y1 \
	ADAM_RND(Y1) \
	VDIVPD Y3, Y1, Y1 \
	ADAM_RND(Y1) \
	VCVTPS2PD off(DI)(BX*4), Y5 \
	VSUBPD Y1, Y5, Y5 \
	VCVTPD2PSY Y5, X15 \
	VMOVUPS X15, off(DI)(BX*4)

// ADAM_CONST32 and ADAM_CONST64 load the constants of *AX into Y8–Y14 as
// float32 and as float64.
#define ADAM_CONST32 \
	VBROADCASTSS 0(AX), Y8 \
	VBROADCASTSS 4(AX), Y9 \
	VBROADCASTSS 8(AX), Y10 \
	VBROADCASTSS 12(AX), Y11 \
	VBROADCASTSS 16(AX), Y12 \
	VBROADCASTSS 20(AX), Y13 \
	VBROADCASTSS 24(AX), Y14

#define ADAM_CONST64 \
	VBROADCASTSD 32(AX), Y8 \
	VBROADCASTSD 40(AX), Y9 \
	VBROADCASTSD 48(AX), Y10 \
	VBROADCASTSD 56(AX), Y11 \
	VBROADCASTSD 64(AX), Y12 \
	VBROADCASTSD 72(AX), Y13 \
	VBROADCASTSD 80(AX), Y14

// func adamAVX2(param, grad, mom, vel *float32, n int, c *adamConst)
// Same float32 operations, in the same order and unfused, as adamGo, so the
// results are bit-identical (VSQRTPS is correctly rounded like the float64
// square root rounded to float32); vectors with tiny values take the
// float64 path, which adamGo always takes (see the guard above).
TEXT ·adamAVX2(SB), NOSPLIT, $0-48
	MOVQ param+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ mom+16(FP), R8
	MOVQ vel+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ c+40(FP), AX
	ADAM_CONST32 // b1, b2, 1-b1, 1-b2, step, 1/sqrt(c2), eps
	XORQ BX, BX
	SHRQ $3, CX
	JZ adamdone

adamloop:
	VMOVUPS (SI)(BX*4), Y0       // g
	VMOVUPS (R8)(BX*4), Y6       // m
	VMOVUPS (R9)(BX*4), Y7       // v
	VMOVUPS (DI)(BX*4), Y5       // p
	ADAM_TINY1(Y0, Y1)
	ADAM_TINY(Y6)
	ADAM_TINY(Y7)
	VPMAXUD adamLo<>(SB), Y1, Y2
	VPCMPEQD Y2, Y1, Y1          // min ≥ 2⁻⁴⁰'s bits − 1: no tiny lane
	VPTEST adamOnes<>(SB), Y1    // CF: all lanes so
	JCC adamexact
	VMULPS Y6, Y8, Y1            // b1*m
	VMULPS Y0, Y10, Y2           // (1-b1)*g
	VADDPS Y2, Y1, Y1            // m'
	VMOVUPS Y1, (R8)(BX*4)
	VMULPS Y7, Y9, Y3            // b2*v
	VMULPS Y0, Y11, Y4           // (1-b2)*g
	VMULPS Y0, Y4, Y4            // ·g
	VADDPS Y4, Y3, Y3            // v'
	VMOVUPS Y3, (R9)(BX*4)
	VSQRTPS Y3, Y3
	VMULPS Y13, Y3, Y3
	VADDPS Y14, Y3, Y3           // sqrt(v')·rc2 + eps
	VMULPS Y1, Y12, Y1           // step·m'
	VDIVPS Y3, Y1, Y1
	VSUBPS Y1, Y5, Y5
	VMOVUPS Y5, (DI)(BX*4)

adamnext:
	ADDQ $8, BX
	DECQ CX
	JNZ adamloop

adamdone:
	VZEROUPPER
	RET

adamexact:
	ADAM_CONST64
	ADAM_EXACT4(0)
	ADAM_EXACT4(16)
	ADAM_CONST32
	JMP adamnext

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

// func tile4x24AVX2(c, a, w *float32, rows, k, lda, ldc int, bias, mask, prev *float32, ldm, mode int)
// The 4×24 row tile of the narrow Linear kernels. For each block of 4 rows
// (rows a multiple of 4) it sums v[r, 0:24] = Σ_{q<k} a[r·lda+q]·w[24q : 24q+24],
// one FMA chain from +0 in increasing q; adds prev[24r : 24r+24] (the sums
// of earlier k blocks, as the GEMM adds C) when prev is not nil; then by
// mode: 0 nothing, 1 + bias[0:24], 2 + bias then max(0, v) keeping NaN and
// −0, 3 zero where !(mask[r·ldm+j] > 0) (24 values read per row). All 24
// values of each row are stored to c[r·ldc:], rows in increasing order, so
// with ldc < 24 a row's last values land on the next rows before those are
// stored (the caller keeps the last rows off the end). prev may be c when
// ldc is 24.
TEXT ·tile4x24AVX2(SB), NOSPLIT, $0-96
	MOVQ c+0(FP), DX
	MOVQ a+8(FP), SI
	MOVQ w+16(FP), R8
	MOVQ rows+24(FP), BX
	MOVQ lda+40(FP), R11
	SHLQ $2, R11
	MOVQ ldc+48(FP), R12
	SHLQ $2, R12
	MOVQ mask+64(FP), R13
	MOVQ prev+72(FP), R9
	MOVQ ldm+80(FP), R14
	SHLQ $2, R14
	MOVQ mode+88(FP), R15
	TESTQ BX, BX
	JLE t4done

t4block:
	MOVQ SI, DI
	LEAQ (SI)(R11*2), R10
	ADDQ R11, R10
	MOVQ R8, AX
	MOVQ k+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

t4kloop:
	VMOVUPS (AX), Y12
	VMOVUPS 32(AX), Y13
	VMOVUPS 64(AX), Y14
	VBROADCASTSS (DI), Y15
	VFMADD231PS Y12, Y15, Y0
	VFMADD231PS Y13, Y15, Y1
	VFMADD231PS Y14, Y15, Y2
	VBROADCASTSS (DI)(R11*1), Y15
	VFMADD231PS Y12, Y15, Y3
	VFMADD231PS Y13, Y15, Y4
	VFMADD231PS Y14, Y15, Y5
	VBROADCASTSS (DI)(R11*2), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VFMADD231PS Y14, Y15, Y8
	VBROADCASTSS (R10), Y15
	VFMADD231PS Y12, Y15, Y9
	VFMADD231PS Y13, Y15, Y10
	VFMADD231PS Y14, Y15, Y11
	ADDQ $4, DI
	ADDQ $4, R10
	ADDQ $96, AX
	DECQ CX
	JNZ t4kloop

	// Add the earlier k blocks' sums (s + prev, as the GEMM's C += s).
	TESTQ R9, R9
	JZ t4epi
	VADDPS (R9), Y0, Y0
	VADDPS 32(R9), Y1, Y1
	VADDPS 64(R9), Y2, Y2
	VADDPS 96(R9), Y3, Y3
	VADDPS 128(R9), Y4, Y4
	VADDPS 160(R9), Y5, Y5
	VADDPS 192(R9), Y6, Y6
	VADDPS 224(R9), Y7, Y7
	VADDPS 256(R9), Y8, Y8
	VADDPS 288(R9), Y9, Y9
	VADDPS 320(R9), Y10, Y10
	VADDPS 352(R9), Y11, Y11
	ADDQ $384, R9

t4epi:
	VXORPS Y12, Y12, Y12
	CMPQ R15, $3
	JEQ t4mask
	CMPQ R15, $0
	JEQ t4store
	MOVQ bias+56(FP), R10
	VMOVUPS (R10), Y13
	VMOVUPS 32(R10), Y14
	VMOVUPS 64(R10), Y15
	VADDPS Y13, Y0, Y0
	VADDPS Y14, Y1, Y1
	VADDPS Y15, Y2, Y2
	VADDPS Y13, Y3, Y3
	VADDPS Y14, Y4, Y4
	VADDPS Y15, Y5, Y5
	VADDPS Y13, Y6, Y6
	VADDPS Y14, Y7, Y7
	VADDPS Y15, Y8, Y8
	VADDPS Y13, Y9, Y9
	VADDPS Y14, Y10, Y10
	VADDPS Y15, Y11, Y11
	CMPQ R15, $2
	JNE t4store
	VMAXPS Y0, Y12, Y0
	VMAXPS Y1, Y12, Y1
	VMAXPS Y2, Y12, Y2
	VMAXPS Y3, Y12, Y3
	VMAXPS Y4, Y12, Y4
	VMAXPS Y5, Y12, Y5
	VMAXPS Y6, Y12, Y6
	VMAXPS Y7, Y12, Y7
	VMAXPS Y8, Y12, Y8
	VMAXPS Y9, Y12, Y9
	VMAXPS Y10, Y12, Y10
	VMAXPS Y11, Y12, Y11
	JMP t4store

t4mask:
	LEAQ (R13)(R14*2), R10
	ADDQ R14, R10
	VMOVUPS (R13), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y0, Y0
	VMOVUPS 32(R13), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y1, Y1
	VMOVUPS 64(R13), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y2, Y2
	VMOVUPS (R13)(R14*1), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y3, Y3
	VMOVUPS 32(R13)(R14*1), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y4, Y4
	VMOVUPS 64(R13)(R14*1), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y5, Y5
	VMOVUPS (R13)(R14*2), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y6, Y6
	VMOVUPS 32(R13)(R14*2), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y7, Y7
	VMOVUPS 64(R13)(R14*2), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y8, Y8
	VMOVUPS (R10), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y9, Y9
	VMOVUPS 32(R10), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y10, Y10
	VMOVUPS 64(R10), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y11, Y11

t4store:
	LEAQ (DX)(R12*2), R10
	ADDQ R12, R10
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, (DX)(R12*1)
	VMOVUPS Y4, 32(DX)(R12*1)
	VMOVUPS Y5, 64(DX)(R12*1)
	VMOVUPS Y6, (DX)(R12*2)
	VMOVUPS Y7, 32(DX)(R12*2)
	VMOVUPS Y8, 64(DX)(R12*2)
	VMOVUPS Y9, (R10)
	VMOVUPS Y10, 32(R10)
	VMOVUPS Y11, 64(R10)
	LEAQ (SI)(R11*4), SI
	LEAQ (DX)(R12*4), DX
	LEAQ (R13)(R14*4), R13
	SUBQ $4, BX
	JG t4block

t4done:
	VZEROUPPER
	RET

// func tile8x8AVX2(c, a, w *float32, rows, k, lda, ldc int, bias, mask *float32, ldm, mode int)
// The 8×8 row tile of the skinny Linear kernels: for each block of 8 rows
// (rows a multiple of 8), v[r, 0:8] = Σ_{q<k} a[r·lda+q]·w[8q : 8q+8], one FMA
// chain from +0 in increasing q (k ≤ 256: one GEMM k block); then the
// epilogue of mode as in tile4x24AVX2 (8 bias and mask values), and all 8
// values of each row are stored to c[r·ldc:], rows in increasing order.
TEXT ·tile8x8AVX2(SB), NOSPLIT, $0-88
	MOVQ c+0(FP), DX
	MOVQ a+8(FP), SI
	MOVQ w+16(FP), R8
	MOVQ rows+24(FP), BX
	MOVQ lda+40(FP), R11
	SHLQ $2, R11
	MOVQ ldc+48(FP), R12
	SHLQ $2, R12
	MOVQ mask+64(FP), R13
	MOVQ ldm+72(FP), R14
	SHLQ $2, R14
	MOVQ mode+80(FP), R15
	TESTQ BX, BX
	JLE t8done

t8block:
	MOVQ SI, DI
	LEAQ (SI)(R11*2), R9
	ADDQ R11, R9
	LEAQ (R9)(R11*2), R10
	ADDQ R11, R10
	MOVQ R8, AX
	MOVQ k+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

t8kloop:
	VMOVUPS (AX), Y8
	VBROADCASTSS (DI), Y9
	VFMADD231PS Y8, Y9, Y0
	VBROADCASTSS (DI)(R11*1), Y10
	VFMADD231PS Y8, Y10, Y1
	VBROADCASTSS (DI)(R11*2), Y9
	VFMADD231PS Y8, Y9, Y2
	VBROADCASTSS (R9), Y10
	VFMADD231PS Y8, Y10, Y3
	VBROADCASTSS (R9)(R11*1), Y9
	VFMADD231PS Y8, Y9, Y4
	VBROADCASTSS (R9)(R11*2), Y10
	VFMADD231PS Y8, Y10, Y5
	VBROADCASTSS (R10), Y9
	VFMADD231PS Y8, Y9, Y6
	VBROADCASTSS (R10)(R11*1), Y10
	VFMADD231PS Y8, Y10, Y7
	ADDQ $4, DI
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ $32, AX
	DECQ CX
	JNZ t8kloop

	VXORPS Y10, Y10, Y10
	CMPQ R15, $3
	JEQ t8mask
	CMPQ R15, $0
	JEQ t8store
	MOVQ bias+56(FP), AX
	VMOVUPS (AX), Y8
	VADDPS Y8, Y0, Y0
	VADDPS Y8, Y1, Y1
	VADDPS Y8, Y2, Y2
	VADDPS Y8, Y3, Y3
	VADDPS Y8, Y4, Y4
	VADDPS Y8, Y5, Y5
	VADDPS Y8, Y6, Y6
	VADDPS Y8, Y7, Y7
	CMPQ R15, $2
	JNE t8store
	VMAXPS Y0, Y10, Y0
	VMAXPS Y1, Y10, Y1
	VMAXPS Y2, Y10, Y2
	VMAXPS Y3, Y10, Y3
	VMAXPS Y4, Y10, Y4
	VMAXPS Y5, Y10, Y5
	VMAXPS Y6, Y10, Y6
	VMAXPS Y7, Y10, Y7
	JMP t8store

t8mask:
	LEAQ (R13)(R14*2), R9
	ADDQ R14, R9
	LEAQ (R9)(R14*2), R10
	ADDQ R14, R10
	VMOVUPS (R13), Y11
	VCMPPS $0x1e, Y10, Y11, Y11
	VANDPS Y11, Y0, Y0
	VMOVUPS (R13)(R14*1), Y11
	VCMPPS $0x1e, Y10, Y11, Y11
	VANDPS Y11, Y1, Y1
	VMOVUPS (R13)(R14*2), Y11
	VCMPPS $0x1e, Y10, Y11, Y11
	VANDPS Y11, Y2, Y2
	VMOVUPS (R9), Y11
	VCMPPS $0x1e, Y10, Y11, Y11
	VANDPS Y11, Y3, Y3
	VMOVUPS (R9)(R14*1), Y11
	VCMPPS $0x1e, Y10, Y11, Y11
	VANDPS Y11, Y4, Y4
	VMOVUPS (R9)(R14*2), Y11
	VCMPPS $0x1e, Y10, Y11, Y11
	VANDPS Y11, Y5, Y5
	VMOVUPS (R10), Y11
	VCMPPS $0x1e, Y10, Y11, Y11
	VANDPS Y11, Y6, Y6
	VMOVUPS (R10)(R14*1), Y11
	VCMPPS $0x1e, Y10, Y11, Y11
	VANDPS Y11, Y7, Y7

t8store:
	LEAQ (DX)(R12*2), R9
	ADDQ R12, R9
	LEAQ (R9)(R12*2), R10
	ADDQ R12, R10
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, (DX)(R12*1)
	VMOVUPS Y2, (DX)(R12*2)
	VMOVUPS Y3, (R9)
	VMOVUPS Y4, (R9)(R12*1)
	VMOVUPS Y5, (R9)(R12*2)
	VMOVUPS Y6, (R10)
	VMOVUPS Y7, (R10)(R12*1)
	LEAQ (SI)(R11*8), SI
	LEAQ (DX)(R12*8), DX
	LEAQ (R13)(R14*8), R13
	SUBQ $8, BX
	JG t8block

t8done:
	VZEROUPPER
	RET

// func dwAVX2(acc, dy *float32, ldy, rows int, sl *dwSlots)
// The 4×24 outer-product accumulation of the skinny dW: for r < rows, slot
// s < 4 and j < 24, acc[24s+j] = fma(sl.p[s][r·sl.s[s]/4], dy[r·ldy+j],
// acc[24s+j]), in increasing r (sl.s in bytes; 0 repeats one value). It
// reads 24 values of each dy row.
TEXT ·dwAVX2(SB), NOSPLIT, $0-40
	MOVQ acc+0(FP), AX
	MOVQ dy+8(FP), SI
	MOVQ ldy+16(FP), DX
	SHLQ $2, DX
	MOVQ rows+24(FP), CX
	MOVQ sl+32(FP), BX
	MOVQ 0(BX), R8
	MOVQ 8(BX), R9
	MOVQ 16(BX), R10
	MOVQ 24(BX), R11
	MOVQ 32(BX), R12
	MOVQ 40(BX), R13
	MOVQ 48(BX), R14
	MOVQ 56(BX), R15
	VMOVUPS 0(AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS 64(AX), Y2
	VMOVUPS 96(AX), Y3
	VMOVUPS 128(AX), Y4
	VMOVUPS 160(AX), Y5
	VMOVUPS 192(AX), Y6
	VMOVUPS 224(AX), Y7
	VMOVUPS 256(AX), Y8
	VMOVUPS 288(AX), Y9
	VMOVUPS 320(AX), Y10
	VMOVUPS 352(AX), Y11
	TESTQ CX, CX
	JZ dwstore

dwloop:
	VBROADCASTSS (R8), Y12
	VFMADD231PS (SI), Y12, Y0
	VFMADD231PS 32(SI), Y12, Y1
	VFMADD231PS 64(SI), Y12, Y2
	VBROADCASTSS (R9), Y13
	VFMADD231PS (SI), Y13, Y3
	VFMADD231PS 32(SI), Y13, Y4
	VFMADD231PS 64(SI), Y13, Y5
	VBROADCASTSS (R10), Y14
	VFMADD231PS (SI), Y14, Y6
	VFMADD231PS 32(SI), Y14, Y7
	VFMADD231PS 64(SI), Y14, Y8
	VBROADCASTSS (R11), Y15
	VFMADD231PS (SI), Y15, Y9
	VFMADD231PS 32(SI), Y15, Y10
	VFMADD231PS 64(SI), Y15, Y11
	ADDQ R12, R8
	ADDQ R13, R9
	ADDQ R14, R10
	ADDQ R15, R11
	ADDQ DX, SI
	DECQ CX
	JNZ dwloop

dwstore:
	VMOVUPS Y0, 0(AX)
	VMOVUPS Y1, 32(AX)
	VMOVUPS Y2, 64(AX)
	VMOVUPS Y3, 96(AX)
	VMOVUPS Y4, 128(AX)
	VMOVUPS Y5, 160(AX)
	VMOVUPS Y6, 192(AX)
	VMOVUPS Y7, 224(AX)
	VMOVUPS Y8, 256(AX)
	VMOVUPS Y9, 288(AX)
	VMOVUPS Y10, 320(AX)
	VMOVUPS Y11, 352(AX)
	VZEROUPPER
	RET

// func sprows96AVX2(c *float32, ldc, rows int, starts *int32, sstride int, ent *spEnt, b *float32, mask *float32, ldm, mode int)
// 96 columns of rows rows r of C, at c + r·ldc: the sum, in list order, of
// val·B[off : off+96] over the entries [starts[r·sstride],
// starts[r·sstride+1]) of ent (off a
// byte offset from b), one FMA chain from +0; then by mode: 0 nothing, 1 add
// the values already in C, 3 zero where !(mask[r·ldm+j] > 0).
TEXT ·sprows96AVX2(SB), NOSPLIT, $0-80
	MOVQ c+0(FP), DX
	MOVQ ldc+8(FP), R8
	SHLQ $2, R8
	MOVQ rows+16(FP), R11
	MOVQ starts+24(FP), R9
	MOVQ sstride+32(FP), R14
	SHLQ $2, R14
	MOVQ ent+40(FP), R10
	MOVQ b+48(FP), DI
	MOVQ mask+56(FP), R12
	MOVQ ldm+64(FP), R13
	SHLQ $2, R13
	MOVQ mode+72(FP), BX
	VXORPS Y13, Y13, Y13
	TESTQ R11, R11
	JLE sp96done

sp96row:
	MOVLQSX (R9), SI
	MOVLQSX 4(R9), CX
	SUBQ SI, CX
	SHLQ $3, SI
	ADDQ R10, SI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	TESTQ CX, CX
	JLE sp96epi

sp96loop:
	MOVLQSX (SI), AX
	VBROADCASTSS 4(SI), Y12
	ADDQ DI, AX
	VFMADD231PS (AX), Y12, Y0
	VFMADD231PS 32(AX), Y12, Y1
	VFMADD231PS 64(AX), Y12, Y2
	VFMADD231PS 96(AX), Y12, Y3
	VFMADD231PS 128(AX), Y12, Y4
	VFMADD231PS 160(AX), Y12, Y5
	VFMADD231PS 192(AX), Y12, Y6
	VFMADD231PS 224(AX), Y12, Y7
	VFMADD231PS 256(AX), Y12, Y8
	VFMADD231PS 288(AX), Y12, Y9
	VFMADD231PS 320(AX), Y12, Y10
	VFMADD231PS 352(AX), Y12, Y11
	ADDQ $8, SI
	DECQ CX
	JNZ sp96loop

sp96epi:
	CMPQ BX, $1
	JNE sp96noacc
	VADDPS (DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS 64(DX), Y2, Y2
	VADDPS 96(DX), Y3, Y3
	VADDPS 128(DX), Y4, Y4
	VADDPS 160(DX), Y5, Y5
	VADDPS 192(DX), Y6, Y6
	VADDPS 224(DX), Y7, Y7
	VADDPS 256(DX), Y8, Y8
	VADDPS 288(DX), Y9, Y9
	VADDPS 320(DX), Y10, Y10
	VADDPS 352(DX), Y11, Y11

sp96noacc:
	CMPQ BX, $3
	JNE sp96store
	VMOVUPS (R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y0, Y0
	VMOVUPS 32(R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y1, Y1
	VMOVUPS 64(R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y2, Y2
	VMOVUPS 96(R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y3, Y3
	VMOVUPS 128(R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y4, Y4
	VMOVUPS 160(R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y5, Y5
	VMOVUPS 192(R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y6, Y6
	VMOVUPS 224(R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y7, Y7
	VMOVUPS 256(R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y8, Y8
	VMOVUPS 288(R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y9, Y9
	VMOVUPS 320(R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y10, Y10
	VMOVUPS 352(R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y11, Y11

sp96store:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	VMOVUPS Y8, 256(DX)
	VMOVUPS Y9, 288(DX)
	VMOVUPS Y10, 320(DX)
	VMOVUPS Y11, 352(DX)
	ADDQ R14, R9
	ADDQ R8, DX
	ADDQ R13, R12
	DECQ R11
	JNZ sp96row

sp96done:
	VZEROUPPER
	RET

// func sprows32AVX2(c *float32, ldc, rows int, starts *int32, sstride int, ent *spEnt, b *float32, mask *float32, ldm, mode int)
// 32 columns of rows rows r of C, at c + r·ldc: the sum, in list order, of
// val·B[off : off+32] over the entries [starts[r·sstride],
// starts[r·sstride+1]) of ent (off a
// byte offset from b), one FMA chain from +0; then by mode: 0 nothing, 1 add
// the values already in C, 3 zero where !(mask[r·ldm+j] > 0).
TEXT ·sprows32AVX2(SB), NOSPLIT, $0-80
	MOVQ c+0(FP), DX
	MOVQ ldc+8(FP), R8
	SHLQ $2, R8
	MOVQ rows+16(FP), R11
	MOVQ starts+24(FP), R9
	MOVQ sstride+32(FP), R14
	SHLQ $2, R14
	MOVQ ent+40(FP), R10
	MOVQ b+48(FP), DI
	MOVQ mask+56(FP), R12
	MOVQ ldm+64(FP), R13
	SHLQ $2, R13
	MOVQ mode+72(FP), BX
	VXORPS Y13, Y13, Y13
	TESTQ R11, R11
	JLE sp32done

sp32row:
	MOVLQSX (R9), SI
	MOVLQSX 4(R9), CX
	SUBQ SI, CX
	SHLQ $3, SI
	ADDQ R10, SI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	TESTQ CX, CX
	JLE sp32epi

sp32loop:
	MOVLQSX (SI), AX
	VBROADCASTSS 4(SI), Y12
	ADDQ DI, AX
	VFMADD231PS (AX), Y12, Y0
	VFMADD231PS 32(AX), Y12, Y1
	VFMADD231PS 64(AX), Y12, Y2
	VFMADD231PS 96(AX), Y12, Y3
	ADDQ $8, SI
	DECQ CX
	JNZ sp32loop

sp32epi:
	CMPQ BX, $1
	JNE sp32noacc
	VADDPS (DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS 64(DX), Y2, Y2
	VADDPS 96(DX), Y3, Y3

sp32noacc:
	CMPQ BX, $3
	JNE sp32store
	VMOVUPS (R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y0, Y0
	VMOVUPS 32(R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y1, Y1
	VMOVUPS 64(R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y2, Y2
	VMOVUPS 96(R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y3, Y3

sp32store:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	ADDQ R14, R9
	ADDQ R8, DX
	ADDQ R13, R12
	DECQ R11
	JNZ sp32row

sp32done:
	VZEROUPPER
	RET

// func sprows8AVX2(c *float32, ldc, rows int, starts *int32, sstride int, ent *spEnt, b *float32, mask *float32, ldm, mode int)
// 8 columns of rows rows r of C, at c + r·ldc: the sum, in list order, of
// val·B[off : off+8] over the entries [starts[r·sstride],
// starts[r·sstride+1]) of ent (off a
// byte offset from b), one FMA chain from +0; then by mode: 0 nothing, 1 add
// the values already in C, 3 zero where !(mask[r·ldm+j] > 0).
TEXT ·sprows8AVX2(SB), NOSPLIT, $0-80
	MOVQ c+0(FP), DX
	MOVQ ldc+8(FP), R8
	SHLQ $2, R8
	MOVQ rows+16(FP), R11
	MOVQ starts+24(FP), R9
	MOVQ sstride+32(FP), R14
	SHLQ $2, R14
	MOVQ ent+40(FP), R10
	MOVQ b+48(FP), DI
	MOVQ mask+56(FP), R12
	MOVQ ldm+64(FP), R13
	SHLQ $2, R13
	MOVQ mode+72(FP), BX
	VXORPS Y13, Y13, Y13
	TESTQ R11, R11
	JLE sp8done

sp8row:
	MOVLQSX (R9), SI
	MOVLQSX 4(R9), CX
	SUBQ SI, CX
	SHLQ $3, SI
	ADDQ R10, SI
	VXORPS Y0, Y0, Y0
	TESTQ CX, CX
	JLE sp8epi

sp8loop:
	MOVLQSX (SI), AX
	VBROADCASTSS 4(SI), Y12
	ADDQ DI, AX
	VFMADD231PS (AX), Y12, Y0
	ADDQ $8, SI
	DECQ CX
	JNZ sp8loop

sp8epi:
	CMPQ BX, $1
	JNE sp8noacc
	VADDPS (DX), Y0, Y0

sp8noacc:
	CMPQ BX, $3
	JNE sp8store
	VMOVUPS (R12), Y14
	VCMPPS $0x1e, Y13, Y14, Y14
	VANDPS Y14, Y0, Y0

sp8store:
	VMOVUPS Y0, (DX)
	ADDQ R14, R9
	ADDQ R8, DX
	ADDQ R13, R12
	DECQ R11
	JNZ sp8row

sp8done:
	VZEROUPPER
	RET

// func finiteAVX2(v *float32, n int) bool
// Reports whether none of the first n values (n a multiple of 32) is an
// infinity or a NaN (all exponent bits set).
TEXT ·finiteAVX2(SB), NOSPLIT, $0-17
	MOVQ v+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0x7f800000, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VPXOR Y14, Y14, Y14
	SHRQ $5, CX
	JZ findone

finloop:
	VANDPS (SI), Y15, Y0
	VANDPS 32(SI), Y15, Y1
	VANDPS 64(SI), Y15, Y2
	VANDPS 96(SI), Y15, Y3
	VPCMPEQD Y15, Y0, Y0
	VPCMPEQD Y15, Y1, Y1
	VPCMPEQD Y15, Y2, Y2
	VPCMPEQD Y15, Y3, Y3
	VPOR Y0, Y1, Y0
	VPOR Y2, Y3, Y2
	VPOR Y0, Y14, Y14
	VPOR Y2, Y14, Y14
	ADDQ $128, SI
	DECQ CX
	JNZ finloop

findone:
	VPTEST Y14, Y14
	SETEQ ret+16(FP)
	VZEROUPPER
	RET


// func prefetchRowsAsm(base *float32, rows *int32, n int, rowBytes int)
// PREFETCHT0 for every cache line of rows[0:n] of a table of rowBytes-byte
// rows at base: the lines at 64-byte steps from each row's start and the
// one holding its last byte. Prefetches never fault, so a row outside the
// table costs nothing but the hint; callers check their rows anyway.
TEXT ·prefetchRowsAsm(SB), NOSPLIT, $0-32
	MOVQ base+0(FP), SI
	MOVQ rows+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ rowBytes+24(FP), DX
	TESTQ DX, DX
	JLE  pfdone
pfrow:
	TESTQ CX, CX
	JZ   pfdone
	MOVLQSX (DI), AX
	IMULQ DX, AX
	LEAQ (SI)(AX*1), R8
	LEAQ -1(R8)(DX*1), R10 // last byte of the row
pfline:
	PREFETCHT0 (R8)
	ADDQ $64, R8
	CMPQ R8, R10
	JLE  pfline
	PREFETCHT0 (R10)
	ADDQ $4, DI
	DECQ CX
	JMP  pfrow
pfdone:
	RET

// func tile4x24AVX512(c, a, w *float32, rows, k, lda, ldc int, bias, mask, prev *float32, ldm, mode int)
// tile4x24AVX2 on AVX-512: each row's columns 0–15 in one zmm and 16–23 in
// one ymm, 8 FMAs a k step instead of 12. Every lane runs the same FMA
// chain as in tile4x24AVX2, from +0 in increasing q, and the epilogue is the
// same operation per lane, so the two give the same bits.
TEXT ·tile4x24AVX512(SB), NOSPLIT, $0-96
	MOVQ c+0(FP), DX
	MOVQ a+8(FP), SI
	MOVQ w+16(FP), R8
	MOVQ rows+24(FP), BX
	MOVQ lda+40(FP), R11
	SHLQ $2, R11
	MOVQ ldc+48(FP), R12
	SHLQ $2, R12
	MOVQ mask+64(FP), R13
	MOVQ prev+72(FP), R9
	MOVQ ldm+80(FP), R14
	SHLQ $2, R14
	MOVQ mode+88(FP), R15
	TESTQ BX, BX
	JLE t5done

t5block:
	MOVQ SI, DI
	LEAQ (SI)(R11*2), R10
	ADDQ R11, R10
	MOVQ R8, AX
	MOVQ k+32(FP), CX
	VXORPS Z0, Z0, Z0
	VXORPS Y1, Y1, Y1
	VXORPS Z2, Z2, Z2
	VXORPS Y3, Y3, Y3
	VXORPS Z4, Z4, Z4
	VXORPS Y5, Y5, Y5
	VXORPS Z6, Z6, Z6
	VXORPS Y7, Y7, Y7

t5kloop:
	VMOVUPS (AX), Z12
	VMOVUPS 64(AX), Y13
	VBROADCASTSS (DI), Z15
	VFMADD231PS Z12, Z15, Z0
	VFMADD231PS Y13, Y15, Y1
	VBROADCASTSS (DI)(R11*1), Z15
	VFMADD231PS Z12, Z15, Z2
	VFMADD231PS Y13, Y15, Y3
	VBROADCASTSS (DI)(R11*2), Z15
	VFMADD231PS Z12, Z15, Z4
	VFMADD231PS Y13, Y15, Y5
	VBROADCASTSS (R10), Z15
	VFMADD231PS Z12, Z15, Z6
	VFMADD231PS Y13, Y15, Y7
	ADDQ $4, DI
	ADDQ $4, R10
	ADDQ $96, AX
	DECQ CX
	JNZ t5kloop

	// Add the earlier k blocks' sums (s + prev, as the GEMM's C += s).
	TESTQ R9, R9
	JZ t5epi
	VADDPS (R9), Z0, Z0
	VADDPS 64(R9), Y1, Y1
	VADDPS 96(R9), Z2, Z2
	VADDPS 160(R9), Y3, Y3
	VADDPS 192(R9), Z4, Z4
	VADDPS 256(R9), Y5, Y5
	VADDPS 288(R9), Z6, Z6
	VADDPS 352(R9), Y7, Y7
	ADDQ $384, R9

t5epi:
	VXORPS Z12, Z12, Z12
	CMPQ R15, $3
	JEQ t5mask
	CMPQ R15, $0
	JEQ t5store
	MOVQ bias+56(FP), R10
	VMOVUPS (R10), Z13
	VMOVUPS 64(R10), Y14
	VADDPS Z13, Z0, Z0
	VADDPS Y14, Y1, Y1
	VADDPS Z13, Z2, Z2
	VADDPS Y14, Y3, Y3
	VADDPS Z13, Z4, Z4
	VADDPS Y14, Y5, Y5
	VADDPS Z13, Z6, Z6
	VADDPS Y14, Y7, Y7
	CMPQ R15, $2
	JNE t5store
	VMAXPS Z0, Z12, Z0
	VMAXPS Y1, Y12, Y1
	VMAXPS Z2, Z12, Z2
	VMAXPS Y3, Y12, Y3
	VMAXPS Z4, Z12, Z4
	VMAXPS Y5, Y12, Y5
	VMAXPS Z6, Z12, Z6
	VMAXPS Y7, Y12, Y7
	JMP t5store

t5mask:
	LEAQ (R13)(R14*2), R10
	ADDQ R14, R10
	VMOVUPS (R13), Z13
	VCMPPS $0x1e, Z12, Z13, K2
	VMOVUPS.Z Z0, K2, Z0
	VMOVUPS 64(R13), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y1, Y1
	VMOVUPS (R13)(R14*1), Z13
	VCMPPS $0x1e, Z12, Z13, K2
	VMOVUPS.Z Z2, K2, Z2
	VMOVUPS 64(R13)(R14*1), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y3, Y3
	VMOVUPS (R13)(R14*2), Z13
	VCMPPS $0x1e, Z12, Z13, K2
	VMOVUPS.Z Z4, K2, Z4
	VMOVUPS 64(R13)(R14*2), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y5, Y5
	VMOVUPS (R10), Z13
	VCMPPS $0x1e, Z12, Z13, K2
	VMOVUPS.Z Z6, K2, Z6
	VMOVUPS 64(R10), Y13
	VCMPPS $0x1e, Y12, Y13, Y13
	VANDPS Y13, Y7, Y7

t5store:
	LEAQ (DX)(R12*2), R10
	ADDQ R12, R10
	VMOVUPS Z0, (DX)
	VMOVUPS Y1, 64(DX)
	VMOVUPS Z2, (DX)(R12*1)
	VMOVUPS Y3, 64(DX)(R12*1)
	VMOVUPS Z4, (DX)(R12*2)
	VMOVUPS Y5, 64(DX)(R12*2)
	VMOVUPS Z6, (R10)
	VMOVUPS Y7, 64(R10)
	LEAQ (SI)(R11*4), SI
	LEAQ (DX)(R12*4), DX
	LEAQ (R13)(R14*4), R13
	SUBQ $4, BX
	JG t5block

t5done:
	VZEROUPPER
	RET

// func sprows96AVX512(c *float32, ldc, rows int, starts *int32, sstride int, ent *spEnt, b *float32, mask *float32, ldm, mode int)
// sprows96AVX2 on AVX-512: the 96 columns in 6 zmm, 6 FMAs an entry
// instead of 12, each lane's FMA chain and epilogue the same, so the two
// give the same bits.
TEXT ·sprows96AVX512(SB), NOSPLIT, $0-80
	MOVQ c+0(FP), DX
	MOVQ ldc+8(FP), R8
	SHLQ $2, R8
	MOVQ rows+16(FP), R11
	MOVQ starts+24(FP), R9
	MOVQ sstride+32(FP), R14
	SHLQ $2, R14
	MOVQ ent+40(FP), R10
	MOVQ b+48(FP), DI
	MOVQ mask+56(FP), R12
	MOVQ ldm+64(FP), R13
	SHLQ $2, R13
	MOVQ mode+72(FP), BX
	VXORPS Z13, Z13, Z13
	TESTQ R11, R11
	JLE sp5done

sp5row:
	MOVLQSX (R9), SI
	MOVLQSX 4(R9), CX
	SUBQ SI, CX
	SHLQ $3, SI
	ADDQ R10, SI
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	TESTQ CX, CX
	JLE sp5epi

sp5loop:
	MOVLQSX (SI), AX
	VBROADCASTSS 4(SI), Z12
	ADDQ DI, AX
	VFMADD231PS (AX), Z12, Z0
	VFMADD231PS 64(AX), Z12, Z1
	VFMADD231PS 128(AX), Z12, Z2
	VFMADD231PS 192(AX), Z12, Z3
	VFMADD231PS 256(AX), Z12, Z4
	VFMADD231PS 320(AX), Z12, Z5
	ADDQ $8, SI
	DECQ CX
	JNZ sp5loop

sp5epi:
	CMPQ BX, $1
	JNE sp5noacc
	VADDPS (DX), Z0, Z0
	VADDPS 64(DX), Z1, Z1
	VADDPS 128(DX), Z2, Z2
	VADDPS 192(DX), Z3, Z3
	VADDPS 256(DX), Z4, Z4
	VADDPS 320(DX), Z5, Z5

sp5noacc:
	CMPQ BX, $3
	JNE sp5store
	VMOVUPS (R12), Z14
	VCMPPS $0x1e, Z13, Z14, K2
	VMOVUPS.Z Z0, K2, Z0
	VMOVUPS 64(R12), Z14
	VCMPPS $0x1e, Z13, Z14, K2
	VMOVUPS.Z Z1, K2, Z1
	VMOVUPS 128(R12), Z14
	VCMPPS $0x1e, Z13, Z14, K2
	VMOVUPS.Z Z2, K2, Z2
	VMOVUPS 192(R12), Z14
	VCMPPS $0x1e, Z13, Z14, K2
	VMOVUPS.Z Z3, K2, Z3
	VMOVUPS 256(R12), Z14
	VCMPPS $0x1e, Z13, Z14, K2
	VMOVUPS.Z Z4, K2, Z4
	VMOVUPS 320(R12), Z14
	VCMPPS $0x1e, Z13, Z14, K2
	VMOVUPS.Z Z5, K2, Z5

sp5store:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, 128(DX)
	VMOVUPS Z3, 192(DX)
	VMOVUPS Z4, 256(DX)
	VMOVUPS Z5, 320(DX)
	ADDQ R14, R9
	ADDQ R8, DX
	ADDQ R13, R12
	DECQ R11
	JNZ sp5row

sp5done:
	VZEROUPPER
	RET

// func dwAVX512(acc, dy *float32, ldy, rows int, sl *dwSlots)
// dwAVX2 on AVX-512: each slot's columns 0–15 in one zmm and 16–23 in one
// ymm, 8 FMAs a row instead of 12, every lane's FMA chain the same, so the
// two give the same bits.
TEXT ·dwAVX512(SB), NOSPLIT, $0-40
	MOVQ acc+0(FP), AX
	MOVQ dy+8(FP), SI
	MOVQ ldy+16(FP), DX
	SHLQ $2, DX
	MOVQ rows+24(FP), CX
	MOVQ sl+32(FP), BX
	MOVQ 0(BX), R8
	MOVQ 8(BX), R9
	MOVQ 16(BX), R10
	MOVQ 24(BX), R11
	MOVQ 32(BX), R12
	MOVQ 40(BX), R13
	MOVQ 48(BX), R14
	MOVQ 56(BX), R15
	VMOVUPS 0(AX), Z0
	VMOVUPS 64(AX), Y1
	VMOVUPS 96(AX), Z2
	VMOVUPS 160(AX), Y3
	VMOVUPS 192(AX), Z4
	VMOVUPS 256(AX), Y5
	VMOVUPS 288(AX), Z6
	VMOVUPS 352(AX), Y7
	TESTQ CX, CX
	JZ dw5store

dw5loop:
	VMOVUPS (SI), Z8
	VMOVUPS 64(SI), Y9
	VBROADCASTSS (R8), Z12
	VFMADD231PS Z8, Z12, Z0
	VFMADD231PS Y9, Y12, Y1
	VBROADCASTSS (R9), Z13
	VFMADD231PS Z8, Z13, Z2
	VFMADD231PS Y9, Y13, Y3
	VBROADCASTSS (R10), Z14
	VFMADD231PS Z8, Z14, Z4
	VFMADD231PS Y9, Y14, Y5
	VBROADCASTSS (R11), Z15
	VFMADD231PS Z8, Z15, Z6
	VFMADD231PS Y9, Y15, Y7
	ADDQ R12, R8
	ADDQ R13, R9
	ADDQ R14, R10
	ADDQ R15, R11
	ADDQ DX, SI
	DECQ CX
	JNZ dw5loop

dw5store:
	VMOVUPS Z0, 0(AX)
	VMOVUPS Y1, 64(AX)
	VMOVUPS Z2, 96(AX)
	VMOVUPS Y3, 160(AX)
	VMOVUPS Z4, 192(AX)
	VMOVUPS Y5, 256(AX)
	VMOVUPS Z6, 288(AX)
	VMOVUPS Y7, 352(AX)
	VZEROUPPER
	RET
