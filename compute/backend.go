package compute

import "math"

// F32 is a vector of float32 owned by one Backend, counted in elements.
type F32 interface {
	// Len returns the number of elements.
	Len() int
	// Slice returns the view of elements [off, off+n), sharing storage.
	// It panics if the range is out of bounds.
	Slice(off, n int) F32
	// Free releases the storage. Freeing twice, or freeing a view, does
	// nothing. Using a freed buffer is a caller bug.
	Free()
}

// I32 is a vector of int32 owned by one Backend, counted in elements. Alias
// thresholds are stored in I32 buffers as the bit patterns of uint32 values.
type I32 interface {
	Len() int
	Slice(off, n int) I32
	Free()
}

// Layout says how Gather and ScatterRows lay out the N embedding rows of one
// cell in its row of the batch matrix. Every operation that takes a Layout
// panics on a value other than ModeMajor and RankMajor (CheckLayout).
type Layout int

const (
	// ModeMajor concatenates the rows: x[b, n·E+e] (the MLP of DAIN eq. 4).
	ModeMajor Layout = iota
	// RankMajor interleaves them: x[b, e·N+n], the E×N matrix of CoSTCo.
	RankMajor
)

// AdamStep holds the hyper-parameters of one Adam step (Kingma & Ba, ICLR
// 2015) in PyTorch's formulation. T is the 1-based step count.
//
// Scalars, when not nil, is a buffer of 2 elements on the backend holding
// the step's bias-corrected constants as AdamScalars gives them (step size
// lr/(1−β₁ᵀ), then 1/√(1−β₂ᵀ)); Adam and SparseAdam then read them from it
// when the operation runs, not when it is queued, and T only has to be
// valid (≥ 1). One Adam captured in a graph (Capturer) so replays every
// training step with the constants its caller writes into Scalars before
// each launch. With the values of AdamScalars(s) the result is bit for bit
// that of s without Scalars.
//
// L2, when positive, adds coupled L2 regularisation (the gradient of
// (L2/2)·‖θ‖², PyTorch's Adam weight_decay, not AdamW's decoupled decay):
// Adam and SparseAdam use g′ = g + L2·p in place of g, with p the
// parameter before the step, formed in float32 as fl(g + fl(λ·p)) with
// λ = float32(L2) rounded once. SparseAdam decays only the rows it
// updates (the batch's distinct rows), so its work stays O(batch). With
// L2 = 0 (the zero value) the gradient is used as it is: the results are
// bit for bit those of a step without the field. A negative or non-finite
// L2 panics (CheckAdam, CheckSparseAdam).
type AdamStep struct {
	LR, Beta1, Beta2, Eps float64
	T                     int
	Scalars               F32
	L2                    float64
}

// AdamScalars returns the two per-step constants of Adam at step s.T,
// lr/(1−β₁ᵀ) and 1/√(1−β₂ᵀ), formed in float64 and rounded to float32 once,
// exactly as every backend forms them: what AdamStep.Scalars holds.
func AdamScalars(s AdamStep) [2]float32 {
	c1 := 1 - math.Pow(s.Beta1, float64(s.T))
	c2 := 1 - math.Pow(s.Beta2, float64(s.T))
	return [2]float32{float32(s.LR / c1), float32(1 / math.Sqrt(c2))}
}

// Backend is the set of operations DAIN runs on. See the package
// documentation for notation, layout, error and aliasing policy. The float64
// reference loop of each operation is the function of the same name in
// package compute/ref. Every implementation validates an operation's
// arguments with the Check function of its name in this package
// (validate.go), so the panics documented here are the same on every
// backend.
type Backend interface {
	// Name returns "cpu" or "cuda".
	Name() string
	// Device describes the hardware in words, e.g. "2 cores, gonum blas32".
	Device() string

	// Alloc returns a zeroed F32 of n elements. It panics if n < 0.
	Alloc(n int) F32
	// AllocI32 returns a zeroed I32 of n elements. It panics if n < 0.
	AllocI32(n int) I32
	// Upload copies src into dst. It panics if the lengths differ.
	Upload(dst F32, src []float32)
	// UploadI32 copies src into dst. It panics if the lengths differ.
	UploadI32(dst I32, src []int32)
	// Download copies src into dst, waiting for pending work, and returns
	// the backend's sticky error. It panics if the lengths differ.
	Download(dst []float32, src F32) error
	// DownloadI32 is Download for I32.
	DownloadI32(dst []int32, src I32) error
	// Fill sets every element of dst to v (=).
	Fill(dst F32, v float32)
	// Copy copies src into dst (=). It panics if the lengths differ.
	Copy(dst, src F32)
	// CopyI32 is Copy for I32.
	CopyI32(dst, src I32)
	// Sync waits for pending work and returns the sticky error, if any.
	Sync() error
	// Close releases the backend's resources and returns the sticky error.
	Close() error

	// Gather computes the batch input of an embedding model:
	//
	//	ModeMajor: x[b, n·E+e] = table[cells[b,n]·E + e]
	//	RankMajor: x[b, e·N+n] = table[cells[b,n]·E + e]
	//
	// with N = order, E = width, cells B×N global rows, table R×E,
	// x B×(N·E) (=). It panics if the lengths do not fit or order or width
	// ≤ 0. A row outside the table is a caller bug (the CPU backend panics;
	// CUDA's result is undefined).
	Gather(x, table F32, cells I32, order, width int, layout Layout)

	// ScatterRows adds a batch gradient back into the embedding table, the
	// adjoint of Gather:
	//
	//	dtable[cells[b,n]·E + e] += dx[b, n·E+e]   (ModeMajor)
	//
	// (+=, duplicates accumulate; RankMajor reads dx[b, e·N+n]). Shapes as
	// Gather.
	ScatterRows(dtable, dx F32, cells I32, order, width int, layout Layout)

	// LinearForward computes a fused Linear layer, optionally with ReLU:
	//
	//	y[b,o] = φ(Σᵢ x[b,i]·w[o,i] + bias[o]),  φ = ReLU or identity
	//
	// with x B×in, w out×in, bias out, y B×out (=); B = x.Len()/in. It
	// panics if in or out ≤ 0 or a length does not fit. DAIN eq. 4.
	LinearForward(y, x, w, bias F32, in, out int, relu bool)

	// LinearBackward computes the gradients of a Linear layer given
	// dy = ∂L/∂(x·wᵀ+b), the gradient at its pre-activation output:
	//
	//	dw[o,i] (=|+=) Σ_b dy[b,o]·x[b,i]
	//	db[o]   (=|+=) Σ_b dy[b,o]
	//	dx[b,i]  =     (Σ_o dy[b,o]·w[o,i]) · m[b,i]
	//
	// where m[b,i] = [x[b,i] > 0] if maskX (x is the output of a ReLU, so dx
	// becomes the next dy) and 1 otherwise. accumulate selects += for dw and
	// db; dx is always overwritten. dx, dw or db may be nil to skip it.
	// Shapes as LinearForward.
	LinearBackward(dx, dw, db, dy, x, w F32, in, out int, maskX, accumulate bool)

	// MSEGrad computes the residual gradient and squared error of a batch:
	//
	//	delta[b] = scale·(pred[b] − y[b])      (=)
	//	sq[0]    = Σ_b (pred[b] − y[b])²        (=)
	//
	// For the batch-mean MSE loss use scale = 2/B; for per-cell TracIn
	// gradients (ℓ_z = e_z²) scale = 2. sq has length 1 and may be nil.
	MSEGrad(delta, sq, pred, y F32, scale float32)

	// Mul multiplies two vectors elementwise (=):
	//
	//	dst[i] = a[i]·b[i]
	//
	// dst must not overlap a or b; the three lengths must match. One float32 rounding per element, so every
	// backend gives the same bits. Training weights each cell's loss
	// gradient with it (nn.TrainConfig.NewWeight).
	Mul(dst, a, b F32)

	// Adam applies one fused Adam step to every element (PyTorch's
	// formulation, bias correction c₁ = 1−β₁ᵗ, c₂ = 1−β₂ᵗ):
	//
	//	m = β₁m + (1−β₁)g;  v = β₂v + (1−β₂)g²
	//	p -= (lr/c₁)·m / (√v/√c₂ + ε)
	//
	// p, m, v are updated in place; all four lengths must match. With
	// s.L2 > 0, g is g + L2·p (coupled L2 regularisation, see AdamStep).
	Adam(p, g, m, v F32, s AdamStep)

	// DistinctRows groups the K global rows of a batch (cells, K = B·N,
	// the rows a Gather read) by row, for the sparse embedding gradient:
	//
	//	count[0]  = U, the number of distinct values in cells          (=)
	//	rows[u]   = the u-th smallest of them, u < U                    (=)
	//	starts[u] = #{k : cells[k] < rows[u]}, u ≤ U (starts[U] = K)    (=)
	//	perm[j]   = the positions k of cells ordered by (cells[k], k)   (=)
	//
	// so the positions holding rows[u] are perm[starts[u]:starts[u+1]], in
	// increasing order. rows and perm have K elements, starts K+1, count
	// 1; rows[U:] and starts[U+1:] are left as they were. The result does
	// not depend on the backend or the launch: sums over a row's positions
	// in this order (CompactRows) are reproducible everywhere. It panics
	// if the lengths do not fit; a negative row is a caller bug (the CPU
	// backend panics).
	DistinctRows(rows, starts, perm, count, cells I32)

	// CompactRows sums a batch gradient at the gathered input into the
	// compact rows DistinctRows found, the sparse adjoint of Gather:
	//
	//	grad[u·E+e] = Σ_{j=starts[u]}^{starts[u+1]−1} dx[pos(perm[j], e)]   (=)
	//
	// for u < U = count[0], summed in increasing j from 0 (so bit for bit
	// ScatterRows' sum into a zeroed row on the CPU), with pos(k, e) =
	// k·E+e (ModeMajor) or (k/N)·N·E + e·N + k mod N (RankMajor). dx is
	// B×(N·E), perm K = B·N, starts K+1, grad K×E (rows U… untouched). It
	// panics if the lengths do not fit or order or width ≤ 0.
	CompactRows(grad, dx F32, starts, perm, count I32, order, width int, layout Layout)

	// SparseAdam applies Adam to the rows of an embedding table a batch
	// touched (PyTorch's SparseAdam, TensorFlow's LazyAdam): for u < U =
	// count[0], r = rows[u], e < E and i = r·E+e,
	//
	//	m[i] = β₁m[i] + (1−β₁)g[u·E+e];  v[i] = β₂v[i] + (1−β₂)g[u·E+e]²
	//	p[i] -= (lr/c₁)·m[i] / (√v[i]/√c₂ + ε)
	//
	// with Adam's arithmetic, element for element (bias correction by the
	// global step s.T). Rows not listed are untouched: their moments do
	// not decay, unlike dense Adam with a zero gradient; with s.L2 > 0
	// the listed rows alone are decayed (g + L2·p, see AdamStep), the
	// others keep their values. p, m, v are R×E
	// (the table), g and rows K×E and K (compact, as CompactRows leaves
	// them), count 1. It panics if the lengths do not fit; a listed row
	// outside the table or a count above K is a caller bug (the CPU
	// backend panics).
	SparseAdam(p, g, m, v F32, rows, count I32, width int, s AdamStep)

	// PairwiseForward adds the terms of an order-2 factorization machine
	// (Rendle, "Factorization Machines", ICDM 2010, eq. 1 and Lemma 3.1)
	// over the gathered embeddings of a batch to y:
	//
	//	y[b] += Σ_n x[b,n,E−1] + Σ_{n<n′} Σ_{k<K} x[b,n,k]·x[b,n′,k]
	//
	// (+=) with N = order, E = width ≥ 2, K = E−1 factor columns and
	// column E−1 the entity's bias; x is the B×(N·E) batch matrix in
	// ModeMajor layout (x[b,n,e] = x[b·N·E + n·E + e], as Gather writes
	// it), y has B elements. The pairwise sum is formed directly, without
	// Lemma 3.1's difference of squares (which cancels): for each k in
	// increasing order, the running prefix p = x[b,0,k] and, for n = 1…N−1,
	// the term x[b,n,k]·p is added to the pair sum, then x[b,n,k] to p; the
	// bias column is summed in increasing n, and y[b] += bias + pairs. The
	// CPU backend does exactly this in float32 (each product rounded before
	// it is added); CUDA's kernel gives each cell a warp whose lane l takes
	// the columns k ≡ l mod 32 in this order with fused multiply-adds, and
	// adds the lanes in a fixed butterfly order. Both are deterministic.
	// nn adds it after LinearForward (=) for FM-style models. It panics if
	// order < 1, width < 2 or x.Len() ≠ B·N·E with B = y.Len().
	PairwiseForward(y, x F32, order, width int)

	// PairwiseBackward adds the gradient of Σ_b dy[b]·f_b(x), f_b being
	// PairwiseForward's term of cell b, to dx (+=, B×(N·E), ModeMajor):
	//
	//	dx[b,n,k]   += dy[b]·Σ_{n′≠n} x[b,n′,k]   for k < K = E−1
	//	dx[b,n,E−1] += dy[b]
	//
	// The sum over n′ ≠ n is formed directly in increasing n′ (no
	// subtraction of x[b,n,k] from the column sum). dy has B elements, x
	// and dx B×(N·E); nn calls it after LinearBackward (which overwrites
	// dx). Panics as PairwiseForward, and if dx.Len() ≠ x.Len().
	PairwiseBackward(dx, dy, x F32, order, width int)

	// InfluenceDot accumulates the TracIn score of each cell against a
	// precomputed gradient sum G = (gw, gb) of a Linear layer, never forming
	// the per-cell gradient ∇w ℓ_z = dy_zᵀ x_z:
	//
	//	score[b] += eta · Σ_o dy[b,o]·(Σᵢ gw[o,i]·x[b,i] + gb[o])
	//
	// (+=) with dy B×out, x B×in, gw out×in, gb out, score B. With out = 1,
	// dy = 2e and x the last hidden activation this is DAIN eq. 5 for the
	// last layer. References: Pruthi et al., TracIn, NeurIPS 2020, eq. 3.
	InfluenceDot(score, dy, x, gw, gb F32, in, out int, eta float32)

	// EmbeddingInfluence accumulates the embedding part of the TracIn score:
	//
	//	score[b] += eta · Σ_n Σ_e dx[b, n·E+e]·gtable[cells[b,n]·E + e]
	//
	// (+=) where dx is the gradient at the gathered input (ModeMajor, or
	// RankMajor by layout) and gtable the R×E gradient sum of the table.
	EmbeddingInfluence(score, dx F32, cells I32, gtable F32, width int, layout Layout, eta float32)

	// EntityImportance aggregates cell importance into entity importance,
	// DAIN eq. 6 applied to α_z = |score_z| (eq. 5):
	//
	//	imp[cells[t,n]] += |score[t]|   for every t and n
	//
	// (+=) with cells T×N global rows, score T, imp R.
	EntityImportance(imp, score F32, cells I32)

	// SampleAlias draws one entity per row from a Vose alias table, writing
	// column col of the M×order matrix out (= for that column only):
	//
	//	(r₀,r₁,_,_) = Philox4x32-10(counter (lo(c), hi(c), col, 0), key)
	//	j = ⌊r₀·I / 2³²⌋;  out[m·order+col] = j if r₁ < thresh[j] else alias[j]
	//
	// with c = ctr+m, I = thresh.Len() = alias.Len() and thresh holding the
	// uint32 bit patterns. The result depends only on (key, ctr, m, col),
	// never on launch shape or backend. See Philox and AliasDraw.
	// References: Vose, IEEE TSE 17(9), 1991; Salmon et al., SC 2011.
	SampleAlias(out I32, order, col int, thresh, alias I32, key, ctr uint64)
}
