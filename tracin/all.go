package tracin

import (
	"fmt"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
)

// Accumulator is a TracIn-CP accumulator that nn.Train drives through its
// AfterEpoch hook; LastLayer and AllLayers implement it.
type Accumulator interface {
	// Checkpoint adds checkpoint k's term to every training cell's
	// running score, with the model holding Θ_k; best says Θ_k is the best
	// checkpoint so far.
	Checkpoint(best bool) error
	// Scores returns the signed sums at the best checkpoint, one per
	// training cell.
	Scores() compute.F32
	// Free releases the accumulator's buffers.
	Free()
	// State copies the accumulator's state between checkpoints to the
	// host: what Restore needs to continue it exactly.
	State() (State, error)
	// Restore sets the state to s, which State returned for an
	// accumulator of the same training set; it returns an error if s does
	// not fit.
	Restore(s State) error
}

// State is an accumulator between two checkpoints: the number of
// checkpoints taken, the running sums and the sums at the best checkpoint
// so far, one per training cell. The validation gradient G_k is formed
// anew at every checkpoint, so it is not part of it.
type State struct {
	K         int
	Run, Best []float32
}

// sums are an accumulator's running and best sums and its checkpoint
// count k (the state State saves), on backend be; LastLayer, AllLayers
// and InRun embed them.
type sums struct {
	be        compute.Backend
	run, best compute.F32 // S so far and S at the best checkpoint: |train|
	k         int
}

// newSums allocates the sums of n training cells on be.
func newSums(be compute.Backend, n int) sums {
	return sums{be: be, run: be.Alloc(n), best: be.Alloc(n)}
}

// State returns the checkpoint count and the running and best sums.
func (a *sums) State() (State, error) {
	s := State{K: a.k, Run: make([]float32, a.run.Len()), Best: make([]float32, a.best.Len())}
	if err := a.be.Download(s.Run, a.run); err != nil {
		return s, fmt.Errorf("tracin: %w", err)
	}
	if err := a.be.Download(s.Best, a.best); err != nil {
		return s, fmt.Errorf("tracin: %w", err)
	}
	return s, nil
}

// Restore continues from s (on an error, from no checkpoint).
func (a *sums) Restore(s State) error {
	if len(s.Run) != a.run.Len() || len(s.Best) != a.best.Len() || s.K < 0 {
		a.k = 0
		return fmt.Errorf("tracin: a saved state of %d and %d scores after %d checkpoints does not fit %d training cells", len(s.Run), len(s.Best), s.K, a.run.Len())
	}
	a.be.Upload(a.run, s.Run)
	a.be.Upload(a.best, s.Best)
	a.k = s.K
	return nil
}

var (
	_ Accumulator = (*LastLayer)(nil)
	_ Accumulator = (*AllLayers)(nil)
)

// AllLayers accumulates TracIn-CP cell importance over every parameter of a
// Net, embeddings included (SPEC step 2, "options beyond the paper"). For a
// Linear layer y = Wa + b the per-cell gradient is δaᵀ, so
//
//	⟨∇W ℓ_z, G_W⟩ + ⟨∇b ℓ_z, G_b⟩ = Σ_rows δᵀ(G_W a + G_b)
//
// (compute.Backend.InfluenceDot; a CoSTCo convolution applied to R rows per
// cell sums its R row terms), and the embedding rows a cell gathered give
// compute.Backend.EmbeddingInfluence. G is the full gradient of the
// validation loss sum, formed once per checkpoint by a backward pass over
// the validation cells. Per-cell gradients are never stored; memory is
// O(|train| + parameters).
type AllLayers struct {
	m          *nn.Net
	train, val *nn.Set
	eta        float32
	g          compute.F32 // G: every parameter
	sums
	delta compute.F32 // 2e of a batch
	terms *layerTerms
	// opt, when not nil, is Θ's Adam state, whose preconditioner P_k
	// weighs G_k (tracin-adam; see NewAllLayersAdam); pre forms P_k∘G_k.
	opt *nn.AdamState
	pre *precond
	// sum, when not nil, sums G_k over the processes (SumValGrad), through
	// host, a parameter-sized buffer.
	sum  func([]float32)
	host []float32
}

// layerTerms adds, for the cells of the latest forward and backward pass
// of a Net, their per-cell gradient dot products with a full gradient
// vector G laid out like the parameters: the Linear layers' δᵀ(G_W a + G_b)
// (InfluenceDot; a layer of several rows per cell sums its row terms) and
// the embedding rows' (EmbeddingInfluence).
type layerTerms struct {
	m        *nn.Net
	rowScore compute.F32 // per-row terms of a multi-row layer: capacity × max rows
	ones     compute.F32 // summing vector
	zero     compute.F32 // one 0
}

func newLayerTerms(m *nn.Net) *layerTerms {
	be := m.Backend()
	maxRows := 1
	for l := 1; l <= m.NumLayers(); l++ {
		s, _, _, _, _ := m.Layer(l)
		maxRows = max(maxRows, s.Rows)
	}
	t := &layerTerms{m: m,
		rowScore: be.Alloc(m.Capacity() * maxRows),
		ones:     be.Alloc(max(m.Capacity(), maxRows)),
		zero:     be.Alloc(1),
	}
	be.Fill(t.ones, 1)
	return t
}

func (t *layerTerms) free() {
	for _, b := range []compute.F32{t.rowScore, t.ones, t.zero} {
		b.Free()
	}
}

// add adds eta·⟨d_z, G⟩ to score[b] for each of the n = score.Len()
// cells of the latest forward and backward pass (rows their global
// rows), d_z being the gradient of delta_z·x̂_z, from the activations
// (Act) and the gradients at them (DAct) that the passes left. With the
// backward pass's delta = 2e (the gradient of a cell's own loss e²) d_z
// is ∇ℓ_z; with a multiple c·2e, eta/c gives the same terms.
func (t *layerTerms) add(score compute.F32, rows compute.I32, g compute.F32, eta float32) {
	m := t.m
	be, n := m.Backend(), score.Len()
	table, _ := m.Table()
	gTable := g.Slice(0, table.Len())
	o := gTable.Len()
	for l := 1; l <= m.NumLayers(); l++ {
		s, _, _, _, _ := m.Layer(l)
		gw, gb := g.Slice(o, s.In*s.Out), g.Slice(o+s.In*s.Out, s.Out)
		o += s.In*s.Out + s.Out
		dy, x := m.DAct(l, n), m.Act(l-1, n)
		if s.Rows == 1 {
			be.InfluenceDot(score, dy, x, gw, gb, s.In, s.Out, eta)
			continue
		}
		// One term per row, then each cell's Rows terms summed
		// into its score: score[b] += 1·Σ_r 1·rowScore[b,r].
		rs := t.rowScore.Slice(0, n*s.Rows)
		be.Fill(rs, 0)
		be.InfluenceDot(rs, dy, x, gw, gb, s.In, s.Out, eta)
		be.InfluenceDot(score, t.ones.Slice(0, n), rs, t.ones.Slice(0, s.Rows), t.zero, s.Rows, 1, 1)
	}
	be.EmbeddingInfluence(score, m.DAct(0, n), rows, gTable, m.Width(), m.Layout(), eta)
}

// NewAllLayers prepares the accumulator for the cells of train against the
// validation cells val, with step size eta at every checkpoint.
func NewAllLayers(m *nn.Net, train, val *nn.Set, eta float64) *AllLayers {
	be := m.Backend()
	return &AllLayers{
		m: m, train: train, val: val, eta: float32(eta),
		g:     be.Alloc(m.NumParams()),
		sums:  newSums(be, train.Len()),
		delta: be.Alloc(m.Capacity()),
		terms: newLayerTerms(m),
	}
}

// Free releases the accumulator's buffers.
func (a *AllLayers) Free() {
	for _, b := range []compute.F32{a.g, a.run, a.best, a.delta} {
		b.Free()
	}
	a.terms.free()
	if a.pre != nil {
		a.pre.free()
	}
}

// Scores returns the signed TracIn sums at the best checkpoint.
func (a *AllLayers) Scores() compute.F32 { return a.best }

// SumValGrad makes the accumulator one of several processes' that hold
// the training and validation cells between them (each calling Checkpoint
// with its own, on replicas of one model whose embedding table is not
// sharded): at every checkpoint sum replaces G_k (NumParams float32s) by
// its sum over the processes, in place, before the cells' terms are taken.
func (a *AllLayers) SumValGrad(sum func([]float32)) { a.sum = sum }

// sumGrads sums the model's gradients (G_k) over the processes.
func (a *AllLayers) sumGrads() error {
	m, be := a.m, a.m.Backend()
	if a.host == nil {
		a.host = make([]float32, m.Grads().Len())
	}
	if err := be.Download(a.host, m.Grads()); err != nil {
		return fmt.Errorf("tracin: checkpoint %d: %w", a.k, err)
	}
	a.sum(a.host)
	be.Upload(m.Grads(), a.host)
	return nil
}

// Checkpoint forms G_k over the validation cells and adds
// η·⟨∇ℓ(Θ_k, z), G_k⟩ over all parameters to every training cell's score.
// It overwrites the model's gradients. It returns the backend's sticky
// error.
func (a *AllLayers) Checkpoint(best bool) error {
	a.k++
	m, be := a.m, a.m.Backend()
	order, B := m.Order(), m.Capacity()
	// G_k = Σ_val ∇ℓ: accumulate the backward passes of the validation
	// batches with delta = 2e.
	be.Fill(m.Grads(), 0)
	for lo := 0; lo < a.val.Len(); lo += B {
		hi := min(lo+B, a.val.Len())
		rows := a.val.Rows.Slice(lo*order, (hi-lo)*order)
		pred := m.Forward(rows)
		dl := a.delta.Slice(0, hi-lo)
		be.MSEGrad(dl, nil, pred, a.val.Vals.Slice(lo, hi-lo), 2)
		m.Backward(rows, dl, true)
	}
	if a.sum != nil {
		if err := a.sumGrads(); err != nil {
			return err
		}
	}
	if a.opt != nil {
		a.pre.apply(a.g, m.Grads(), a.opt.V, a.opt.Step, 1) // G' = P_k ∘ G_k
	} else {
		be.Copy(a.g, m.Grads())
	}
	for lo := 0; lo < a.train.Len(); lo += B {
		hi := min(lo+B, a.train.Len())
		n := hi - lo
		rows := a.train.Rows.Slice(lo*order, n*order)
		pred := m.Forward(rows)
		dl := a.delta.Slice(0, n)
		be.MSEGrad(dl, nil, pred, a.train.Vals.Slice(lo, n), 2)
		m.BackwardInput(rows, dl) // the table's gradient is not needed: O(batch)
		a.terms.add(a.run.Slice(lo, n), rows, a.g, a.eta)
	}
	if best {
		be.Copy(a.best, a.run)
	}
	if err := be.Sync(); err != nil {
		return fmt.Errorf("tracin: checkpoint %d: %w", a.k, err)
	}
	return nil
}
