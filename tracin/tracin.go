// Package tracin computes DAIN's cell importance with TracIn-CP (paper
// eq. 5) and aggregates it into entity importance (eq. 6). Equation numbers
// follow the paper's TeX source; SPEC.md calls these eqs. 6, 7 and 8.
//
// For each checkpoint Θ_k (the end of epoch k = 1…K, K the best epoch) and
// step size η_k, the importance of a training cell z is
//
//	α_z = | Σ_k η_k ∇ℓ(Θ_k, z) · G_k |,   G_k = Σ_{z'∈val} ∇ℓ(Θ_k, z')
//
// with gradients taken with respect to the output Linear layer (weights and
// bias). With h_z the last hidden activation and e_z = x̂_z − x_z,
// ∇_w ℓ = 2e_z h_z and ∇_b ℓ = 2e_z, so each checkpoint costs one forward
// pass over the validation cells (to form the (D+1)-vector G_k) and one over
// the training cells with a fused dot product per cell
// (compute.Backend.InfluenceDot). Per-cell gradients are never stored:
// memory is O(|train|), two float32 vectors.
//
// The same holds for every kind of nn.Net. For the factorization machine
// the output layer reads the gathered embeddings (h_z is the cell's N·E
// embedding values), and the pairwise kinds' interaction term has no
// parameter of its own, so their output-layer gradient is 2e_z·[h_z, 1]
// too; AllLayers' embedding term takes the interaction term's gradient
// with the Linear layers' (nn.Net.BackwardInput).
//
// Checkpoints are consumed online, right after each epoch, so no checkpoint
// is kept: the running sum S = Σ_{k≤current} is copied aside whenever the
// epoch is the best so far, and that copy, S_K, is the result once training
// ends.
//
// References: G. Pruthi, F. Liu, S. Kale, M. Sundararajan, "Estimating
// training data influence by tracing gradient descent", NeurIPS 2020 (eq. 3,
// TracIn-CP); S. Oh, S. Kim, R. A. Rossi, S. Kumar, "Influence-guided data
// augmentation for neural tensor completion", CIKM 2021 (eqs. 5 and 6).
package tracin

import (
	"fmt"
	"math"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
)

// LastLayer accumulates TracIn-CP cell importance over the output layer of
// a Net (the MLP's, or any other kind's). Use it as
//
//	acc := NewLastLayer(m, train, lr)
//	cfg.ValGradSum = acc.ValGradSum()
//	cfg.AfterEpoch = func(e nn.Epoch) error { return acc.Checkpoint(e.Best) }
//	nn.Train(ctx, m, train, val, cfg)
//	scores := acc.Scores() // S_K, one signed value per training cell
type LastLayer struct {
	m     *nn.Net
	train *nn.Set
	eta   float32
	gsum  compute.F32 // G_k: D+1
	sums              // S over checkpoints so far and at the best one
	delta compute.F32 // 2e of a batch
	// opt, when not nil, is Θ's Adam state, whose preconditioner P_k
	// weighs G_k (tracin-adam; see NewLastLayerAdam); gp holds P_k∘G_k.
	opt *nn.AdamState
	pre *precond
	gp  compute.F32
}

// NewLastLayer prepares the accumulator for the cells of train, with step
// size eta (the learning rate) at every checkpoint.
func NewLastLayer(m *nn.Net, train *nn.Set, eta float64) *LastLayer {
	be := m.Backend()
	return &LastLayer{
		m: m, train: train, eta: float32(eta),
		gsum:  be.Alloc(m.LastHidden() + 1),
		sums:  newSums(be, train.Len()),
		delta: be.Alloc(m.Capacity()),
	}
}

// Free releases the accumulator's buffers (Scores' result included).
func (a *LastLayer) Free() {
	for _, b := range []compute.F32{a.gsum, a.run, a.best, a.delta} {
		b.Free()
	}
	if a.pre != nil {
		a.pre.free()
		a.gp.Free()
	}
}

// ValGradSum returns the buffer in which nn.Train must leave G_k at each
// epoch's validation pass (nn.TrainConfig.ValGradSum).
func (a *LastLayer) ValGradSum() compute.F32 { return a.gsum }

// Checkpoint adds checkpoint k's term η·∇ℓ(Θ_k, z)·G_k to every training
// cell's running score, with the model holding Θ_k and ValGradSum holding
// G_k; best says Θ_k is the best checkpoint so far, whose running scores
// are then kept. It returns the backend's sticky error.
func (a *LastLayer) Checkpoint(best bool) error {
	a.k++
	m, be := a.m, a.m.Backend()
	order, d, T, B := m.Order(), m.LastHidden(), a.train.Len(), m.Capacity()
	g := a.gsum
	if a.opt != nil {
		// The output layer's parameters are the last D+1 of Params,
		// and so their moments the last D+1 of V.
		v := a.opt.V
		a.pre.apply(a.gp, a.gsum, v.Slice(v.Len()-(d+1), d+1), a.opt.Step, 1)
		g = a.gp
	}
	gw, gb := g.Slice(0, d), g.Slice(d, 1)
	nb := (T + B - 1) / B
	all := m.Batches(nb) // a sharded table: as many batches as every process
	for lo := 0; lo < T; lo += B {
		hi := min(lo+B, T)
		rows := a.train.Rows.Slice(lo*order, (hi-lo)*order)
		pred := m.Forward(rows)
		dl := a.delta.Slice(0, hi-lo)
		be.MSEGrad(dl, nil, pred, a.train.Vals.Slice(lo, hi-lo), 2)
		be.InfluenceDot(a.run.Slice(lo, hi-lo), dl, m.Hidden(hi-lo), gw, gb, d, 1, a.eta)
	}
	for i := nb; i < all; i++ {
		m.Skip()
	}
	if best {
		be.Copy(a.best, a.run)
	}
	if err := be.Sync(); err != nil {
		return fmt.Errorf("tracin: checkpoint %d: %w", a.k, err)
	}
	return nil
}

// Scores returns S_K, the signed TracIn sum of every training cell at the
// best checkpoint (|train| elements on the backend, valid until Free);
// α_z = |S_K[z]|.
func (a *LastLayer) Scores() compute.F32 { return a.best }

// NoImportance returns the error for mode n (0-based; n < 0: the cells as
// a whole) whose entity importance sums to sum, or nil when sum is a
// usable positive number. It says why a sum is zero or not finite.
func NoImportance(sum float64, n int) error {
	what := "no entity importance can be formed"
	if n >= 0 {
		what = fmt.Sprintf("mode %d has no important entity", n+1)
	}
	switch {
	case math.IsNaN(sum) || math.IsInf(sum, 0):
		return fmt.Errorf("the cell importance is not finite (%v), so %s: the model's float32 arithmetic overflowed, which happens when the values are too large (squared errors near float32's limit, 3.4e38) or the training diverged; rescale the values or lower the learning rate", sum, what)
	case !(sum > 0):
		return fmt.Errorf("every cell importance is zero, so %s: TracIn's terms (learning rate × training gradient · validation gradient) all vanished, because the model fits every training cell exactly or its output no longer depends on its input (e.g. every ReLU is off after a degenerate training); check the training history, lower the learning rate or rescale the values", what)
	}
	return nil
}

// EntityImportance aggregates cell importance into per-mode entity
// importance (paper eq. 6) and normalises each mode to sum 1:
//
//	α⁽ⁿ⁾_i = Σ_{z∈train, zₙ=i} |score_z|  /  Σ_j α⁽ⁿ⁾_j
//
// rows are the training cells' global rows (train.Rows of the model), dims
// the mode sizes. It returns one slice per mode, and an error if a mode's
// importance sums to zero (every score is zero) or the backend failed.
func EntityImportance(be compute.Backend, score compute.F32, rows compute.I32, dims []int) ([][]float64, error) {
	return EntityImportanceSummed(be, score, rows, dims, nil)
}

// EntityImportanceSummed is EntityImportance of training cells spread over
// processes, each calling it with its own cells' scores and rows: sum, if
// not nil, replaces the per-entity sums (every mode's, concatenated, one
// float64 per entity) by their sums over the processes, in place, before
// each mode is normalised. With sum nil it is EntityImportance.
func EntityImportanceSummed(be compute.Backend, score compute.F32, rows compute.I32, dims []int, sum func([]float64)) ([][]float64, error) {
	total := 0
	for _, d := range dims {
		total += d
	}
	imp := be.Alloc(total)
	defer imp.Free()
	be.EntityImportance(imp, score, rows)
	host := make([]float32, total)
	if err := be.Download(host, imp); err != nil {
		return nil, fmt.Errorf("tracin: %w", err)
	}
	flat := make([]float64, total)
	for i, v := range host {
		flat[i] = float64(v)
	}
	if sum != nil {
		sum(flat)
	}
	out := make([][]float64, len(dims))
	off := 0
	for n, d := range dims {
		out[n] = flat[off : off+d : off+d]
		var s float64
		for _, v := range out[n] {
			s += v
		}
		if err := NoImportance(s, n); err != nil {
			return nil, fmt.Errorf("tracin: %w", err)
		}
		for i := range out[n] {
			out[n][i] /= s
		}
		off += d
	}
	return out, nil
}
