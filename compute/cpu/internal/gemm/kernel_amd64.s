// AVX2/FMA single-precision GEMM micro-kernel for amd64.

#include "textflag.h"

// STEP is one rank-1 update of the 6×16 accumulator tile Y0–Y11: one row of
// the packed B micro-panel (16 values, Y12:Y13) times one column of the packed
// A micro-panel (6 values, broadcast into Y14/Y15 in turn). It advances SI by
// 6 floats and DI by 16.
#define STEP \
	VMOVUPS (DI), Y12; \
	VMOVUPS 32(DI), Y13; \
	VBROADCASTSS (SI), Y14; \
	VFMADD231PS Y12, Y14, Y0; \
	VFMADD231PS Y13, Y14, Y1; \
	VBROADCASTSS 4(SI), Y15; \
	VFMADD231PS Y12, Y15, Y2; \
	VFMADD231PS Y13, Y15, Y3; \
	VBROADCASTSS 8(SI), Y14; \
	VFMADD231PS Y12, Y14, Y4; \
	VFMADD231PS Y13, Y14, Y5; \
	VBROADCASTSS 12(SI), Y15; \
	VFMADD231PS Y12, Y15, Y6; \
	VFMADD231PS Y13, Y15, Y7; \
	VBROADCASTSS 16(SI), Y14; \
	VFMADD231PS Y12, Y14, Y8; \
	VFMADD231PS Y13, Y14, Y9; \
	VBROADCASTSS 20(SI), Y15; \
	VFMADD231PS Y12, Y15, Y10; \
	VFMADD231PS Y13, Y15, Y11; \
	ADDQ $24, SI; \
	ADDQ $64, DI

// MASK2 zeroes the two accumulators of one row where the mask row at addr is
// not > 0 (ordered: a NaN mask value zeroes too). Y14 must hold zeros.
#define MASK2(addr, addr32, ra, rb) \
	VMOVUPS addr, Y15; \
	VCMPPS $0x1e, Y14, Y15, Y15; \
	VANDPS Y15, ra, ra; \
	VMOVUPS addr32, Y15; \
	VCMPPS $0x1e, Y14, Y15, Y15; \
	VANDPS Y15, rb, rb

// func kern6x16n(kc int, a, b, c *float32, ldc int, flags int, bias, mask *float32, ldm int, ntiles int)
// The 6×16 micro-kernel over ntiles ≥ 1 consecutive full tiles down the
// rows: tile t reads the A micro-panel at a + t·6·kc (kc columns of 6
// values) and the B micro-panel at b (kc rows of 16 values), and writes rows
// 6t… of C with the epilogue selected by flags: 1 add the tile already in C,
// 2 add bias[j] to column j, 4 ReLU, 8 zero where the mask (rows 6t…, stride
// ldm) is not > 0.
TEXT ·kern6x16n(SB), NOSPLIT, $32-80
	MOVQ a+8(FP), AX
	MOVQ AX, ta-8(SP)
	MOVQ c+24(FP), AX
	MOVQ AX, tc-16(SP)
	MOVQ mask+56(FP), AX
	MOVQ AX, tm-24(SP)
	MOVQ ntiles+72(FP), AX
	MOVQ AX, tn-32(SP)

ntile:
	MOVQ kc+0(FP), CX
	MOVQ ta-8(SP), SI
	MOVQ b+16(FP), DI
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
	MOVQ CX, BX
	SHRQ $2, BX
	ANDQ $3, CX
	TESTQ BX, BX
	JZ ntail

nloop4:
	PREFETCHT0 384(SI)
	STEP
	STEP
	PREFETCHT0 512(DI)
	STEP
	STEP
	DECQ BX
	JNZ nloop4

ntail:
	TESTQ CX, CX
	JZ nepilogue

nloop1:
	STEP
	DECQ CX
	JNZ nloop1

nepilogue:
	MOVQ tc-16(SP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	ADDQ DX, R9
	MOVQ flags+40(FP), AX

	// flags&1: add the tile already in C.
	TESTQ $1, AX
	JZ nnobeta
	VADDPS (DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS (DX)(R8*1), Y2, Y2
	VADDPS 32(DX)(R8*1), Y3, Y3
	VADDPS (DX)(R8*2), Y4, Y4
	VADDPS 32(DX)(R8*2), Y5, Y5
	VADDPS (R9), Y6, Y6
	VADDPS 32(R9), Y7, Y7
	VADDPS (R9)(R8*1), Y8, Y8
	VADDPS 32(R9)(R8*1), Y9, Y9
	VADDPS (R9)(R8*2), Y10, Y10
	VADDPS 32(R9)(R8*2), Y11, Y11

nnobeta:
	// flags&2: add bias[j] to column j.
	TESTQ $2, AX
	JZ nnobias
	MOVQ bias+48(FP), R10
	VMOVUPS (R10), Y12
	VMOVUPS 32(R10), Y13
	VADDPS Y12, Y0, Y0
	VADDPS Y13, Y1, Y1
	VADDPS Y12, Y2, Y2
	VADDPS Y13, Y3, Y3
	VADDPS Y12, Y4, Y4
	VADDPS Y13, Y5, Y5
	VADDPS Y12, Y6, Y6
	VADDPS Y13, Y7, Y7
	VADDPS Y12, Y8, Y8
	VADDPS Y13, Y9, Y9
	VADDPS Y12, Y10, Y10
	VADDPS Y13, Y11, Y11

nnobias:
	// flags&4: ReLU, max(0, v) keeping NaN and −0 (VMAXPS returns its
	// second source operand, v, when either is NaN or both are zero).
	TESTQ $4, AX
	JZ nnorelu
	VXORPS Y14, Y14, Y14
	VMAXPS Y0, Y14, Y0
	VMAXPS Y1, Y14, Y1
	VMAXPS Y2, Y14, Y2
	VMAXPS Y3, Y14, Y3
	VMAXPS Y4, Y14, Y4
	VMAXPS Y5, Y14, Y5
	VMAXPS Y6, Y14, Y6
	VMAXPS Y7, Y14, Y7
	VMAXPS Y8, Y14, Y8
	VMAXPS Y9, Y14, Y9
	VMAXPS Y10, Y14, Y10
	VMAXPS Y11, Y14, Y11

nnorelu:
	// flags&8: zero where the mask tile is not > 0.
	TESTQ $8, AX
	JZ nnomask
	MOVQ tm-24(SP), R10
	MOVQ ldm+64(FP), R11
	SHLQ $2, R11
	LEAQ (R11)(R11*2), R12
	ADDQ R10, R12
	VXORPS Y14, Y14, Y14
	MASK2((R10), 32(R10), Y0, Y1)
	MASK2((R10)(R11*1), 32(R10)(R11*1), Y2, Y3)
	MASK2((R10)(R11*2), 32(R10)(R11*2), Y4, Y5)
	MASK2((R12), 32(R12), Y6, Y7)
	MASK2((R12)(R11*1), 32(R12)(R11*1), Y8, Y9)
	MASK2((R12)(R11*2), 32(R12)(R11*2), Y10, Y11)

nnomask:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, (DX)(R8*1)
	VMOVUPS Y3, 32(DX)(R8*1)
	VMOVUPS Y4, (DX)(R8*2)
	VMOVUPS Y5, 32(DX)(R8*2)
	VMOVUPS Y6, (R9)
	VMOVUPS Y7, 32(R9)
	VMOVUPS Y8, (R9)(R8*1)
	VMOVUPS Y9, 32(R9)(R8*1)
	VMOVUPS Y10, (R9)(R8*2)
	VMOVUPS Y11, 32(R9)(R8*2)

	// Next tile: A by 6·kc floats, C and the mask by 6 rows.
	MOVQ kc+0(FP), AX
	IMULQ $24, AX
	ADDQ AX, ta-8(SP)
	IMULQ $6, R8
	ADDQ R8, tc-16(SP)
	MOVQ ldm+64(FP), AX
	IMULQ $24, AX
	ADDQ AX, tm-24(SP)
	DECQ tn-32(SP)
	JNZ ntile
	VZEROUPPER
	RET


// func fmaPeak(n int) float32
// Runs n iterations of 12 independent 8-wide FMAs (192 flops per iteration)
// on registers only: the machine's FMA peak on one core.
TEXT ·fmaPeak(SB), NOSPLIT, $0-12
	MOVQ n+0(FP), CX
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
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	TESTQ CX, CX
	JZ peakdone

peakloop:
	VFMADD231PS Y12, Y13, Y0
	VFMADD231PS Y12, Y13, Y1
	VFMADD231PS Y12, Y13, Y2
	VFMADD231PS Y12, Y13, Y3
	VFMADD231PS Y12, Y13, Y4
	VFMADD231PS Y12, Y13, Y5
	VFMADD231PS Y12, Y13, Y6
	VFMADD231PS Y12, Y13, Y7
	VFMADD231PS Y12, Y13, Y8
	VFMADD231PS Y12, Y13, Y9
	VFMADD231PS Y12, Y13, Y10
	VFMADD231PS Y12, Y13, Y11
	DECQ CX
	JNZ peakloop

peakdone:
	VADDPS Y1, Y0, Y0
	MOVSS X0, ret+8(FP)
	VZEROUPPER
	RET

// func sprows96(rows int, starts *int32, sstride int, ent *spEntry, b, c *float32, ldc int, flags int, bias, mask *float32, ldm int)
// For each of rows rows r: C row r (96 columns, at c + r·ldc) =
// Σ over the entries [starts[r·sstride], starts[r·sstride+1]) of ent of
// val·B[off], B the packed 96-wide panel at b (entry offsets count rows of
// 32 floats), then the epilogue selected by flags as in kern6x16n (the
// mask row r at mask + r·ldm).
TEXT ·sprows96(SB), NOSPLIT, $0-88
	MOVQ rows+0(FP), R11
	MOVQ starts+8(FP), R9
	MOVQ sstride+16(FP), R10
	SHLQ $2, R10
	MOVQ b+32(FP), DI
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R8
	SHLQ $2, R8
	MOVQ flags+56(FP), BX
	MOVQ mask+72(FP), R12
	MOVQ ldm+80(FP), R13
	SHLQ $2, R13
	TESTQ R11, R11
	JZ sprows96done
sprows96row:
	MOVLQSX (R9), SI
	MOVLQSX 4(R9), CX
	SUBQ SI, CX
	SHLQ $3, SI
	ADDQ ent+24(FP), SI
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
	JZ sprows96epi
sprows96loop:
	MOVLQSX (SI), AX
	LEAQ (AX)(AX*2), AX
	VBROADCASTSS 4(SI), Y12
	ADDQ DI, AX
	VFMADD231PS 0(AX), Y12, Y0
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
	JNZ sprows96loop
sprows96epi:
	TESTQ $1, BX
	JZ sprows96noacc
	VADDPS 0(DX), Y0, Y0
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
sprows96noacc:
	TESTQ $2, BX
	JZ sprows96nobias
	MOVQ bias+64(FP), AX
	VADDPS 0(AX), Y0, Y0
	VADDPS 32(AX), Y1, Y1
	VADDPS 64(AX), Y2, Y2
	VADDPS 96(AX), Y3, Y3
	VADDPS 128(AX), Y4, Y4
	VADDPS 160(AX), Y5, Y5
	VADDPS 192(AX), Y6, Y6
	VADDPS 224(AX), Y7, Y7
	VADDPS 256(AX), Y8, Y8
	VADDPS 288(AX), Y9, Y9
	VADDPS 320(AX), Y10, Y10
	VADDPS 352(AX), Y11, Y11
sprows96nobias:
	VXORPS Y14, Y14, Y14
	TESTQ $4, BX
	JZ sprows96norelu
	VMAXPS Y0, Y14, Y0
	VMAXPS Y1, Y14, Y1
	VMAXPS Y2, Y14, Y2
	VMAXPS Y3, Y14, Y3
	VMAXPS Y4, Y14, Y4
	VMAXPS Y5, Y14, Y5
	VMAXPS Y6, Y14, Y6
	VMAXPS Y7, Y14, Y7
	VMAXPS Y8, Y14, Y8
	VMAXPS Y9, Y14, Y9
	VMAXPS Y10, Y14, Y10
	VMAXPS Y11, Y14, Y11
sprows96norelu:
	TESTQ $8, BX
	JZ sprows96store
	VMOVUPS 0(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y0, Y0
	VMOVUPS 32(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y1, Y1
	VMOVUPS 64(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y2, Y2
	VMOVUPS 96(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y3, Y3
	VMOVUPS 128(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y4, Y4
	VMOVUPS 160(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y5, Y5
	VMOVUPS 192(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y6, Y6
	VMOVUPS 224(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y7, Y7
	VMOVUPS 256(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y8, Y8
	VMOVUPS 288(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y9, Y9
	VMOVUPS 320(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y10, Y10
	VMOVUPS 352(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y11, Y11
sprows96store:
	VMOVUPS Y0, 0(DX)
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
	ADDQ R10, R9
	ADDQ R8, DX
	ADDQ R13, R12
	DECQ R11
	JNZ sprows96row
sprows96done:
	VZEROUPPER
	RET

// func sprows32(rows int, starts *int32, sstride int, ent *spEntry, b, c *float32, ldc int, flags int, bias, mask *float32, ldm int)
// For each of rows rows r: C row r (32 columns, at c + r·ldc) =
// Σ over the entries [starts[r·sstride], starts[r·sstride+1]) of ent of
// val·B[off], B the packed 32-wide panel at b (entry offsets count rows of
// 32 floats), then the epilogue selected by flags as in kern6x16n (the
// mask row r at mask + r·ldm).
TEXT ·sprows32(SB), NOSPLIT, $0-88
	MOVQ rows+0(FP), R11
	MOVQ starts+8(FP), R9
	MOVQ sstride+16(FP), R10
	SHLQ $2, R10
	MOVQ b+32(FP), DI
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R8
	SHLQ $2, R8
	MOVQ flags+56(FP), BX
	MOVQ mask+72(FP), R12
	MOVQ ldm+80(FP), R13
	SHLQ $2, R13
	TESTQ R11, R11
	JZ sprows32done
sprows32row:
	MOVLQSX (R9), SI
	MOVLQSX 4(R9), CX
	SUBQ SI, CX
	SHLQ $3, SI
	ADDQ ent+24(FP), SI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	TESTQ CX, CX
	JZ sprows32epi
sprows32loop:
	MOVLQSX (SI), AX
	VBROADCASTSS 4(SI), Y12
	ADDQ DI, AX
	VFMADD231PS 0(AX), Y12, Y0
	VFMADD231PS 32(AX), Y12, Y1
	VFMADD231PS 64(AX), Y12, Y2
	VFMADD231PS 96(AX), Y12, Y3
	ADDQ $8, SI
	DECQ CX
	JNZ sprows32loop
sprows32epi:
	TESTQ $1, BX
	JZ sprows32noacc
	VADDPS 0(DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS 64(DX), Y2, Y2
	VADDPS 96(DX), Y3, Y3
sprows32noacc:
	TESTQ $2, BX
	JZ sprows32nobias
	MOVQ bias+64(FP), AX
	VADDPS 0(AX), Y0, Y0
	VADDPS 32(AX), Y1, Y1
	VADDPS 64(AX), Y2, Y2
	VADDPS 96(AX), Y3, Y3
sprows32nobias:
	VXORPS Y14, Y14, Y14
	TESTQ $4, BX
	JZ sprows32norelu
	VMAXPS Y0, Y14, Y0
	VMAXPS Y1, Y14, Y1
	VMAXPS Y2, Y14, Y2
	VMAXPS Y3, Y14, Y3
sprows32norelu:
	TESTQ $8, BX
	JZ sprows32store
	VMOVUPS 0(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y0, Y0
	VMOVUPS 32(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y1, Y1
	VMOVUPS 64(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y2, Y2
	VMOVUPS 96(R12), Y15
	VCMPPS $0x1e, Y14, Y15, Y15
	VANDPS Y15, Y3, Y3
sprows32store:
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	ADDQ R10, R9
	ADDQ R8, DX
	ADDQ R13, R12
	DECQ R11
	JNZ sprows32row
sprows32done:
	VZEROUPPER
	RET

// func copy16(d, s *float32, lds, kb int)
// d[q·16 : q·16+16] = s[q·lds : q·lds+16] for q < kb.
TEXT ·copy16(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ lds+16(FP), DX
	SHLQ $2, DX
	MOVQ kb+24(FP), CX
	TESTQ CX, CX
	JZ copy16done

copy16loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ DX, SI
	ADDQ $64, DI
	DECQ CX
	JNZ copy16loop

copy16done:
	VZEROUPPER
	RET

// func trans8(d *float32, ldd int, s *float32, lds int, nq int)
// For nq blocks of 8 columns q: d[q·ldd+r] = s[r·lds+q], r < 8, q < 8·nq.
TEXT ·trans8(SB), NOSPLIT, $0-40
	MOVQ d+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ s+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9
	MOVQ nq+32(FP), CX
	TESTQ CX, CX
	JZ trans8done
trans8loop:
	MOVQ SI, AX
	VMOVUPS (AX), Y0
	ADDQ R9, AX
	VMOVUPS (AX), Y1
	ADDQ R9, AX
	VMOVUPS (AX), Y2
	ADDQ R9, AX
	VMOVUPS (AX), Y3
	ADDQ R9, AX
	VMOVUPS (AX), Y4
	ADDQ R9, AX
	VMOVUPS (AX), Y5
	ADDQ R9, AX
	VMOVUPS (AX), Y6
	ADDQ R9, AX
	VMOVUPS (AX), Y7
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	MOVQ DI, AX
	VPERM2F128 $0x20, Y4, Y0, Y8
	VMOVUPS Y8, (AX)
	ADDQ R8, AX
	VPERM2F128 $0x20, Y5, Y1, Y8
	VMOVUPS Y8, (AX)
	ADDQ R8, AX
	VPERM2F128 $0x20, Y6, Y2, Y8
	VMOVUPS Y8, (AX)
	ADDQ R8, AX
	VPERM2F128 $0x20, Y7, Y3, Y8
	VMOVUPS Y8, (AX)
	ADDQ R8, AX
	VPERM2F128 $0x31, Y4, Y0, Y8
	VMOVUPS Y8, (AX)
	ADDQ R8, AX
	VPERM2F128 $0x31, Y5, Y1, Y8
	VMOVUPS Y8, (AX)
	ADDQ R8, AX
	VPERM2F128 $0x31, Y6, Y2, Y8
	VMOVUPS Y8, (AX)
	ADDQ R8, AX
	VPERM2F128 $0x31, Y7, Y3, Y8
	VMOVUPS Y8, (AX)
	ADDQ $32, SI
	LEAQ (DI)(R8*8), DI
	DECQ CX
	JNZ trans8loop
trans8done:
	VZEROUPPER
	RET

// func trans6(d *float32, ldd int, s *float32, lds int, nq int)
// For nq blocks of 8 columns q: d[q·ldd+r] = s[r·lds+q], r < 6, q < 8·nq.
TEXT ·trans6(SB), NOSPLIT, $0-40
	MOVQ d+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ s+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9
	MOVQ nq+32(FP), CX
	TESTQ CX, CX
	JZ trans6done
trans6loop:
	MOVQ SI, AX
	VMOVUPS (AX), Y0
	ADDQ R9, AX
	VMOVUPS (AX), Y1
	ADDQ R9, AX
	VMOVUPS (AX), Y2
	ADDQ R9, AX
	VMOVUPS (AX), Y3
	ADDQ R9, AX
	VMOVUPS (AX), Y4
	ADDQ R9, AX
	VMOVUPS (AX), Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	MOVQ DI, AX
	VPERM2F128 $0x20, Y4, Y0, Y8
	VMOVUPS X8, (AX)
	VEXTRACTF128 $1, Y8, X9
	MOVQ X9, 16(AX)
	ADDQ R8, AX
	VPERM2F128 $0x20, Y5, Y1, Y8
	VMOVUPS X8, (AX)
	VEXTRACTF128 $1, Y8, X9
	MOVQ X9, 16(AX)
	ADDQ R8, AX
	VPERM2F128 $0x20, Y6, Y2, Y8
	VMOVUPS X8, (AX)
	VEXTRACTF128 $1, Y8, X9
	MOVQ X9, 16(AX)
	ADDQ R8, AX
	VPERM2F128 $0x20, Y7, Y3, Y8
	VMOVUPS X8, (AX)
	VEXTRACTF128 $1, Y8, X9
	MOVQ X9, 16(AX)
	ADDQ R8, AX
	VPERM2F128 $0x31, Y4, Y0, Y8
	VMOVUPS X8, (AX)
	VEXTRACTF128 $1, Y8, X9
	MOVQ X9, 16(AX)
	ADDQ R8, AX
	VPERM2F128 $0x31, Y5, Y1, Y8
	VMOVUPS X8, (AX)
	VEXTRACTF128 $1, Y8, X9
	MOVQ X9, 16(AX)
	ADDQ R8, AX
	VPERM2F128 $0x31, Y6, Y2, Y8
	VMOVUPS X8, (AX)
	VEXTRACTF128 $1, Y8, X9
	MOVQ X9, 16(AX)
	ADDQ R8, AX
	VPERM2F128 $0x31, Y7, Y3, Y8
	VMOVUPS X8, (AX)
	VEXTRACTF128 $1, Y8, X9
	MOVQ X9, 16(AX)
	ADDQ $32, SI
	LEAQ (DI)(R8*8), DI
	DECQ CX
	JNZ trans6loop
trans6done:
	VZEROUPPER
	RET

// func copy6(d, s *float32, lds, kb int)
// d[q·6 : q·6+6] = s[q·lds : q·lds+6] for q < kb.
TEXT ·copy6(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ lds+16(FP), DX
	SHLQ $2, DX
	MOVQ kb+24(FP), CX
	TESTQ CX, CX
	JZ copy6done

copy6loop:
	MOVUPS (SI), X0
	MOVQ 16(SI), X1
	MOVUPS X0, (DI)
	MOVQ X1, 16(DI)
	ADDQ DX, SI
	ADDQ $24, DI
	DECQ CX
	JNZ copy6loop

copy6done:
	RET
