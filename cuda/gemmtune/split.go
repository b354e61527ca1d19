package gemmtune

import "github.com/dainx/dainx/compute"

// MaxGridYZ is the CUDA limit on gridDim.y and gridDim.z.
const MaxGridYZ = 65535

// Split chooses how to cut a reduction of length k over blocks independent
// blocks (counted in 64×64 tiles, whatever variant runs) into parts of
// chunk terms (a multiple of 16, at least minChunk), so that about two
// blocks per SM are busy when the blocks alone are fewer than the SMs.
// parts = 1 means no split. It depends only on the shape and the SM count,
// never on timing: the split changes the order of summation, the variant
// does not. package cuda's plans and kernels/lib/geometry.h use this rule.
func Split(sms, blocks, k, minChunk int) (parts, chunk int) {
	target := 2 * sms
	if blocks >= sms || k <= minChunk {
		return 1, max(k, 1)
	}
	parts = (target + blocks - 1) / blocks
	chunk = (k + parts - 1) / parts
	chunk = max((chunk+15)/16*16, minChunk)
	if (k+chunk-1)/chunk > MaxGridYZ {
		chunk = ((k+MaxGridYZ-1)/MaxGridYZ + 15) / 16 * 16
	}
	return (k + chunk - 1) / chunk, chunk
}

// Tiles64 returns the number of 64×64 tiles of an m×n output.
func Tiles64(m, n int) int { return ceilDiv(m, 64) * ceilDiv(n, 64) }

// StepShapes returns the GEMMs of one training step of an MLP with layer
// widths layers (input width first, then the hidden widths; the output
// layer of width 1 is not a GEMM) at batch rows, with the split-K plans of
// package cuda for a device of sms SMs: for each layer i → i+1 its forward,
// dx and dw GEMMs (dx of the first layer too: the embedding gradient).
func StepShapes(layers []int, batch, sms int, p compute.Precision) []Shape {
	var ss []Shape
	for i := 0; i+1 < len(layers); i++ {
		in, out := layers[i], layers[i+1]
		fp, _ := Split(sms, Tiles64(batch, out), in, 128)
		xp, _ := Split(sms, Tiles64(batch, in), out, 128)
		wp, _ := Split(sms, Tiles64(out, in), batch, 256)
		ss = append(ss,
			Shape{Op: Forward, M: batch, N: out, K: in, Parts: fp, Precision: p},
			Shape{Op: DX, M: batch, N: in, K: out, Parts: xp, Precision: p},
			Shape{Op: DW, M: out, N: in, K: batch, Parts: wp, Precision: p})
	}
	return ss
}
