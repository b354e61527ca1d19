package tracin

import (
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
)

// Adam-aware TracIn (issue 35). TracIn-CP weighs a checkpoint's
// gradients as plain SGD would, but Θ is trained by Adam, whose step on
// parameter i is
//
//	Δθ_i = −η · m̂_i / (√v̂_i + ε),   v̂ = v/(1−β₂ᵗ),  m̂ = m/(1−β₁ᵗ)
//
// so a gradient g enters the parameters through the diagonal
// preconditioner P_t = diag(1/(√v̂_t + ε)). NewLastLayerAdam and
// NewAllLayersAdam score a training cell z by
//
//	S_z = Σ_{k≤K} η · G_kᵀ P_k ∇ℓ(Θ_k, z),   G_k = Σ_{z'∈val} ∇ℓ(Θ_k, z')
//
// over the same checkpoints Θ_k as TracIn-CP (the ends of epochs 1…K),
// with P_k from Θ's Adam state after epoch k's last step t_k: its second
// moments v and bias correction 1−β₂^{t_k} (dense Adam's for the Linear
// layers and a dense table; with sparse Adam each table row's own
// moments, corrected by the global step, as SparseAdam corrects them).
// η is the learning rate, as TracIn-CP's η_k.
//
// This is the first-order effect on the validation loss of cell z's
// gradient passing through Adam's preconditioner (Xia et al., LESS,
// ICML 2024, §3: Adam's update direction, here with the bias-corrected
// second moments; Pruthi et al. eq. 3 with Adam's step in place of
// SGD's). Two simplifications, both documented choices: momentum is
// unrolled (a gradient g enters m with weight 1−β₁ and stays in it with
// decay β₁, so over the following steps it moves the parameters by
// Σ_j (1−β₁)β₁ʲ = 1 times P·g when P changes slowly: the m̂ of the
// update is not used, so the form implemented is η·G'P·g_z, not
// η·G'·m̂/(√v̂+ε), which is not a per-cell quantity), and P_k is held
// fixed (v's own dependence on g_z is ignored).
//
// P_k∘G_k is formed once per checkpoint, O(parameters), with the
// backend's Adam operation itself (precond), so that its denominator is
// bit for bit the one Adam's step divided by; the per-cell passes are
// TracIn-CP's (InfluenceDot, EmbeddingInfluence) with G_k replaced by
// P_k∘G_k: δ_zᵀ(P∘G) a_z = ⟨P∘G, ∇ℓ_z⟩.

// NewLastLayerAdam is NewLastLayer with Adam's preconditioner: each
// checkpoint's term is η·(P_k∘G_k)·∇ℓ(Θ_k, z) over the output layer, P_k
// read from opt, which must be the state nn.Train keeps
// (nn.TrainConfig.Adam) for the training the accumulator rides on.
func NewLastLayerAdam(m *nn.Net, train *nn.Set, eta float64, opt *nn.AdamState) *LastLayer {
	a := NewLastLayer(m, train, eta)
	a.opt, a.pre, a.gp = opt, newPrecond(m.Backend(), m.LastHidden()+1), m.Backend().Alloc(m.LastHidden()+1)
	return a
}

// NewAllLayersAdam is NewAllLayers with Adam's preconditioner over every
// parameter (see NewLastLayerAdam). Its memory is NewAllLayers' and a
// scratch vector of at most 64K elements.
func NewAllLayersAdam(m *nn.Net, train, val *nn.Set, eta float64, opt *nn.AdamState) *AllLayers {
	a := NewAllLayers(m, train, val, eta)
	a.opt, a.pre = opt, newPrecond(m.Backend(), m.NumParams())
	return a
}

// precondChunk is the most elements precond forms at once: the size of
// its scratch first moment.
const precondChunk = 1 << 16

// precondSlots is how many steps' constants precond uploads at a time.
const precondSlots = 256

// precond forms P∘G, P = diag(1/(√v̂ + ε)), with the backend's Adam: one
// step with β₁ = 0, β₂ = 1 and the constants (step size −1, then
// 1/√(1−β₂ᵗ) of the step whose v it reads) given in Scalars, applied to
// p = 0 with gradient G, sets
//
//	m = 0·m + 1·G = G,  v = 1·v + (0·G)·G = v,  p = 0 − (−1)·G/(√v·c + ε)
//
// so p = G/(√v·c + ε), with the denominator Adam's step computed, in its
// arithmetic on every backend (CPU and CUDA), and v unchanged bit for bit
// (for finite G), so v may be the live state of a training. No kernel of
// its own: the Adam kernel is already conformance-tested on both
// backends. m is a scratch vector of at most precondChunk elements (the
// operation is elementwise, so longer vectors go chunk by chunk).
type precond struct {
	be compute.Backend
	m  compute.F32 // scratch first moment
	// sc holds precondSlots pairs (−1, 1/√(1−β₂ᵗ)); next is the first
	// unused pair, steps the steps they were uploaded for, in order.
	sc    compute.F32
	host  []float32
	steps []int
	next  int
}

func newPrecond(be compute.Backend, n int) *precond {
	return &precond{be: be, m: be.Alloc(max(1, min(n, precondChunk))), sc: be.Alloc(2 * precondSlots), host: make([]float32, 2*precondSlots)}
}

func (p *precond) free() {
	p.m.Free()
	p.sc.Free()
}

// scalars returns the two constants for step s on the backend. It
// uploads a block of precondSlots pairs, for s.T, s.T + every, s.T +
// 2·every, …, when the block in place does not hold s.T next, so that a
// hook called every few steps uploads once per precondSlots calls, not
// at each. (An upload is ordered with the backend's queued work, so work
// queued earlier still reads the constants it was queued with.)
func (p *precond) scalars(s compute.AdamStep, every int) compute.F32 {
	if p.next >= len(p.steps) || p.steps[p.next] != s.T {
		p.steps = p.steps[:0]
		for i := 0; i < precondSlots; i++ {
			st := s
			st.T = s.T + i*max(every, 1)
			c := compute.AdamScalars(st)
			p.host[2*i], p.host[2*i+1] = -1, c[1]
			p.steps = append(p.steps, st.T)
		}
		p.be.Upload(p.sc, p.host)
		p.next = 0
	}
	sc := p.sc.Slice(2*p.next, 2)
	p.next++
	return sc
}

// apply sets dst = g/(√v·c + ε) elementwise, with c = 1/√(1−β₂ᵀ) and ε of
// the Adam step s whose second moments v are (s.T the steps taken); every
// is the distance to the step apply will be called for next, if known
// (else 1). dst must not overlap g or v; v is read, and written back
// unchanged.
func (p *precond) apply(dst, g, v compute.F32, s compute.AdamStep, every int) {
	one := compute.AdamStep{LR: 1, Beta1: 0, Beta2: 1, Eps: s.Eps, T: 1, Scalars: p.scalars(s, every)}
	p.be.Fill(dst, 0)
	n := dst.Len()
	for off := 0; off < n; off += p.m.Len() {
		c := min(p.m.Len(), n-off)
		p.be.Adam(dst.Slice(off, c), g.Slice(off, c), p.m.Slice(0, c), v.Slice(off, c), one)
	}
}
