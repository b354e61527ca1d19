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
	// (KeyedOrder) is computed, not stored, so a data-parallel Train (Dist)
	// places each process's own cells without the order of all of them.
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
	// checkpoint. With Dist, this process's replica's (the same on every
	// process); Train refuses it when the table is sharded, whose moments
	// its rows' owners hold.
	Adam *AdamState
	// Steps, if not empty, observe the training steps (see StepHook): the
	// in-run influence estimator. A run with step hooks takes no graph
	// replay (Graphs is ignored). Train refuses them with Dist.
	Steps []StepHook
	// Dist, if not nil, spreads the training over the processes of a
	// cluster (data parallelism; see Train and DistConfig): this process
	// holds the training cells Dist.Owned numbers. nil is one process
	// holding every cell.
	Dist *DistConfig
	// NewCells ≥ 0 is the number of the training set's last cells (this
	// process's own, with Dist) that are new cells of an augmentation,
	// and NewWeight ≥ 0 how much each of their squared errors counts
	// against an observed cell's: a step's loss is
	//
	//	(1/B)·Σ_b w_b·(ŷ_b − y_b)²,  w_b = NewWeight for a new cell, 1 else,
	//
	// over its global batch of B cells, so its gradient at ŷ_b is
	// (2/B)·w_b·(ŷ_b − y_b) (one compute.Backend.Mul more per step; the
	// squared errors the epoch's training MSE reports stay unweighted).
	// With NewCells 0, or NewWeight 0 or 1, the loss is the unweighted
	// one, bit for bit. Train refuses NewCells above the training set's
	// cells and a NewWeight that is not finite.
	NewCells  int
	NewWeight float64
}

// weighted reports whether cfg weights the new cells' loss.
func (cfg TrainConfig) weighted() bool {
	return cfg.NewCells > 0 && cfg.NewWeight != 0 && cfg.NewWeight != 1
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
	if cfg.NewCells < 0 || !(cfg.NewWeight >= 0) || math.IsInf(cfg.NewWeight, 0) {
		return fmt.Errorf("nn: %d new cells of weight %g: want ≥ 0 cells and a finite weight ≥ 0", cfg.NewCells, cfg.NewWeight)
	}
	return nil
}

// meanStepMSE is an epoch's training MSE: the mean over its steps of each
// step's batch-mean MSE, sq holding each step's sum of squared errors
// over batches of batch of the T cells (the last one shorter).
func meanStepMSE[F float32 | float64](sq []F, batch, T int) float64 {
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
//
// With cfg.Dist nil, Train runs on this process alone, on all of train
// and val (both non-empty). With cfg.Dist set it runs on the processes of
// cfg.Dist.Cluster (data parallelism), every process calling it with the
// same model initialisation, configuration and shuffle seed, its own
// share of the training cells (train, numbered by Dist.Owned) and of the
// validation cells (val, possibly empty): each step's global batch, the
// one a single process would take from the same order, is divided among
// the processes by who holds each cell, the gradients are summed over the
// processes (Dist.Exchange) and every process takes the same optimiser
// step, so the replicas stay identical; only the summation order of the
// gradients differs from one process's. The training and validation MSEs
// are then the global ones, ValGradSum is summed over the processes, and
// the result, the parameters left in m and every error are the same on
// every process. Resume and Save then need a keyed order (Order), whose
// saved state holds no cell order (Perm empty); graph replay does not
// apply (Eager is ignored) and step hooks (Steps) are refused. A model
// whose table is sharded (Config.Shard) trains only this way, with
// SparseAdam, on the processes it is sharded over.
func Train(ctx context.Context, m *Net, train, val *Set, cfg TrainConfig) (Result, error) {
	if err := checkTrain(m, train, val, cfg); err != nil {
		return Result{}, err
	}
	t := &trainer{ctx: ctx, m: m, be: m.be, train: train, val: val, cfg: cfg, d: cfg.Dist}
	defer t.free()
	if err := t.setup(); err != nil {
		return t.res, err
	}
	return t.run()
}

// checkTrain checks Train's arguments (see Train and checkDist).
func checkTrain(m *Net, train, val *Set, cfg TrainConfig) error {
	if err := checkTrainConfig(m, cfg); err != nil {
		return err
	}
	if err := CheckEmbeddingOptimizer(cfg.EmbeddingOptimizer); err != nil {
		return fmt.Errorf("nn: %w", err)
	}
	for _, h := range cfg.Steps {
		if h.Every() < 1 {
			return fmt.Errorf("nn: a step hook every %d steps; want ≥ 1", h.Every())
		}
	}
	if cfg.Dist != nil {
		return checkDist(m, train, cfg)
	}
	if m.sh != nil {
		return fmt.Errorf("nn: a model whose table is sharded trains only on a cluster (TrainConfig.Dist)")
	}
	if train.Len() == 0 || val.Len() == 0 {
		return fmt.Errorf("nn: %d training and %d validation cells; both must be non-empty", train.Len(), val.Len())
	}
	if train.Len() > math.MaxInt32 {
		return fmt.Errorf("nn: %d training cells; at most %d can be trained on", train.Len(), math.MaxInt32)
	}
	return nil
}

// trainer is one run of Train: its buffers and its state between steps
// and epochs. On one process (d nil) the local cells are all T training
// cells and every exchange is nothing; on a cluster ex sums what the
// processes computed.
type trainer struct {
	ctx        context.Context
	m          *Net
	be         compute.Backend
	train, val *Set
	cfg        TrainConfig
	d          *DistConfig // nil: one process

	order, T, steps int     // T: the training cells of all processes
	sparse          bool    // the table takes SparseAdam
	ms              float64 // the mean squared training value, for divergence

	// The local cells in the epoch's order. On a backend whose buffers are
	// host memory (the CPU; perStep) each step gathers its cells into one
	// batch-sized host buffer that is the backend's buffer itself, so no
	// ordered copy of the set is held. Elsewhere the ordered set lives on
	// the device (a captured step reads a fixed slice of it), uploaded each
	// epoch through host buffers of at most stageCells cells.
	hb       compute.HostBuffers
	perStep  bool
	hostRows []int32
	hostVals []float32
	shufRows compute.I32
	shufVals compute.F32
	// With weighted (TrainConfig.NewWeight), each ordered cell's loss
	// weight beside its value, and raw, a batch's unweighted gradient.
	weighted     bool
	hostW        []float32
	shufW        compute.F32
	raw          compute.F32
	perm         []int32     // T cells: one process's order, or a cluster's shuffled (legacy) order of all cells
	ord          []int32     // the local cells (numbers in train) in the epoch's order: perm itself on one process
	stepLo       []int       // steps+1: step s takes ord[stepLo[s]:stepLo[s+1]]
	cellsDev     compute.I32 // perm on the device, for the step hooks of a device backend
	adamM, adamV compute.F32 // Adam's moments, laid out like Net.Params
	delta, sq    compute.F32 // a batch's output gradient; each step's squared error
	sqHost       []float32
	adam         compute.AdamStep // the last step's
	shTraining   bool             // the sharded table's training buffers are allocated

	// The best epoch's parameters. While the best epoch is the last one
	// trained (bestIsCurrent), they are m.params themselves: best is
	// allocated and copied to only when a later epoch is about to change
	// them, so a run whose last epoch is its best (every one-epoch run)
	// neither holds nor writes a second copy of the tables. A sharded
	// table's best rows (tableShard.best) follow the same rule.
	best          compute.F32
	bestIsCurrent bool

	// Graph replay (one process on a compute.Capturer): one graph per
	// batch size (the full batch and the last, shorter one), each reading
	// fixed staging buffers into which every step first copies its cells,
	// and writing its squared error to a fixed element copied to the
	// step's after the replay. So the graphs' memory and capture time do
	// not grow with the training set. The graph holds the step's Adam
	// too, reading the step's constants from stAdam
	// (compute.AdamStep.Scalars), which each step fills from the epoch's
	// table of them.
	capturer                        compute.Capturer
	graphs                          map[int]compute.Graph
	stRows                          compute.I32
	stVals, stSq, stAdam, adamTable compute.F32
	stW                             compute.F32 // the step's weights (weighted)
	hostAdam                        []float32

	ex    *exchange // a cluster's exchanges; nil on one process
	res   Result
	first int // the first epoch to train
}

// setup allocates the run's buffers, resumes cfg.Resume and sets the
// first epoch.
func (t *trainer) setup() error {
	m, be, cfg := t.m, t.be, t.cfg
	t.order, t.sparse = m.Order(), cfg.EmbeddingOptimizer == SparseAdam
	L := t.train.Len()
	t.T = L
	if t.d != nil {
		t.T = t.d.Global
	}
	t.steps = (t.T + cfg.Batch - 1) / cfg.Batch
	t.capturer, _ = be.(compute.Capturer)
	if cfg.Eager || len(cfg.Steps) > 0 || t.d != nil {
		t.capturer = nil
	}
	t.hb, _ = be.(compute.HostBuffers)
	t.perStep = t.hb != nil && t.capturer == nil
	if cfg.NewCells > L {
		return fmt.Errorf("nn: %d new cells among %d training cells", cfg.NewCells, L)
	}
	t.weighted = cfg.weighted()
	if t.perStep {
		t.hostRows, t.hostVals = make([]int32, cfg.Batch*t.order), make([]float32, cfg.Batch)
		t.shufRows, t.shufVals = t.hb.WrapI32(t.hostRows), t.hb.WrapF32(t.hostVals)
		if t.weighted {
			t.hostW = make([]float32, cfg.Batch)
			t.shufW = t.hb.WrapF32(t.hostW)
		}
	} else {
		t.shufRows, t.shufVals = be.AllocI32(max(L, 1)*t.order), be.Alloc(max(L, 1))
		c := min(L, stageCells)
		t.hostRows, t.hostVals = make([]int32, c*t.order), make([]float32, c)
		if t.weighted {
			t.shufW, t.hostW = be.Alloc(max(L, 1)), make([]float32, c)
		}
	}
	if t.weighted {
		t.raw = be.Alloc(m.capacity)
	}
	t.adamM, t.adamV = be.Alloc(m.params.Len()), be.Alloc(m.params.Len())
	if t.d != nil && m.sh != nil {
		m.sh.training(be)
		t.shTraining = true
	}
	t.delta, t.sq = be.Alloc(m.capacity), be.Alloc(t.steps)
	t.sqHost = make([]float32, t.steps)
	t.setupOrder()
	t.adam = compute.AdamStep{LR: cfg.LR, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, L2: cfg.L2}
	if cfg.Adam != nil {
		*cfg.Adam = AdamState{M: t.adamM, V: t.adamV, Step: t.adam}
	}
	if len(cfg.Steps) > 0 && !t.perStep {
		t.cellsDev = be.AllocI32(len(t.ord))
	}
	if t.capturer != nil {
		t.graphs = map[int]compute.Graph{}
		t.stRows, t.stVals, t.stSq = be.AllocI32(cfg.Batch*t.order), be.Alloc(cfg.Batch), be.Alloc(1)
		t.stAdam, t.adamTable, t.hostAdam = be.Alloc(2), be.Alloc(2*t.steps), make([]float32, 2*t.steps)
		b := min(cfg.Batch, t.T)
		var w compute.F32
		if t.weighted {
			t.stW = be.Alloc(cfg.Batch)
			w = t.stW.Slice(0, b)
		}
		t.pass(t.stRows.Slice(0, b*t.order), t.stVals.Slice(0, b), w, t.stSq, b, b) // sizes the backend's scratch memory before any capture
	}
	if t.d != nil {
		t.ex = newExchange(t)
		t.ms = t.ex.meanSquare()
	} else {
		t.ms = t.train.MeanSquare()
	}
	t.res.BestValMSE = math.Inf(1)
	t.first = 1
	if r := cfg.Resume; r != nil {
		t.best = be.Alloc(m.params.Len())
		if sh := m.sh; sh != nil {
			sh.best = be.Alloc(sh.own.Len())
		}
		perm := t.savedPerm()
		if err := resume(m, r, len(perm), perm, t.adamM, t.adamV, t.best); err != nil {
			return err
		}
		t.adam.T, t.res, t.first = r.continued(cfg)
		if cfg.Adam != nil {
			cfg.Adam.Step = t.adam
		}
	}
	return nil
}

// setupOrder allocates the cell order: on one process perm, the identity
// to begin with, is the order and every step s takes positions
// [s·Batch, (s+1)·Batch); on a cluster ord holds the local cells and
// perm, only for the legacy shuffle, all T.
func (t *trainer) setupOrder() {
	t.stepLo = make([]int, t.steps+1)
	if t.d == nil || t.cfg.Order == nil {
		t.perm = bigmem.Make[int32](t.T)
		for i := range t.perm {
			t.perm[i] = int32(i)
		}
	}
	if t.d != nil {
		t.ord = make([]int32, t.train.Len())
		return
	}
	t.ord = t.perm
	for s := range t.stepLo {
		t.stepLo[s] = min(s*t.cfg.Batch, t.T)
	}
}

// savedPerm is the cell order a saved state holds: one process's perm;
// none on a cluster, whose order is keyed.
func (t *trainer) savedPerm() []int32 {
	if t.d != nil {
		return nil
	}
	return t.perm
}

// free releases what the run allocated.
func (t *trainer) free() {
	for _, g := range t.graphs {
		g.Free()
	}
	for _, b := range []compute.F32{t.shufVals, t.adamM, t.adamV, t.best, t.delta, t.sq, t.stVals, t.stSq, t.stAdam, t.adamTable, t.raw, t.stW} {
		if b != nil {
			b.Free()
		}
	}
	for _, b := range []compute.I32{t.shufRows, t.cellsDev, t.stRows} {
		if b != nil {
			b.Free()
		}
	}
	if t.ex != nil {
		t.ex.free()
	}
	if t.shTraining {
		t.m.sh.freeTraining()
	}
}

// run trains epochs first… until Epochs or Patience stops it.
func (t *trainer) run() (Result, error) {
	for k := t.first; k <= t.cfg.Epochs; k++ {
		start := time.Now()
		t.epochOrder(k)
		if t.bestIsCurrent {
			t.keepBest()
		}
		t.stage()
		for s := 0; s < t.steps; s++ {
			if err := t.ctx.Err(); err != nil {
				return t.res, err
			}
			if err := t.step(k, s); err != nil {
				return t.res, err
			}
		}
		if t.cfg.Adam != nil {
			t.cfg.Adam.Step = t.adam
		}
		stop, err := t.endEpoch(k, start)
		if err != nil {
			return t.res, err
		}
		if stop {
			break
		}
	}
	if !t.bestIsCurrent && t.best != nil {
		t.be.Copy(t.m.params, t.best)
		if sh := t.m.sh; sh != nil {
			t.be.Copy(sh.own, sh.best)
		}
	}
	return t.res, t.be.Sync()
}

// epochOrder sets epoch k's order of the local cells (ord) and each
// step's share of it (stepLo): on one process Order(k)'s cells, or
// Shuffle's shuffle of the previous epoch's order; on a cluster see
// distOrder.
func (t *trainer) epochOrder(k int) {
	if t.d != nil {
		t.distOrder(k)
		return
	}
	switch {
	case t.cfg.Order != nil:
		o := t.cfg.Order(k)
		for p := range t.perm {
			t.perm[p] = int32(o.Cell(p))
		}
	case t.cfg.Shuffle != nil:
		t.cfg.Shuffle.Shuffle(t.T, func(i, j int) { t.perm[i], t.perm[j] = t.perm[j], t.perm[i] })
	}
}

// gather copies the local cells cells into the host buffers from their
// start.
func (t *trainer) gather(cells []int32) {
	order := t.order
	for i, c := range cells {
		copy(t.hostRows[i*order:(i+1)*order], t.train.rows[int(c)*order:(int(c)+1)*order])
		t.hostVals[i] = t.train.vals[c]
	}
	if t.weighted {
		first, w := t.train.Len()-t.cfg.NewCells, float32(t.cfg.NewWeight)
		for i, c := range cells {
			t.hostW[i] = 1
			if int(c) >= first {
				t.hostW[i] = w
			}
		}
	}
}

// stage uploads the epoch's ordered cells (and for the step hooks their
// numbers) to the device, and for graph replay the epoch's Adam
// constants; nothing when each step gathers its own (perStep).
func (t *trainer) stage() {
	if t.perStep {
		return
	}
	be, order, n := t.be, t.order, len(t.ord)
	for lo := 0; lo < n; lo += len(t.hostVals) {
		hi := min(lo+len(t.hostVals), n)
		t.gather(t.ord[lo:hi])
		be.UploadI32(t.shufRows.Slice(lo*order, (hi-lo)*order), t.hostRows[:(hi-lo)*order])
		be.Upload(t.shufVals.Slice(lo, hi-lo), t.hostVals[:hi-lo])
		if t.weighted {
			be.Upload(t.shufW.Slice(lo, hi-lo), t.hostW[:hi-lo])
		}
	}
	if t.cellsDev != nil {
		be.UploadI32(t.cellsDev, t.ord)
	}
	if t.capturer != nil {
		for s := range t.steps {
			a := t.adam
			a.T += s + 1
			c := compute.AdamScalars(a)
			copy(t.hostAdam[2*s:], c[:])
		}
		be.Upload(t.adamTable, t.hostAdam)
	}
}

// pass queues the forward pass, the MSE gradient (its squared error into
// sqOut) and the backward pass of the b cells rows, y of a global batch
// of gb cells (the loss is the global batch's mean), each cell's gradient
// weighted by w when w is not nil (TrainConfig.NewWeight).
func (t *trainer) pass(rows compute.I32, y, w, sqOut compute.F32, b, gb int) {
	d := t.delta.Slice(0, b)
	if w != nil {
		r := t.raw.Slice(0, b)
		t.m.ForwardMSE(rows, y, r, sqOut, float32(2/float64(gb)))
		t.be.Mul(d, r, w)
	} else {
		t.m.ForwardMSE(rows, y, d, sqOut, float32(2/float64(gb)))
	}
	if t.sparse {
		t.m.BackwardSparse(rows, d)
	} else {
		t.m.Backward(rows, d, false)
	}
}

// step takes step s of epoch k: its hooks' Before, its pass, the
// exchange, the optimiser step and its hooks' After; or the replay of its
// graph.
func (t *trainer) step(k, s int) error {
	if t.capturer != nil {
		return t.replay(s)
	}
	cfg, order := t.cfg, t.order
	t.adam.T++
	hooked := hooksAt(cfg.Steps, t.adam.T)
	for _, h := range hooked {
		h.Before(t.adam.T)
	}
	lo, hi := t.stepLo[s], t.stepLo[s+1]
	at := lo // the step's first cell in the ordered buffers
	if t.perStep {
		t.gather(t.ord[lo:hi])
		at = 0
	}
	if hi > lo {
		gb := min((s+1)*cfg.Batch, t.T) - s*cfg.Batch
		var w compute.F32
		if t.weighted {
			w = t.shufW.Slice(at, hi-lo)
		}
		t.pass(t.shufRows.Slice(at*order, (hi-lo)*order), t.shufVals.Slice(at, hi-lo), w, t.sq.Slice(s, 1), hi-lo, gb)
	} else {
		t.ex.idle(s)
	}
	if t.ex != nil {
		if err := t.ex.step(hi > lo, t.ord[lo:hi]); err != nil {
			return fmt.Errorf("nn: epoch %d: %w", k, err)
		}
	} else {
		t.m.adamStep(t.sparse, t.adamM, t.adamV, t.adam)
	}
	if cfg.Adam != nil {
		cfg.Adam.Step = t.adam
	}
	if len(hooked) > 0 && hi > lo { // a process without cells in this step has none to observe
		gb := min((s+1)*cfg.Batch, t.T) - s*cfg.Batch // the global batch (hi − lo on one process)
		b := StepBatch{N: hi - lo, Delta: t.delta.Slice(0, hi-lo), Scale: float32(2 / float64(gb))}
		b.Rows = t.shufRows.Slice(at*order, b.N*order)
		if t.perStep {
			b.Cells = t.hb.WrapI32(t.ord[lo:hi])
		} else {
			b.Cells = t.cellsDev.Slice(lo, b.N)
		}
		for _, h := range hooked {
			h.After(t.adam.T, b)
		}
	}
	return nil
}

// replay takes step s by its graph, capturing the graph of its batch
// size first if there is none.
func (t *trainer) replay(s int) error {
	be, order := t.be, t.order
	t.adam.T++
	lo, hi := t.stepLo[s], t.stepLo[s+1]
	b := hi - lo
	be.CopyI32(t.stRows.Slice(0, b*order), t.shufRows.Slice(lo*order, b*order))
	be.Copy(t.stVals.Slice(0, b), t.shufVals.Slice(lo, b))
	if t.weighted {
		be.Copy(t.stW.Slice(0, b), t.shufW.Slice(lo, b))
	}
	be.Copy(t.stAdam, t.adamTable.Slice(2*s, 2))
	g := t.graphs[b]
	if g == nil {
		var err error
		if g, err = t.capturer.Capture(func() { t.captured(b) }); err != nil {
			return fmt.Errorf("nn: capture of a step of %d cells: %w", b, err)
		}
		t.graphs[b] = g
	}
	g.Launch()
	be.Copy(t.sq.Slice(s, 1), t.stSq)
	return nil
}

// captured is what a graph of a step of b cells holds.
func (t *trainer) captured(b int) {
	var w compute.F32
	if t.weighted {
		w = t.stW.Slice(0, b)
	}
	t.pass(t.stRows.Slice(0, b*t.order), t.stVals.Slice(0, b), w, t.stSq, b, b)
	a := t.adam
	a.T, a.Scalars = 1, t.stAdam
	t.m.adamStep(t.sparse, t.adamM, t.adamV, a)
}

// keepBest copies the parameters (a sharded table's rows too) to best,
// allocating it the first time.
func (t *trainer) keepBest() {
	if t.best == nil {
		t.best = t.be.Alloc(t.m.params.Len())
	}
	t.be.Copy(t.best, t.m.params)
	if sh := t.m.sh; sh != nil {
		if sh.best == nil {
			sh.best = t.be.Alloc(sh.own.Len())
		}
		t.be.Copy(sh.best, sh.own)
	}
	t.bestIsCurrent = false
}

// endEpoch ends epoch k, begun at start: its training and validation
// MSE, the divergence check, the best epoch, AfterEpoch and Save. It
// returns whether Patience stops the run.
func (t *trainer) endEpoch(k int, start time.Time) (bool, error) {
	m, cfg := t.m, t.cfg
	if err := t.be.Download(t.sqHost, t.sq); err != nil {
		return false, fmt.Errorf("nn: epoch %d: %w", k, err)
	}
	ep := Epoch{N: k}
	var err error
	if t.ex != nil {
		ep.TrainMSE, ep.ValMSE, err = t.ex.epochMSE(k)
	} else {
		ep.TrainMSE = meanStepMSE(t.sqHost, cfg.Batch, t.T)
		if ep.ValMSE, err = m.evaluate(t.val, cfg.ValGradSum); err != nil {
			err = fmt.Errorf("nn: epoch %d: %w", k, err)
		}
	}
	if err != nil {
		return false, err
	}
	first := ep
	if k > 1 {
		first = t.res.Epochs[0]
	}
	if err := divergence(ep, first, t.ms); err != nil {
		return false, err
	}
	if ep.ValMSE < t.res.BestValMSE {
		ep.Best = true
		t.res.BestEpoch, t.res.BestValMSE = k, ep.ValMSE
		t.bestIsCurrent = true
	}
	ep.Seconds = time.Since(start).Seconds()
	t.res.Epochs = append(t.res.Epochs, ep)
	if cfg.AfterEpoch != nil {
		if err := cfg.AfterEpoch(ep); err != nil {
			return false, err
		}
	}
	if cfg.Save != nil {
		bestNow, shardBest := t.best, compute.F32(nil)
		if sh := m.sh; sh != nil {
			shardBest = sh.best
		}
		if t.bestIsCurrent || t.best == nil {
			bestNow = m.params
			if sh := m.sh; sh != nil {
				shardBest = sh.own
			}
		}
		st, err := state(m, k, t.adam.T, t.savedPerm(), t.adamM, t.adamV, bestNow, shardBest, t.res)
		if err != nil {
			return false, err
		}
		if err := cfg.Save(st); err != nil {
			return false, err
		}
	}
	return k-t.res.BestEpoch >= cfg.Patience, nil
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

// state copies the run after epoch k to the host: best is the best
// epoch's parameters, shardBest its rows of a sharded table (nil when the
// table is whole).
func state(m *Net, k, step int, perm []int32, adamM, adamV, best, shardBest compute.F32, res Result) (*TrainState, error) {
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
		}{{&st.Shard, sh.own}, {&st.ShardM, sh.adamM}, {&st.ShardV, sh.adamV}, {&st.ShardBest, shardBest}} {
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
// data-parallel run's keyed order saves none (T = 0, perm nil).
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
