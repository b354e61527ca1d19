package tracin

import (
	"fmt"
	"time"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
)

// InRun is the in-run influence estimator (issue 35): it scores each
// training cell during Θ's own training, at the parameters and with the
// Adam preconditioner of the steps that actually trained on it, instead of
// at the end-of-epoch checkpoints. At every k-th step t (the steps with
// (t−1) mod k = 0), for each cell z of the step's batch,
//
//	S_z += c · η · (P_t∘G_t)ᵀ ∇ℓ(θ_t, z),   c = k·|val|/|sample|,
//
// where θ_t are the parameters the step's gradient is taken at (before
// its update), G_t = Σ_{z'∈sample} ∇ℓ(θ_t, z') the gradient of the loss
// over a fixed sample of the validation cells, P_t = diag(1/(√v̂_t + ε))
// the preconditioner of the step's own Adam update (v̂_t its bias-corrected
// second moments, which include the step's gradient), η the learning rate
// and ℓ_z = (x̂_z − x_z)². The factor c makes S_z an unbiased estimate of
// the sum over every step and the whole validation set: with k = 1 and
// the whole validation set it is that sum. The scores of epochs 1…K (K
// the best epoch) are the result, as for TracIn-CP. Momentum and P's
// dependence on g_z are treated as in NewLastLayerAdam (see adam.go).
//
// Over the output layer (last) the step costs one forward pass over the
// sample (G_t: a D+1 vector) and one fused dot product per batch cell
// (InfluenceDot over the activations the step's own pass left); over
// every parameter (all) a forward and backward pass over the sample (G_t:
// every parameter, O(parameters) to clear, copy and precondition) and
// the per-layer dot products of AllLayers. The batch's scores are added
// to their cells' sums by ScatterRows (order 1, width 1). Memory:
// 2·|train| floats, and for all two parameter-sized vectors.
//
// Use it as a step hook and an accumulator of the same training:
//
//	var opt nn.AdamState
//	acc := NewInRun(m, train, sample, InRunConfig{Eta: lr, Every: k, ValScale: c, Adam: &opt})
//	cfg.Adam, cfg.Steps = &opt, []nn.StepHook{acc}
//	cfg.AfterEpoch = func(e nn.Epoch) error { return acc.Checkpoint(e.Best) }
//
// References: Pruthi et al., NeurIPS 2020 (TracIn's ideal form, a sum
// over the steps that trained on z); Wang et al., "Data Shapley in one
// training run", ICLR 2025 (in-run first-order contributions); the
// Adam-aware in-run estimate of arXiv 2602.00329.
type InRun struct {
	m            *nn.Net
	train, val   *nn.Set // val: the validation sample
	all          bool
	eta          float64 // η·c
	every        int
	opt          *nn.AdamState
	pre          *precond
	g, gp        compute.F32 // G_t and P_t∘G_t
	sums                     // k: the epochs
	delta, score compute.F32 // capacity
	terms        *layerTerms
	seconds      float64
	// sum, when not nil, sums G_t over the processes (SumValGrad),
	// through host; err is a failed download, returned by Checkpoint.
	sum  func([]float32)
	host []float32
	err  error
}

// InRunConfig sets an InRun estimator.
type InRunConfig struct {
	Eta       float64 // the learning rate η
	Every     int     // k ≥ 1: every k-th step
	ValScale  float64 // |val|/|sample| (1 for the whole validation set)
	AllLayers bool    // every parameter, else the output layer
	// Adam is the state nn.Train keeps (TrainConfig.Adam) for the
	// training the estimator observes.
	Adam *nn.AdamState
}

// NewInRun prepares the estimator for the cells of train against the
// validation sample val.
func NewInRun(m *nn.Net, train, val *nn.Set, c InRunConfig) *InRun {
	be := m.Backend()
	n := m.LastHidden() + 1
	if c.AllLayers {
		n = m.NumParams()
	}
	a := &InRun{m: m, train: train, val: val, all: c.AllLayers,
		eta: c.Eta * float64(c.Every) * c.ValScale, every: c.Every, opt: c.Adam,
		pre: newPrecond(be, n), g: be.Alloc(n), gp: be.Alloc(n),
		sums:  newSums(be, train.Len()),
		delta: be.Alloc(m.Capacity()), score: be.Alloc(m.Capacity()),
	}
	if c.AllLayers {
		a.terms = newLayerTerms(m)
	}
	return a
}

// Free releases the estimator's buffers.
func (a *InRun) Free() {
	for _, b := range []compute.F32{a.g, a.gp, a.run, a.best, a.delta, a.score} {
		b.Free()
	}
	a.pre.free()
	if a.terms != nil {
		a.terms.free()
	}
}

// Every returns k.
func (a *InRun) Every() int { return a.every }

// Before forms G_t over the validation sample at θ_t: the output layer's
// gradient (as nn.Net.EvaluateGrad), or every parameter's (a backward pass
// accumulated into the model's gradients, then copied aside, since the
// step's own backward pass overwrites them).
func (a *InRun) Before(t int) {
	t0 := time.Now()
	m, be := a.m, a.m.Backend()
	order, B, d := m.Order(), m.Capacity(), m.LastHidden()
	w, _ := m.OutputLayer()
	for lo := 0; lo < a.val.Len(); lo += B {
		hi := min(lo+B, a.val.Len())
		rows := a.val.Rows.Slice(lo*order, (hi-lo)*order)
		pred := m.Forward(rows)
		dl := a.delta.Slice(0, hi-lo)
		be.MSEGrad(dl, nil, pred, a.val.Vals.Slice(lo, hi-lo), 2)
		// The first batch sets the sum (=), the others add to it.
		if a.all {
			m.Backward(rows, dl, lo > 0)
		} else {
			be.LinearBackward(nil, a.g.Slice(0, d), a.g.Slice(d, 1), dl, m.Hidden(hi-lo), w, d, 1, false, lo > 0)
		}
	}
	switch {
	case a.val.Len() == 0: // this process holds none of the sample
		be.Fill(a.g, 0)
	case a.all:
		be.Copy(a.g, m.Grads())
	}
	if a.sum != nil {
		if a.host == nil {
			a.host = make([]float32, a.g.Len())
		}
		if err := be.Download(a.host, a.g); err != nil {
			a.err = fmt.Errorf("tracin: in-run, step %d: %w", t, err)
		}
		a.sum(a.host)
		be.Upload(a.g, a.host)
	}
	a.seconds += time.Since(t0).Seconds()
}

// SumValGrad makes the estimator one of several processes' that hold the
// training cells and the validation sample between them (each observing
// its own cells of every step of one data-parallel training, with the
// embedding table replicated): at every observed step sum replaces G_t
// by its sum over the processes, in place, before any cell's term is
// taken.
func (a *InRun) SumValGrad(sum func([]float32)) { a.sum = sum }

// After preconditions G_t with the step's Adam state and adds each batch
// cell's term to its running score.
func (a *InRun) After(t int, b nn.StepBatch) {
	t0 := time.Now()
	m, be := a.m, a.m.Backend()
	v := a.opt.V
	if !a.all {
		v = v.Slice(v.Len()-a.g.Len(), a.g.Len()) // the output layer's: the last D+1
	}
	a.pre.apply(a.gp, a.g, v, a.opt.Step, a.every)
	// The step's delta is Scale·e per cell; a cell's own ∇ℓ takes 2e.
	eta := float32(a.eta * 2 / float64(b.Scale))
	score := a.score.Slice(0, b.N)
	be.Fill(score, 0)
	if a.all {
		a.terms.add(score, b.Rows, a.gp, eta)
	} else {
		d := m.LastHidden()
		be.InfluenceDot(score, b.Delta, m.Hidden(b.N), a.gp.Slice(0, d), a.gp.Slice(d, 1), d, 1, eta)
	}
	be.ScatterRows(a.run, score, b.Cells, 1, 1, compute.ModeMajor)
	a.seconds += time.Since(t0).Seconds()
}

// Checkpoint ends an epoch: the running sums become the result when the
// epoch is the best so far. It returns the backend's sticky error.
func (a *InRun) Checkpoint(best bool) error {
	a.k++
	be := a.m.Backend()
	if a.err != nil {
		return a.err
	}
	if best {
		be.Copy(a.best, a.run)
	}
	if err := be.Sync(); err != nil {
		return fmt.Errorf("tracin: in-run, epoch %d: %w", a.k, err)
	}
	return nil
}

// Scores returns the signed sums of epochs 1…K, K the best epoch so far.
func (a *InRun) Scores() compute.F32 { return a.best }

// TakeSeconds returns the wall time spent in Before and After since the
// last call, and starts counting again. On a backend that runs work
// asynchronously (CUDA) it is the time to queue the work.
func (a *InRun) TakeSeconds() float64 {
	s := a.seconds
	a.seconds = 0
	return s
}

var (
	_ Accumulator = (*InRun)(nil)
	_ nn.StepHook = (*InRun)(nil)
)
