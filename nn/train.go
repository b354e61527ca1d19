package nn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/internal/bigmem"
	"github.com/dainx/dainx/internal/keyperm"
)

// Set is a set of cells and their values resident on a backend, in global
// rows (see MLP.Rows), ready for Forward. On a backend whose buffers are
// host memory (compute.HostBuffers: the CPU), Rows and Vals are the host
// copies themselves, so a set is held once.
type Set struct {
	Rows compute.I32 // T×N global rows
	Vals compute.F32 // T values
	rows []int32
	vals []float32
}

// NewSet uploads cells (T×N entity indices, 0-based per mode) and their
// values (T) for use with m. It panics if the lengths do not match or an
// index is outside its mode.
func (m *Net) NewSet(cells []int32, vals []float64) *Set {
	return m.NewSetConcat([][]int32{cells}, [][]float64{vals})
}

// NewSetConcat is NewSet of the concatenation of the parts, cells[0] then
// cells[1] and so on with their values vals[i], without forming it. It
// panics if the parts' lengths do not match or an index is outside its
// mode.
func (m *Net) NewSetConcat(cells [][]int32, vals [][]float64) *Set {
	order := m.Order()
	if len(cells) != len(vals) {
		panic(fmt.Sprintf("nn: NewSetConcat: %d parts of cells and %d of values", len(cells), len(vals)))
	}
	n := 0
	for i := range cells {
		if len(cells[i]) != len(vals[i])*order {
			panic(fmt.Sprintf("nn: NewSet: %d indices and %d values for order %d", len(cells[i]), len(vals[i]), order))
		}
		n += len(vals[i])
	}
	s := &Set{rows: bigmem.Make[int32](n * order), vals: bigmem.Make[float32](n)}
	off := 0
	for i := range cells {
		m.Rows(s.rows[off*order:(off+len(vals[i]))*order], cells[i])
		for j, v := range vals[i] {
			s.vals[off+j] = float32(v)
		}
		off += len(vals[i])
	}
	if hb, ok := m.be.(compute.HostBuffers); ok {
		s.Rows, s.Vals = hb.WrapI32(s.rows), hb.WrapF32(s.vals)
		return s
	}
	s.Rows, s.Vals = m.be.AllocI32(len(s.rows)), m.be.Alloc(len(s.vals))
	m.be.UploadI32(s.Rows, s.rows)
	m.be.Upload(s.Vals, s.vals)
	return s
}

// Len returns the number of cells T.
func (s *Set) Len() int { return len(s.vals) }

// Free releases the device copies and drops the set's references to its
// host copies, so that they are collected even while the Set is still
// referenced. The set is unusable afterwards.
func (s *Set) Free() {
	if s.Rows != nil {
		s.Rows.Free()
		s.Vals.Free()
	}
	s.Rows, s.Vals, s.rows, s.vals = nil, nil, nil, nil
}

// batch returns the rows and values of cells [lo, hi).
func (s *Set) batch(order, lo, hi int) (compute.I32, compute.F32) {
	return s.Rows.Slice(lo*order, (hi-lo)*order), s.Vals.Slice(lo, hi-lo)
}

// TrainConfig holds the training hyper-parameters (SPEC step 1).
type TrainConfig struct {
	Epochs   int     // at most this many epochs (50)
	Batch    int     // cells per step (1024)
	Patience int     // stop after this many epochs without a better validation MSE (10)
	LR       float64 // Adam learning rate (1e-3); β₁ .9, β₂ .999, ε 1e-8
	// L2 is the coefficient λ of L2 regularisation, coupled as in
	// compute.AdamStep.L2 (PyTorch's Adam weight_decay): every Adam and
	// SparseAdam step takes the gradient g + λ·p of loss + (λ/2)‖p‖², over
	// every parameter it updates (the table, the Linear layers' weights and
	// biases; SparseAdam only the rows the step's batch touched). 0 (the
	// default) is no regularisation, bit for bit the steps without it.
	L2 float64
	// EmbeddingOptimizer updates the embedding table: Adam (dense Adam
	// over every row each step, the paper's; "" means Adam) or SparseAdam
	// (only the rows the step's batch touched; see compute.Backend's
	// SparseAdam). The Linear layers always take dense Adam.
	EmbeddingOptimizer string
	// Shuffle orders the training cells anew every epoch (a shuffle of
	// the previous epoch's order).
	Shuffle *rand.Rand
	// Order, if not nil, gives each epoch's order of the training cells
	// instead (Shuffle is then not used): epoch k's step s takes the cells
	// at positions [s·Batch, (s+1)·Batch) of Order(k). A keyed order
	// (KeyedOrder) is computed, not stored, so TrainDist places each
	// process's own cells without the order of all of them.
	Order func(epoch int) EpochOrder
	// ValGradSum, if not nil (D+1 elements), receives at each epoch's
	// validation pass G = Σ_{z∈val} ∇_{W_out,b_out} ℓ(Θ_k, z) with
	// ℓ = (x̂−x)², the validation gradient sum of TracIn-CP (=).
	ValGradSum compute.F32
	// AfterEpoch, if not nil, runs after each epoch's validation pass with
	// the model at that epoch's parameters Θ_k. An error stops training.
	AfterEpoch func(Epoch) error
	// Eager turns graph replay off (dain.Config.Graphs "off", the flag
	// -graphs off, whose default $DAINX_CUDA_GRAPHS=0 sets; nn reads no
	// environment). On a backend that implements compute.Capturer (CUDA),
	// Train by default records a whole step — forward pass, MSE gradient,
	// backward pass and Adam (dense, or dense and sparse) — as a graph once
	// per batch size (at most two: the full batch and the last, shorter
	// one), reading fixed staging buffers; each step copies its cells and
	// its two Adam constants (compute.AdamStep.Scalars, uploaded for the
	// whole epoch at its start) into them, launches the graph and copies out
	// its squared error: a few driver calls per step instead of about one
	// per kernel, results bit-identical to eager steps, and graph memory
	// independent of the training set. On by default since its first GPU
	// runs (H100 2026-11-24, H200 2026-11-26: bit-identical to eager
	// training, the step 6–8% faster; bench/results/gpu-2026-11-26); other
	// backends ignore it. Steps with hooks (Steps) always run eagerly.
	Eager bool
	// Resume, if not nil, continues the run whose state Save received
	// after epoch Resume.Epoch instead of starting afresh: the parameters,
	// Adam's moments and step, the best parameters, the cell order and the
	// epochs so far are restored, and training goes on with epoch
	// Resume.Epoch+1 (or stops at once if that run had stopped there). The
	// caller restores everything else the epochs use to its state at that
	// moment (Shuffle's source, AfterEpoch's own state, the model's
	// initialisation being overwritten). With the same configuration the
	// continued run is bit-identical to one never interrupted on a
	// deterministic backend (the CPU). Train returns an error if the state
	// does not fit the model or the training set.
	Resume *TrainState
	// Save, if not nil, receives the state after every epoch, after
	// AfterEpoch; an error stops training. The state's slices are fresh
	// copies on the host that Train does not touch again.
	Save func(*TrainState) error
	// Adam, if not nil, is kept pointing at the run's Adam state (see
	// AdamState): what TracIn with Adam's preconditioner reads at each
	// checkpoint.
	Adam *AdamState
	// Steps, if not empty, observe the training steps (see StepHook): the
	// in-run influence estimator. A run with step hooks takes no graph
	// replay (Graphs is ignored).
	Steps []StepHook
}

// The embedding optimisers of TrainConfig.EmbeddingOptimizer.
const (
	// Adam updates every row of the table every step (PyTorch's Adam
	// over a dense nn.Embedding, as the paper and its reference code):
	// O(R·E) work per step. Rows a batch does not touch still move, by
	// their decaying moments.
	Adam = "adam"
	// SparseAdam updates only the rows the batch touched, with the global
	// step's bias correction (PyTorch's SparseAdam, TensorFlow's
	// LazyAdam): O(B·N·E) work per step, whatever the table's size. On a
	// tensor small enough that every batch touches every row it is Adam,
	// bit for bit on the CPU.
	SparseAdam = "sparse-adam"
)

// EmbeddingOptimizers lists the names TrainConfig.EmbeddingOptimizer takes.
var EmbeddingOptimizers = []string{Adam, SparseAdam}

// CheckEmbeddingOptimizer reports a name that is not an embedding
// optimiser ("" is Adam).
func CheckEmbeddingOptimizer(name string) error {
	switch name {
	case "", Adam, SparseAdam:
		return nil
	}
	return fmt.Errorf("embedding optimizer %q: want %s or %s", name, Adam, SparseAdam)
}

// CheckL2 reports an L2 coefficient (TrainConfig.L2) that is not a finite
// number ≥ 0.
func CheckL2(l2 float64) error {
	if !(l2 >= 0) || math.IsInf(l2, 1) {
		return fmt.Errorf("l2 %g: want a finite value ≥ 0", l2)
	}
	return nil
}

// TrainState is a training run after a whole epoch: what Train needs to
// continue it exactly (see TrainConfig.Resume and Save).
type TrainState struct {
	Epoch  int       // epochs completed, k
	Step   int       // Adam's step count t after epoch k
	Params []float32 // Θ_k, laid out like Net.Params
	AdamM  []float32 // Adam's first moment
	AdamV  []float32 // Adam's second moment
	Best   []float32 // the parameters of the best epoch so far
	Perm   []int32   // the order of the training cells in epoch k, which the next epoch shuffles again
	Result Result    // the best epoch, its validation MSE and epochs 1…k

	// A sharded table's rows held by this process (Net.ShardRows), their
	// Adam moments and best copy; nil when the table is whole.
	Shard, ShardM, ShardV, ShardBest []float32
}

// DivergenceError reports a training run stopped because its loss left
// any sane range (see Train).
type DivergenceError struct {
	Epoch    int     // the 1-based epoch
	TrainMSE float64 // its mean training batch MSE
	ValMSE   float64 // its validation MSE
	Reason   string  // which bound, in words
}

func (e *DivergenceError) Error() string {
	return fmt.Sprintf("nn: the training diverged at epoch %d: %s (train MSE %.6g, validation MSE %.6g)", e.Epoch, e.Reason, e.TrainMSE, e.ValMSE)
}

// Divergence bounds. A freshly initialised model's outputs are O(1) (the
// PyTorch initialisation does not depend on the data), so an untrained
// model's MSE is about the mean squared value ms plus O(1), and predicting 0
// gives exactly ms. A model that learns only lowers its loss. So an epoch
// whose mean training MSE or validation MSE exceeds SaneMSEFactor·(ms + 1),
// six orders of magnitude above an untrained model, or whose training MSE
// grew GrowthFactor-fold over the first epoch's (which includes the
// untrained steps), has diverged: a learning rate too high for the values'
// scale, or values so large that float32 overflows. `dainx augment -lr 100`
// on the demo tensor reaches a training MSE of 10¹⁵ in its first epoch.
const (
	SaneMSEFactor = 1e6
	GrowthFactor  = 1e3
)

// divergence returns a *DivergenceError if epoch ep of a run whose training
// values have mean square ms has left the sane range, first its first
// epoch.
func divergence(ep, first Epoch, ms float64) error {
	bound := SaneMSEFactor * (ms + 1)
	reason := ""
	switch {
	case math.IsNaN(ep.TrainMSE) || math.IsInf(ep.TrainMSE, 0):
		reason = "the training MSE is not finite"
	case math.IsNaN(ep.ValMSE) || math.IsInf(ep.ValMSE, 0):
		reason = "the validation MSE is not finite"
	case ep.TrainMSE > bound:
		reason = fmt.Sprintf("the training MSE exceeds %g × (mean squared value %.6g + 1)", SaneMSEFactor, ms)
	case ep.ValMSE > bound:
		reason = fmt.Sprintf("the validation MSE exceeds %g × (mean squared training value %.6g + 1)", SaneMSEFactor, ms)
	case ep.N > 1 && ep.TrainMSE > GrowthFactor*first.TrainMSE:
		reason = fmt.Sprintf("the training MSE grew more than %g-fold over epoch 1's %.6g", GrowthFactor, first.TrainMSE)
	default:
		return nil
	}
	return &DivergenceError{Epoch: ep.N, TrainMSE: ep.TrainMSE, ValMSE: ep.ValMSE, Reason: reason}
}

// MeanSquare returns the mean of the squared values of s (in float64), the
// scale the divergence bounds are relative to.
func (s *Set) MeanSquare() float64 {
	var sum float64
	for _, v := range s.vals {
		sum += float64(v) * float64(v)
	}
	if len(s.vals) == 0 {
		return 0
	}
	return sum / float64(len(s.vals))
}

// Epoch reports one finished epoch.
type Epoch struct {
	N        int     // 1-based epoch number k
	TrainMSE float64 // mean over the epoch's steps of the batch MSE
	ValMSE   float64 // validation MSE of Θ_k
	Best     bool    // ValMSE is the lowest so far: Θ_k is the best checkpoint
	Seconds  float64 // wall time of the epoch's steps and validation pass
}

// Result summarises a training run.
type Result struct {
	BestEpoch  int // k of the best checkpoint, restored into the model
	BestValMSE float64
	Epochs     []Epoch
}

// EpochOrder is one epoch's order of the n training cells: a permutation
// of 0..n−1.
type EpochOrder interface {
	// Cell returns the training cell at position p.
	Cell(p int) int
	// Position returns the position of training cell c.
	Position(c int) int
}

// keyedOrderStream is the keyperm stream of KeyedOrder.
const keyedOrderStream = 0x6f72_6465_7200_0000

// KeyedOrder returns TrainConfig.Order for n training cells: epoch k's
// order is the keyed permutation of (seed, stream, k) (internal/keyperm),
// a random order that any process can compute for any cell in O(1), so
// the order is the same for every number of processes and nothing of size
// n is stored to find a cell's step. Different streams of one seed give
// unrelated orders.
func KeyedOrder(n int, seed, stream uint64) func(epoch int) EpochOrder {
	return func(epoch int) EpochOrder {
		return keyedOrder(keyperm.New(n, seed, (keyedOrderStream^stream)*0x9e3779b97f4a7c15+uint64(epoch)))
	}
}

type keyedOrder keyperm.Perm

func (o keyedOrder) Cell(p int) int     { return keyperm.Perm(o).Inv(p) }
func (o keyedOrder) Position(c int) int { return keyperm.Perm(o).At(c) }

// stageCells is the most cells Train stages on the host at once when it
// uploads the shuffled training set to a device.
var stageCells = 1 << 20 // a variable for tests

// checkTrainConfig checks the fields of cfg that Train and TrainRows
// share: Epochs, Batch, Patience and LR positive, L2 valid, Batch within
// m's capacity.
func checkTrainConfig(m *Net, cfg TrainConfig) error {
	if cfg.Epochs <= 0 || cfg.Batch <= 0 || cfg.Patience <= 0 || !(cfg.LR > 0) {
		return fmt.Errorf("nn: epochs %d, batch %d, patience %d, lr %g: all must be positive", cfg.Epochs, cfg.Batch, cfg.Patience, cfg.LR)
	}
	if err := CheckL2(cfg.L2); err != nil {
		return fmt.Errorf("nn: %w", err)
	}
	if cfg.Batch > m.capacity {
		return fmt.Errorf("nn: batch %d exceeds the model's capacity %d", cfg.Batch, m.capacity)
	}
	return nil
}

// meanStepMSE is an epoch's training MSE: the mean over its steps of each
// step's batch-mean MSE, sq holding each step's sum of squared errors
// over batches of batch of the T cells (the last one shorter).
func meanStepMSE(sq []float32, batch, T int) float64 {
	var mse float64
	for s, v := range sq {
		mse += float64(v) / float64(min((s+1)*batch, T)-s*batch)
	}
	return mse / float64(len(sq))
}

// Train fits m to train by Adam on the batch-mean MSE (paper eq. 1) with
// shuffled mini-batches, evaluates on val after every epoch, stops after
// Patience epochs without improvement (or Epochs epochs), and leaves the
// best checkpoint's parameters in m. It returns ctx's error if cancelled,
// the backend's sticky error if the device failed, and a
// *DivergenceError, before AfterEpoch and Save see that epoch, if an
// epoch's training or validation MSE is not finite or leaves the bounds
// of SaneMSEFactor and GrowthFactor.
func Train(ctx context.Context, m *Net, train, val *Set, cfg TrainConfig) (Result, error) {
	var res Result
	if err := checkTrainConfig(m, cfg); err != nil {
		return res, err
	}
	if m.sh != nil {
		return res, fmt.Errorf("nn: a model whose table is sharded trains only with TrainDist")
	}
	if err := CheckEmbeddingOptimizer(cfg.EmbeddingOptimizer); err != nil {
		return res, fmt.Errorf("nn: %w", err)
	}
	sparse := cfg.EmbeddingOptimizer == SparseAdam
	if train.Len() == 0 || val.Len() == 0 {
		return res, fmt.Errorf("nn: %d training and %d validation cells; both must be non-empty", train.Len(), val.Len())
	}
	be, order, T := m.be, m.Order(), train.Len()
	if T > math.MaxInt32 {
		return res, fmt.Errorf("nn: %d training cells; at most %d can be trained on", T, math.MaxInt32)
	}
	steps := (T + cfg.Batch - 1) / cfg.Batch
	capturer, _ := be.(compute.Capturer)
	if cfg.Eager || len(cfg.Steps) > 0 {
		capturer = nil
	}
	for _, h := range cfg.Steps {
		if h.Every() < 1 {
			return res, fmt.Errorf("nn: a step hook every %d steps; want ≥ 1", h.Every())
		}
	}
	// The shuffled training cells. On a backend whose buffers are host
	// memory (the CPU) each step gathers its batch into one batch-sized
	// buffer, so no shuffled copy of the set is held. Elsewhere the
	// shuffled set lives on the device (a captured step reads a fixed
	// slice of it), uploaded each epoch through a host buffer of at most
	// stageCells cells.
	hb, _ := be.(compute.HostBuffers)
	perStep := hb != nil && capturer == nil
	var shufRows compute.I32
	var shufVals compute.F32
	var hostRows []int32
	var hostVals []float32
	if perStep {
		hostRows, hostVals = make([]int32, cfg.Batch*order), make([]float32, cfg.Batch)
		shufRows, shufVals = hb.WrapI32(hostRows), hb.WrapF32(hostVals)
	} else {
		shufRows, shufVals = be.AllocI32(T*order), be.Alloc(T)
		c := min(T, stageCells)
		hostRows, hostVals = make([]int32, c*order), make([]float32, c)
	}
	adamM, adamV := be.Alloc(m.params.Len()), be.Alloc(m.params.Len())
	delta, sq := be.Alloc(m.capacity), be.Alloc(steps)
	// The best epoch's parameters. While the best epoch is the last one
	// trained (bestIsCurrent), they are m.params themselves: best is
	// allocated and copied to only when a later epoch is about to change
	// them, so a run whose last epoch is its best (every one-epoch run)
	// neither holds nor writes a second copy of the tables.
	var best compute.F32
	bestIsCurrent := false
	keepBest := func() {
		if best == nil {
			best = be.Alloc(m.params.Len())
		}
		be.Copy(best, m.params)
		bestIsCurrent = false
	}
	defer func() {
		for _, b := range []compute.F32{shufVals, adamM, adamV, best, delta, sq} {
			if b != nil {
				b.Free()
			}
		}
		shufRows.Free()
	}()
	perm := bigmem.Make[int32](T)
	for i := range perm {
		perm[i] = int32(i)
	}
	// gather copies the cells perm[lo:hi] into the host buffers.
	gather := func(lo, hi int) {
		for i, p := range perm[lo:hi] {
			copy(hostRows[i*order:(i+1)*order], train.rows[int(p)*order:(int(p)+1)*order])
			hostVals[i] = train.vals[p]
		}
	}
	sqHost := make([]float32, steps)
	// pass queues the forward pass, the MSE gradient (its squared error
	// into sqOut) and the backward pass of the b cells rows, y.
	pass := func(rows compute.I32, y, sqOut compute.F32, b int) {
		d := delta.Slice(0, b)
		m.ForwardMSE(rows, y, d, sqOut, float32(2/float64(b)))
		if sparse {
			m.BackwardSparse(rows, d)
		} else {
			m.Backward(rows, d, false)
		}
	}
	// step queues the pass of step s, which reads cells [lo, hi) of the
	// shuffled set.
	step := func(s int) {
		lo, hi := s*cfg.Batch, min((s+1)*cfg.Batch, T)
		if perStep {
			gather(lo, hi)
			pass(shufRows.Slice(0, (hi-lo)*order), shufVals.Slice(0, hi-lo), sq.Slice(s, 1), hi-lo)
			return
		}
		pass(shufRows.Slice(lo*order, (hi-lo)*order), shufVals.Slice(lo, hi-lo), sq.Slice(s, 1), hi-lo)
	}
	// Graph replay: one graph per batch size (the full batch and the last,
	// shorter one), each reading fixed staging buffers into which every
	// step first copies its cells, and writing its squared error to a
	// fixed element copied to the step's after the replay. So the graphs'
	// memory and capture time do not grow with the training set.
	// The graph holds the step's Adam too, reading the step's constants
	// from stAdam (compute.AdamStep.Scalars), which each step fills from
	// the epoch's table of them.
	graphs := map[int]compute.Graph{}
	var stRows compute.I32
	var stVals, stSq, stAdam, adamTable compute.F32
	var hostAdam []float32
	adam := compute.AdamStep{LR: cfg.LR, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, L2: cfg.L2}
	if cfg.Adam != nil {
		*cfg.Adam = AdamState{M: adamM, V: adamV, Step: adam}
	}
	// The training cells' numbers in each epoch's order, for the step
	// hooks: perm itself on a backend whose buffers are host memory, else
	// a device copy uploaded every epoch.
	var cellsDev compute.I32
	if len(cfg.Steps) > 0 && !perStep {
		cellsDev = be.AllocI32(T)
		defer cellsDev.Free()
	}
	if capturer != nil {
		stRows, stVals, stSq = be.AllocI32(cfg.Batch*order), be.Alloc(cfg.Batch), be.Alloc(1)
		stAdam, adamTable, hostAdam = be.Alloc(2), be.Alloc(2*steps), make([]float32, 2*steps)
		defer func() {
			for _, g := range graphs {
				g.Free()
			}
			stRows.Free()
			for _, b := range []compute.F32{stVals, stSq, stAdam, adamTable} {
				b.Free()
			}
		}()
		pass(stRows, stVals, stSq, min(cfg.Batch, T)) // sizes the backend's scratch memory before any capture
	}
	// captured is what a graph of a step of b cells holds.
	captured := func(b int) {
		pass(stRows.Slice(0, b*order), stVals.Slice(0, b), stSq, b)
		a := adam
		a.T, a.Scalars = 1, stAdam
		m.adamStep(sparse, adamM, adamV, a)
	}
	res.BestValMSE = math.Inf(1)
	first := 1
	if r := cfg.Resume; r != nil {
		best = be.Alloc(m.params.Len())
		if err := resume(m, r, T, perm, adamM, adamV, best); err != nil {
			return res, err
		}
		adam.T, res, first = r.continued(cfg)
		if cfg.Adam != nil {
			cfg.Adam.Step = adam
		}
	}
	ms := train.MeanSquare()
	for k := first; k <= cfg.Epochs; k++ {
		start := time.Now()
		switch {
		case cfg.Order != nil:
			o := cfg.Order(k)
			for p := range perm {
				perm[p] = int32(o.Cell(p))
			}
		case cfg.Shuffle != nil:
			cfg.Shuffle.Shuffle(T, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		}
		if bestIsCurrent {
			keepBest()
		}
		if !perStep {
			for lo := 0; lo < T; lo += len(hostVals) {
				hi := min(lo+len(hostVals), T)
				gather(lo, hi)
				be.UploadI32(shufRows.Slice(lo*order, (hi-lo)*order), hostRows[:(hi-lo)*order])
				be.Upload(shufVals.Slice(lo, hi-lo), hostVals[:hi-lo])
			}
			if cellsDev != nil {
				be.UploadI32(cellsDev, perm)
			}
		}
		if capturer != nil {
			for s := range steps {
				a := adam
				a.T += s + 1
				c := compute.AdamScalars(a)
				copy(hostAdam[2*s:], c[:])
			}
			be.Upload(adamTable, hostAdam)
		}
		for s := 0; s < steps; s++ {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			adam.T++
			if capturer == nil {
				hooked := hooksAt(cfg.Steps, adam.T)
				for _, h := range hooked {
					h.Before(adam.T)
				}
				step(s)
				m.adamStep(sparse, adamM, adamV, adam)
				if cfg.Adam != nil {
					cfg.Adam.Step = adam
				}
				if len(hooked) > 0 {
					lo, hi := s*cfg.Batch, min((s+1)*cfg.Batch, T)
					b := StepBatch{N: hi - lo, Delta: delta.Slice(0, hi-lo), Scale: float32(2 / float64(hi-lo))}
					if perStep {
						b.Rows, b.Cells = shufRows.Slice(0, b.N*order), hb.WrapI32(perm[lo:hi])
					} else {
						b.Rows, b.Cells = shufRows.Slice(lo*order, b.N*order), cellsDev.Slice(lo, b.N)
					}
					for _, h := range hooked {
						h.After(adam.T, b)
					}
				}
			} else {
				lo, hi := s*cfg.Batch, min((s+1)*cfg.Batch, T)
				b := hi - lo
				be.CopyI32(stRows.Slice(0, b*order), shufRows.Slice(lo*order, b*order))
				be.Copy(stVals.Slice(0, b), shufVals.Slice(lo, b))
				be.Copy(stAdam, adamTable.Slice(2*s, 2))
				g := graphs[b]
				if g == nil {
					var err error
					if g, err = capturer.Capture(func() { captured(b) }); err != nil {
						return res, fmt.Errorf("nn: capture of a step of %d cells: %w", b, err)
					}
					graphs[b] = g
				}
				g.Launch()
				be.Copy(sq.Slice(s, 1), stSq)
			}
		}
		if cfg.Adam != nil {
			cfg.Adam.Step = adam
		}
		if err := be.Download(sqHost, sq); err != nil {
			return res, fmt.Errorf("nn: epoch %d: %w", k, err)
		}
		ep := Epoch{N: k}
		ep.TrainMSE = meanStepMSE(sqHost, cfg.Batch, T)
		var err error
		if ep.ValMSE, err = m.evaluate(val, cfg.ValGradSum); err != nil {
			return res, fmt.Errorf("nn: epoch %d: %w", k, err)
		}
		if k == 1 {
			err = divergence(ep, ep, ms)
		} else {
			err = divergence(ep, res.Epochs[0], ms)
		}
		if err != nil {
			return res, err
		}
		if ep.ValMSE < res.BestValMSE {
			ep.Best = true
			res.BestEpoch, res.BestValMSE = k, ep.ValMSE
			bestIsCurrent = true
		}
		ep.Seconds = time.Since(start).Seconds()
		res.Epochs = append(res.Epochs, ep)
		if cfg.AfterEpoch != nil {
			if err := cfg.AfterEpoch(ep); err != nil {
				return res, err
			}
		}
		if cfg.Save != nil {
			bestNow := best
			if bestIsCurrent || best == nil {
				bestNow = m.params
			}
			st, err := state(m, k, adam.T, perm, adamM, adamV, bestNow, res)
			if err != nil {
				return res, err
			}
			if err := cfg.Save(st); err != nil {
				return res, err
			}
		}
		if k-res.BestEpoch >= cfg.Patience {
			break
		}
	}
	if !bestIsCurrent && best != nil {
		be.Copy(m.params, best)
	}
	return res, be.Sync()
}

// hooksAt returns the hooks that observe step t.
func hooksAt(hooks []StepHook, t int) []StepHook {
	var out []StepHook
	for _, h := range hooks {
		if (t-1)%h.Every() == 0 {
			out = append(out, h)
		}
	}
	return out
}

// adamStep applies one optimiser step after a Backward (dense) or
// BackwardSparse (sparse): Adam over every parameter, or Adam over the
// Linear layers and SparseAdam over the rows the batch touched. adamM and
// adamV are laid out like Params.
func (m *Net) adamStep(sparse bool, adamM, adamV compute.F32, s compute.AdamStep) {
	if !sparse {
		m.be.Adam(m.params, m.grads, adamM, adamV, s)
		return
	}
	rows, count, grad := m.SparseGrad()
	m.sparseAdamStep(rows, count, grad, adamM, adamV, s)
}

// sparseAdamStep is the sparse optimiser step given the table's compact
// gradient (rows, count, grad as SparseGrad returns them): Adam over the
// Linear layers, SparseAdam over the listed rows.
func (m *Net) sparseAdamStep(rows, count compute.I32, grad, adamM, adamV compute.F32, s compute.AdamStep) {
	t, n := m.table.Len(), m.params.Len()
	p, g := m.DenseParams()
	m.be.Adam(p, g, adamM.Slice(t, n-t), adamV.Slice(t, n-t), s)
	m.be.SparseAdam(m.table, grad, adamM.Slice(0, t), adamV.Slice(0, t), rows, count, m.width, s)
}

// state copies the run after epoch k to the host.
func state(m *Net, k, step int, perm []int32, adamM, adamV, best compute.F32, res Result) (*TrainState, error) {
	st := &TrainState{Epoch: k, Step: step, Perm: append([]int32(nil), perm...),
		Result: Result{BestEpoch: res.BestEpoch, BestValMSE: res.BestValMSE, Epochs: append([]Epoch(nil), res.Epochs...)}}
	for _, c := range []struct {
		dst *[]float32
		src compute.F32
	}{{&st.Params, m.params}, {&st.AdamM, adamM}, {&st.AdamV, adamV}, {&st.Best, best}} {
		*c.dst = make([]float32, c.src.Len())
		if err := m.be.Download(*c.dst, c.src); err != nil {
			return nil, fmt.Errorf("nn: epoch %d: %w", k, err)
		}
	}
	if sh := m.sh; sh != nil {
		for _, c := range []struct {
			dst *[]float32
			src compute.F32
		}{{&st.Shard, sh.own}, {&st.ShardM, sh.adamM}, {&st.ShardV, sh.adamV}, {&st.ShardBest, sh.best}} {
			*c.dst = make([]float32, c.src.Len())
			if err := m.be.Download(*c.dst, c.src); err != nil {
				return nil, fmt.Errorf("nn: epoch %d: %w", k, err)
			}
		}
	}
	return st, nil
}

// continued returns Adam's step, the result so far and the first epoch to
// train of the run whose state r is, continued with cfg (past cfg.Epochs
// when that run had stopped).
func (r *TrainState) continued(cfg TrainConfig) (step int, res Result, first int) {
	res = Result{BestEpoch: r.Result.BestEpoch, BestValMSE: r.Result.BestValMSE, Epochs: append([]Epoch(nil), r.Result.Epochs...)}
	first = r.Epoch + 1
	if r.Epoch >= cfg.Epochs || r.Epoch-res.BestEpoch >= cfg.Patience {
		first = cfg.Epochs + 1 // that run had stopped
	}
	return r.Step, res, first
}

// resume restores the state r into the model and Train's buffers, after
// checking that it fits them. perm (T cells) receives the saved order; a
// keyed order saves none (TrainDist: T = 0, perm nil).
func resume(m *Net, r *TrainState, T int, perm []int32, adamM, adamV, best compute.F32) error {
	n := m.params.Len()
	if len(r.Params) != n || len(r.AdamM) != n || len(r.AdamV) != n || len(r.Best) != n || len(r.Perm) != T {
		return fmt.Errorf("nn: the saved state (%d parameters, %d training cells) does not fit this model (%d parameters) and training set (%d cells)", len(r.Params), len(r.Perm), n, T)
	}
	if r.Epoch < 1 || r.Step < 0 || len(r.Result.Epochs) != r.Epoch {
		return fmt.Errorf("nn: the saved state after epoch %d holds %d epochs", r.Epoch, len(r.Result.Epochs))
	}
	seen := make([]bool, T)
	for i, p := range r.Perm {
		if p < 0 || int(p) >= T || seen[p] {
			return fmt.Errorf("nn: the saved cell order is not a permutation of %d cells", T)
		}
		seen[p] = true
		perm[i] = p
	}
	if sh := m.sh; sh != nil {
		n := sh.own.Len()
		if len(r.Shard) != n || len(r.ShardM) != n || len(r.ShardV) != n || len(r.ShardBest) != n {
			return fmt.Errorf("nn: the saved state holds %d rows' values of this process's sharded table, which has %d", len(r.Shard), n)
		}
		m.be.Upload(sh.own, r.Shard)
		m.be.Upload(sh.adamM, r.ShardM)
		m.be.Upload(sh.adamV, r.ShardV)
		m.be.Upload(sh.best, r.ShardBest)
	} else if r.Shard != nil {
		return fmt.Errorf("nn: the saved state is of a sharded table; this model's table is whole")
	}
	m.be.Upload(m.params, r.Params)
	m.be.Upload(adamM, r.AdamM)
	m.be.Upload(adamV, r.AdamV)
	m.be.Upload(best, r.Best)
	return nil
}

// Evaluate returns the mean squared error of m over s, Σ(x̂−x)²/T, summed in
// float64 over batches of the model's capacity. It returns the backend's
// sticky error if the device failed. The RMSE is its square root.
func (m *Net) Evaluate(s *Set) (float64, error) { return m.evaluate(s, nil) }

// EvaluateGrad is Evaluate that also sets gsum (D+1 elements, =) to the sum
// over s of the per-cell output-layer gradients of ℓ_z = (x̂_z−x_z)²,
//
//	gsum = Σ_{z∈s} 2e_z·[Z_M(z), 1],
//
// TracIn's G_k when s is the validation set. It panics if gsum has the wrong
// length.
func (m *Net) EvaluateGrad(s *Set, gsum compute.F32) (float64, error) {
	if gsum == nil {
		panic("nn: EvaluateGrad: nil gradient sum")
	}
	return m.evaluate(s, gsum)
}

func (m *Net) evaluate(s *Set, gsum compute.F32) (float64, error) {
	be, order, T := m.be, m.Order(), s.Len()
	B := m.capacity
	nb := (T + B - 1) / B
	all := m.Batches(nb) // a sharded table: every process runs as many
	if T == 0 {
		for i := 0; i < all; i++ {
			m.Skip()
		}
		if gsum != nil {
			be.Fill(gsum, 0)
		}
		return math.NaN(), nil
	}
	sq, delta := be.Alloc(nb), be.Alloc(B)
	defer sq.Free()
	defer delta.Free()
	d := m.LastHidden()
	var gw, gb, w compute.F32
	if gsum != nil {
		if gsum.Len() != d+1 {
			panic(fmt.Sprintf("nn: validation gradient sum of %d elements, want %d", gsum.Len(), d+1))
		}
		be.Fill(gsum, 0)
		gw, gb = gsum.Slice(0, d), gsum.Slice(d, 1)
		w, _ = m.OutputLayer()
	}
	for i := 0; i < nb; i++ {
		lo, hi := i*B, min((i+1)*B, T)
		rows, y := s.batch(order, lo, hi)
		dl := delta.Slice(0, hi-lo)
		m.ForwardMSE(rows, y, dl, sq.Slice(i, 1), 2)
		if gsum != nil {
			be.LinearBackward(nil, gw, gb, dl, m.Hidden(hi-lo), w, d, 1, false, true)
		}
	}
	for i := nb; i < all; i++ {
		m.Skip()
	}
	host := make([]float32, nb)
	if err := be.Download(host, sq); err != nil {
		return 0, err
	}
	var sum float64
	for _, v := range host {
		sum += float64(v)
	}
	return sum / float64(T), nil
}

// Predict returns the model's prediction for every cell of s (T values).
// When the table is sharded it is collective (every process calls it, each
// with its own cells; see Net.Batches), as Evaluate is.
func (m *Net) Predict(s *Set) ([]float32, error) {
	out := make([]float32, s.Len())
	order := m.Order()
	nb := (s.Len() + m.capacity - 1) / m.capacity
	all := m.Batches(nb)
	for lo := 0; lo < s.Len(); lo += m.capacity {
		hi := min(lo+m.capacity, s.Len())
		rows, _ := s.batch(order, lo, hi)
		if err := m.be.Download(out[lo:hi], m.Forward(rows)); err != nil {
			return nil, err
		}
	}
	for i := nb; i < all; i++ {
		m.Skip()
	}
	return out, nil
}

// Auto is the EmbeddingOptimizer setting a caller resolves with
// ChooseEmbeddingOptimizer (Train itself does not accept it).
const Auto = "auto"

// adamFlopsPerElement is what ChooseEmbeddingOptimizer charges one table
// element of a dense Adam step, in multiply-adds of the step's GEMMs.
// Measured on the 2-core development VM (AMD EPYC, AVX2): Adam takes about
// 0.6 ns an element (it streams 28 bytes), the step's GEMMs about 0.05 ns
// a multiply-add, so one element costs about 12 multiply-adds.
const adamFlopsPerElement = 12

// ChooseEmbeddingOptimizer resolves Auto for a model whose table has
// rows×width elements and whose Linear layers are layers, trained with
// batches of the given size: Adam (the paper's) while a dense Adam step
// over the table costs less than the step's forward and backward passes,
// else SparseAdam, whose step does not grow with the table. It returns
// the choice and why, in words. Any other setting is returned as it is,
// with an empty reason.
func ChooseEmbeddingOptimizer(setting string, rows, width int, layers []Layer, batch int) (name, why string) {
	if setting != Auto {
		return setting, ""
	}
	table := rows * width
	var macs int
	for _, ly := range layers {
		macs += ly.Rows * ly.In * ly.Out
	}
	step := 3 * batch * macs // forward, dx and dw
	if adamFlopsPerElement*table <= step {
		return Adam, fmt.Sprintf("chosen automatically: dense Adam over the %d×%d table costs less than a step's %d multiply-adds", rows, width, step)
	}
	return SparseAdam, fmt.Sprintf("chosen automatically: the %d×%d table is too large for dense Adam at every step of %d multiply-adds", rows, width, step)
}

// ChooseEmbeddingOptimizer is the package function for m's table and
// layers.
func (m *Net) ChooseEmbeddingOptimizer(setting string, batch int) (name, why string) {
	return ChooseEmbeddingOptimizer(setting, m.table.Len()/m.width, m.width, m.layers, batch)
}
