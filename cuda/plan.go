package cuda

// The split-K plan of each GEMM-like op, one function each, so that the
// rules are stated once on this side: kernels/lib/geometry.h states them for
// the C launchers of libdainx_kernels, and geometry_test.go checks that the
// two agree (grid1D, split, the plans below and influenceChunk) over many
// shapes and SM counts.

// planForward splits the forward GEMM (B×O output) over the input width.
func (be *Backend) planForward(batch, in, out int) (parts, chunk int) {
	return be.splitK(tiles(batch, out), in)
}

// planDX splits the dx GEMM (B×I output) over the output width.
func (be *Backend) planDX(batch, in, out int) (parts, chunk int) {
	return be.splitK(tiles(batch, in), out)
}

// planDW splits the dw GEMM (O×I output) over the batch, chunks of at least
// 256.
func (be *Backend) planDW(batch, in, out int) (parts, chunk int) {
	return be.split(tiles(out, in), batch, 256)
}

// planDB splits the db column sums (⌈O/32⌉ blocks) over the batch, chunks
// of at least 1024.
func (be *Backend) planDB(batch, out int) (parts, chunk int) {
	return be.split((out+31)/32, batch, 1024)
}

// planOut1 splits the backward pass of a one-output layer (⌈I/32⌉ blocks)
// over the batch, chunks of at least 64.
func (be *Backend) planOut1(batch, in int) (parts, chunk int) {
	return be.split((in+31)/32, batch, 64)
}

// influenceChunk is the number of rows per chunk of the wide InfluenceDot
// path, whose rows×out scratch is bounded by influenceScratch floats.
func influenceChunk(batch, out int) int {
	return max(min(batch, influenceScratch/out), gemmTile)
}
