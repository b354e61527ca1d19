// Package foldin adds new entities to a trained completion model (issue
// 34): `dainx fold-in`, the C API's dainx_fold_in and the Python
// estimator's partial_fit.
//
// The cells to fold in are indexed as the model's: an index at or above
// a mode's size is a new entity, and the mode grows to hold the largest
// (nn.Net.Grow: the known rows and every layer copied bit for bit, the
// new rows drawn as the model's kind draws its table). The new rows are
// then fitted to the cells with everything else frozen (nn.TrainRows:
// sparse Adam over the trainable rows a batch touches, early stopping on
// a validation share of the cells); with Tune "all" the known rows the
// cells touch train too. The layers never change.
package foldin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// The settings of Config.Tune.
const (
	// TuneNew trains the new entities' rows only.
	TuneNew = "new"
	// TuneAll also trains the rows of the known entities the cells touch.
	TuneAll = "all"
)

// Config holds a fold-in's settings.
type Config struct {
	Tune     string  // TuneNew or TuneAll
	Epochs   int     // at most this many epochs
	Batch    int     // cells per step
	Patience int     // stop after this many epochs without a better validation MSE
	LR       float64 // Adam's learning rate
	L2       float64 // L2 penalty of the trained rows (nn.TrainConfig.L2)
	ValFrac  float64 // share of the cells held out for validation, 0 ≤ ValFrac < 1
	Seed     uint64  // seeds the new rows, the split and the order of the cells
	// Capacity is the grown net's batch capacity; 0 means the larger of
	// the model's and the batch (Batch, or the training cells when fewer).
	Capacity int
	// Progress, if not nil, gets one line per epoch (unless OnEpoch is
	// set) and a line saying what is folded in.
	Progress io.Writer
	// OnEpoch, if not nil, gets every finished epoch and its progress
	// line instead of Progress.
	OnEpoch func(e nn.Epoch, line string)
}

// DefaultConfig returns the defaults of `dainx fold-in`: the training
// settings of `dainx augment` (50 epochs, patience 10, no L2) except the
// batch and the learning rate, which suit a few thousand cells and rows
// that start at random (see docs/usage.md, "Folding in new entities"),
// and a validation share of 0.1.
func DefaultConfig() Config {
	return Config{Tune: TuneNew, Epochs: 50, Batch: 256, Patience: 10, LR: 0.01, ValFrac: 0.1, Seed: 1}
}

// Check reports a setting outside its range, naming the flag.
func (c *Config) Check() error {
	switch {
	case c.Tune != TuneNew && c.Tune != TuneAll:
		return fmt.Errorf("-tune %q: want new or all", c.Tune)
	case c.Epochs < 1 || c.Epochs > MaxEpochs:
		return fmt.Errorf("-epochs %d: want 1…%d", c.Epochs, MaxEpochs)
	case c.Patience < 1 || c.Patience > MaxEpochs:
		return fmt.Errorf("-patience %d: want 1…%d", c.Patience, MaxEpochs)
	case c.Batch < 1 || c.Batch > MaxBatch:
		return fmt.Errorf("-batch %d: want 1…%d cells", c.Batch, MaxBatch)
	case !(c.LR > 0) || math.IsInf(c.LR, 1):
		return fmt.Errorf("-lr %g: want a finite value > 0", c.LR)
	case !(c.ValFrac >= 0 && c.ValFrac < 1):
		return fmt.Errorf("-val-frac %g: want 0 ≤ share < 1", c.ValFrac)
	case c.Capacity < 0 || c.Capacity > MaxBatch:
		return fmt.Errorf("capacity %d: want 0…%d", c.Capacity, MaxBatch)
	}
	if err := nn.CheckL2(c.L2); err != nil {
		return fmt.Errorf("-%v", err)
	}
	return nil
}

// Limits of the settings: those of `dainx augment`'s -epochs and -batch.
const (
	MaxEpochs = 1 << 20
	MaxBatch  = 1 << 24
)

// ErrNoNewEntity is Run's error (wrapped) when Tune is "new" and no cell
// names a new entity.
var ErrNoNewEntity = errors.New("no new entity")

// LimitError is a cell whose index would grow its mode by more new
// entities than the cells to fold in number: the new entities of a mode
// are at most one per cell (an index far above the mode is most likely a
// mistake, and would make the table as large as the index says).
type LimitError struct {
	Cell  int   // 0-based number of the cell in the input
	Mode  int   // 1-based
	Index int64 // the index, 0-based
	Size  int   // the model's mode size
	NNZ   int   // the cells to fold in
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("index %d of mode %d would add %d new entities to the model's %d, more than the %d cells folded in (at most one new entity per cell: indices of new entities follow the model's last, %d)",
		e.Index, e.Mode, e.Index+1-int64(e.Size), e.Size, e.NNZ, e.Size-1)
}

// GrownDims returns the mode sizes of the model of mode sizes dims once
// cells are folded in: each mode's largest index + 1, or its size if
// larger. It returns a *LimitError (naming the first cell holding the
// largest index) if a mode would grow by more entities than cells has
// cells, and an error for cells of another order or a negative index.
func GrownDims(dims []int, cells *tensor.COO) ([]int, error) {
	order := len(dims)
	if cells.Order() != order {
		return nil, fmt.Errorf("cells of order %d, the model's order is %d", cells.Order(), order)
	}
	nnz := cells.NNZ()
	grown := append([]int(nil), dims...)
	at := make([]int, order)
	for k := 0; k < nnz; k++ {
		for n, i := range cells.Idx[k*order : (k+1)*order] {
			if i < 0 {
				return nil, fmt.Errorf("cell %d: index %d of mode %d is negative", k, i, n+1)
			}
			if int(i) >= grown[n] {
				grown[n], at[n] = int(i)+1, k
			}
		}
	}
	for n, d := range grown {
		if d-dims[n] > nnz {
			return nil, &LimitError{Cell: at[n], Mode: n + 1, Index: int64(d - 1), Size: dims[n], NNZ: nnz}
		}
	}
	return grown, nil
}

// EpochLog is one epoch of the report's history.
type EpochLog struct {
	Epoch    int      `json:"epoch"`
	TrainMSE float64  `json:"train_mse"`
	ValMSE   *float64 `json:"val_mse"` // null without validation cells
	Seconds  float64  `json:"seconds"`
}

// Report is the JSON summary of a fold-in. The command adds what it knows
// (files, versions, backend) in its own report around it.
type Report struct {
	Kind string `json:"kind"`
	Tune string `json:"tune"`
	// DimsBefore and Dims are the mode sizes of the model read and of the
	// model written; NewEntities their differences, the new entities per
	// mode (indices DimsBefore[n]…Dims[n]−1).
	DimsBefore  []int `json:"dims_before"`
	Dims        []int `json:"dims"`
	NewEntities []int `json:"new_entities"`
	// NewWithoutCells counts, per mode, the new entities no cell names
	// (indices skipped): their rows keep their initial values.
	NewWithoutCells []int `json:"new_without_cells"`
	// NCells cells were given; NSkipped of them touch no trainable row
	// (with Tune "new": only known entities) and were left out; the others
	// are NTrain training and NVal validation cells.
	NCells   int `json:"n_cells"`
	NSkipped int `json:"n_skipped"`
	NTrain   int `json:"n_train"`
	NVal     int `json:"n_val"`
	// TrainedRows is the number of embedding rows trained: the new
	// entities with cells, and with Tune "all" the known ones the cells
	// touch.
	TrainedRows int `json:"trained_rows"`
	// Epochs ran; BestEpoch's rows were kept.
	Epochs    int `json:"epochs"`
	BestEpoch int `json:"best_epoch"`
	// ValRMSE is the validation RMSE at the best epoch (null without
	// validation cells), TrainRMSE the kept model's RMSE on the training
	// cells.
	ValRMSE   *float64   `json:"val_rmse"`
	TrainRMSE float64    `json:"train_rmse"`
	History   []EpochLog `json:"history"`
	// Sweeps is a bayes-fm model's Gibbs sweeps per posterior sample (0:
	// bayes.DefaultFoldInSweeps; absent for a net).
	Sweeps int `json:"sweeps,omitempty"`
	// The settings.
	EpochsMax int     `json:"epochs_max"`
	Batch     int     `json:"batch"`
	LR        float64 `json:"lr"`
	Patience  int     `json:"patience"`
	L2        float64 `json:"l2"`
	ValFrac   float64 `json:"val_frac"`
	Seed      uint64  `json:"seed"`
	Seconds   float64 `json:"seconds"`
}

// Streams of the seed: the new rows, the split and the cells' order.
const (
	streamInit  = 0x666f_6c64_696e_6974 // "foldinit"
	streamSplit = 0x666f_6c64_7370_6c74
	streamOrder = 0x666f_6c64_6f72_6472
)

// Run folds cells (indexed as net's modes; Validate'd by the caller: no
// duplicates) into net and returns the grown net, on net's backend, and
// the report. net is not changed. Errors: a bad configuration, cells of
// another order, a *LimitError, no cell that touches a new entity (Tune
// "new"), a diverged training (nn.DivergenceError), ctx's error, the
// backend's.
func Run(ctx context.Context, net *nn.Net, cells *tensor.COO, cfg Config) (*nn.Net, *Report, error) {
	t0 := time.Now()
	if err := cfg.Check(); err != nil {
		return nil, nil, err
	}
	if cells.NNZ() == 0 {
		return nil, nil, fmt.Errorf("no cells to fold in")
	}
	dims0 := net.Dims()
	dims, err := GrownDims(dims0, cells)
	if err != nil {
		return nil, nil, err
	}
	order := len(dims)
	rep := &Report{Kind: net.Kind(), Tune: cfg.Tune, DimsBefore: append([]int(nil), dims0...), Dims: dims,
		NCells: cells.NNZ(), EpochsMax: cfg.Epochs, Batch: cfg.Batch, LR: cfg.LR, Patience: cfg.Patience,
		L2: cfg.L2, ValFrac: cfg.ValFrac, Seed: cfg.Seed}
	// The new entities that have cells.
	named := make([]map[int32]bool, order)
	for n := range named {
		named[n] = map[int32]bool{}
	}
	isNew := func(n int, i int32) bool { return int(i) >= dims0[n] }
	var use []int // the cells that touch a trainable row
	for k := 0; k < cells.NNZ(); k++ {
		cell := cells.Idx[k*order : (k+1)*order]
		hasNew := false
		for n, i := range cell {
			if isNew(n, i) {
				named[n][i] = true
				hasNew = true
			}
		}
		if hasNew || cfg.Tune == TuneAll {
			use = append(use, k)
		}
	}
	for n := range dims {
		rep.NewEntities = append(rep.NewEntities, dims[n]-dims0[n])
		rep.NewWithoutCells = append(rep.NewWithoutCells, dims[n]-dims0[n]-len(named[n]))
	}
	rep.NSkipped = cells.NNZ() - len(use)
	if len(use) == 0 {
		return nil, nil, fmt.Errorf("%w: none of the %d cells names one (an index at or above its mode's size %v), so -tune new has nothing to train; -tune all fine-tunes the known entities' rows", ErrNoNewEntity, cells.NNZ(), dims0)
	}
	train, val := split(cells, use, dims0, cfg)
	rep.NTrain, rep.NVal = len(train), len(val)

	batch := min(cfg.Batch, len(train)) // a larger batch is the whole set
	capacity := cfg.Capacity
	if capacity == 0 {
		capacity = max(net.Capacity(), batch)
	}
	if capacity < batch {
		return nil, nil, fmt.Errorf("capacity %d below the batch %d", capacity, batch)
	}
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "dainx: fold-in: %s model %v → %v (new entities per mode %v); %d cells: %d train, %d validation, %d skipped (no new entity); tune %s\n",
			net.Kind(), dims0, dims, rep.NewEntities, cells.NNZ(), len(train), len(val), rep.NSkipped, cfg.Tune)
		for n, w := range rep.NewWithoutCells {
			if w > 0 {
				fmt.Fprintf(cfg.Progress, "dainx: fold-in: %d new entities of mode %d have no cell (indices skipped); their rows keep their initial values\n", w, n+1)
			}
		}
	}
	g, err := net.Grow(dims, capacity, rand.New(rand.NewPCG(cfg.Seed, streamInit)))
	if err != nil {
		return nil, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			g.Free()
		}
	}()
	trainSet := g.NewSet(subset(cells, train))
	defer trainSet.Free()
	var valSet *nn.Set
	if len(val) > 0 {
		valSet = g.NewSet(subset(cells, val))
		defer valSet.Free()
	}
	offsets := g.Offsets()
	trainable := func(row int32) bool {
		if cfg.Tune == TuneAll {
			return true
		}
		n := modeOf(offsets, row)
		return int(row-offsets[n]) >= dims0[n]
	}
	start := time.Now()
	tc := nn.TrainConfig{Epochs: cfg.Epochs, Batch: batch, Patience: cfg.Patience, LR: cfg.LR, L2: cfg.L2,
		Shuffle: rand.New(rand.NewPCG(cfg.Seed, streamOrder)),
		AfterEpoch: func(e nn.Epoch) error {
			logEpoch(cfg, e, time.Since(start))
			return nil
		}}
	res, err := nn.TrainRows(ctx, g, trainSet, valSet, trainable, tc)
	if err != nil {
		return nil, nil, err
	}
	rep.Epochs, rep.BestEpoch = len(res.Epochs), res.BestEpoch
	if valSet != nil {
		r := math.Sqrt(res.BestValMSE)
		rep.ValRMSE = &r
	}
	for _, e := range res.Epochs {
		l := EpochLog{Epoch: e.N, TrainMSE: e.TrainMSE, Seconds: e.Seconds}
		if !math.IsNaN(e.ValMSE) {
			v := e.ValMSE
			l.ValMSE = &v
		}
		rep.History = append(rep.History, l)
	}
	mse, err := g.Evaluate(trainSet)
	if err != nil {
		return nil, nil, err
	}
	rep.TrainRMSE = math.Sqrt(mse)
	rep.TrainedRows = countTrained(cells, train, trainable, offsets)
	rep.Seconds = time.Since(t0).Seconds()
	ok = true
	return g, rep, nil
}

// countTrained counts the distinct trainable rows of the training cells.
func countTrained(cells *tensor.COO, train []int, trainable func(int32) bool, offsets []int32) int {
	order := len(offsets)
	seen := map[int32]bool{}
	for _, k := range train {
		for n, i := range cells.Idx[k*order : (k+1)*order] {
			r := offsets[n] + i
			if !seen[r] && trainable(r) {
				seen[r] = true
			}
		}
	}
	return len(seen)
}

// modeOf returns the mode whose rows hold the global row r.
func modeOf(offsets []int32, r int32) int {
	n := len(offsets) - 1
	for n > 0 && offsets[n] > r {
		n--
	}
	return n
}

// split divides the cells use into training and validation cells: a
// seeded random ⌊ValFrac·|use|⌋ for validation, except that a validation
// cell whose new entity would have no training cell is trained on instead
// (a row no step reaches would stay at its random start). Both lists are
// in increasing cell order.
func split(cells *tensor.COO, use []int, dims0 []int, cfg Config) (train, val []int) {
	order := len(dims0)
	nv := int(cfg.ValFrac * float64(len(use)))
	isVal := make([]bool, len(use))
	if nv > 0 {
		rng := rand.New(rand.NewPCG(cfg.Seed, streamSplit))
		for _, j := range rng.Perm(len(use))[:nv] {
			isVal[j] = true
		}
	}
	type ent struct {
		n int
		i int32
	}
	trained := map[ent]int{}
	for j, k := range use {
		if isVal[j] {
			continue
		}
		for n, i := range cells.Idx[k*order : (k+1)*order] {
			if int(i) >= dims0[n] {
				trained[ent{n, i}]++
			}
		}
	}
	for j, k := range use {
		if !isVal[j] {
			continue
		}
		for n, i := range cells.Idx[k*order : (k+1)*order] {
			if int(i) >= dims0[n] && trained[ent{n, i}] == 0 {
				isVal[j] = false
				break
			}
		}
		if !isVal[j] {
			for n, i := range cells.Idx[k*order : (k+1)*order] {
				if int(i) >= dims0[n] {
					trained[ent{n, i}]++
				}
			}
		}
	}
	for j, k := range use {
		if isVal[j] {
			val = append(val, k)
		} else {
			train = append(train, k)
		}
	}
	return train, val
}

// subset returns the indices and values of the cells ks.
func subset(cells *tensor.COO, ks []int) ([]int32, []float64) {
	order := cells.Order()
	idx := make([]int32, 0, len(ks)*order)
	val := make([]float64, 0, len(ks))
	for _, k := range ks {
		idx = append(idx, cells.Idx[k*order:(k+1)*order]...)
		val = append(val, cells.Val[k])
	}
	return idx, val
}

// logEpoch writes an epoch's progress line (as dain's, model "Θ+").
func logEpoch(cfg Config, e nn.Epoch, elapsed time.Duration) {
	if cfg.Progress == nil && cfg.OnEpoch == nil {
		return
	}
	mark := ""
	if e.Best {
		mark = " *"
	}
	val := "val MSE -"
	if !math.IsNaN(e.ValMSE) {
		val = fmt.Sprintf("val MSE %.6f", e.ValMSE)
	}
	line := fmt.Sprintf("fold-in epoch %3d/%d  train MSE %.6f  %s%s  (%.1fs, elapsed %s)",
		e.N, cfg.Epochs, e.TrainMSE, val, mark, e.Seconds, elapsed.Round(time.Second))
	if cfg.OnEpoch != nil {
		cfg.OnEpoch(e, line)
		return
	}
	fmt.Fprintln(cfg.Progress, line)
}
