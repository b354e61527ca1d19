// Package dain runs DAIN end to end (Oh, Kim, Rossi, Kumar, CIKM 2021,
// Algorithm 1, with the details of SPEC.md):
//
//  0. split the observed cells into train, validation and test;
//  1. train the MLP Θ on train with early stopping on validation;
//  2. score every training cell by TracIn-CP against the validation loss
//     (online, at every epoch checkpoint up to the best);
//  3. aggregate cell importance into per-mode entity importance;
//  4. draw N_aug = ratio·|train| new cells from per-mode alias tables,
//     rejecting observed and repeated cells, and predict their values;
//  5. retrain a fresh model on train ∪ augmentation and report the test
//     RMSE before and after.
//
// Run takes the backend as an argument; nothing here is global.
package dain

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tracin"
)

// Config holds every setting of a run. DefaultConfig gives the paper's.
type Config struct {
	Ratio     float64 // N_aug = ⌊Ratio·|train|⌋
	Seed      uint64  // seeds the split, initialisation, shuffling and sampling
	Layers    []int   // N·E then hidden widths; nil means nn.DefaultLayers(N)
	Epochs    int     // at most this many epochs per training
	Batch     int     // cells per training step
	Patience  int     // early-stopping patience in epochs
	LR        float64 // Adam learning rate, also TracIn's step size η
	TestFrac  float64 // share of all cells held out for test
	ValFrac   float64 // share of the remaining cells used for validation
	EvalBatch int     // cells per forward pass outside training
	Predictor string  // value predictor Θ_p: "mlp" (reuse Θ)
	// Progress receives one line per epoch and per step; nil is silent.
	Progress io.Writer
}

// DefaultConfig returns the paper's settings (SPEC step 1): ratio 0.5, seed
// 1, default layers, 50 epochs, batch 1024, patience 10, lr 1e-3, a
// 72/18/10 split, predictor "mlp".
func DefaultConfig() Config {
	return Config{
		Ratio: 0.5, Seed: 1, Epochs: 50, Batch: 1024, Patience: 10, LR: 1e-3,
		TestFrac: 0.1, ValFrac: 0.2, EvalBatch: 4096, Predictor: "mlp",
	}
}

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	switch {
	case !(c.Ratio >= 0) || math.IsInf(c.Ratio, 0):
		return fmt.Errorf("ratio %v: want a finite number ≥ 0", c.Ratio)
	case c.Epochs <= 0:
		return fmt.Errorf("epochs %d: want ≥ 1", c.Epochs)
	case c.Batch <= 0:
		return fmt.Errorf("batch %d: want ≥ 1", c.Batch)
	case c.Patience <= 0:
		return fmt.Errorf("patience %d: want ≥ 1", c.Patience)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("lr %v: want a finite number > 0", c.LR)
	case !(c.TestFrac > 0 && c.TestFrac < 1):
		return fmt.Errorf("test fraction %v: want 0 < f < 1", c.TestFrac)
	case !(c.ValFrac > 0 && c.ValFrac < 1):
		return fmt.Errorf("validation fraction %v: want 0 < f < 1", c.ValFrac)
	case c.EvalBatch <= 0:
		return fmt.Errorf("eval batch %d: want ≥ 1", c.EvalBatch)
	case c.Predictor != "mlp":
		return fmt.Errorf("predictor %q: only \"mlp\" (reuse the trained Θ) is available", c.Predictor)
	}
	return nil
}

// Seconds holds the wall time of each step.
type Seconds struct {
	Train     float64 `json:"train"`     // step 1, training Θ (without the TracIn passes)
	Influence float64 `json:"influence"` // step 2, TracIn passes at every checkpoint
	Entity    float64 `json:"entity"`    // step 3, aggregation and alias tables
	Sample    float64 `json:"sample"`    // step 4, drawing new cells
	Predict   float64 `json:"predict"`   // step 4, predicting their values
	Retrain   float64 `json:"retrain"`   // step 5, training on train ∪ augmentation
	Total     float64 `json:"total"`     // the whole run, split included
}

// EpochLog is one epoch of a training run in the report.
type EpochLog struct {
	Epoch    int     `json:"epoch"`
	TrainMSE float64 `json:"train_mse"`
	ValMSE   float64 `json:"val_mse"`
	Seconds  float64 `json:"seconds"`
}

// Report is the JSON summary of a run.
type Report struct {
	Input          string     `json:"input,omitempty"`
	Dims           []int      `json:"dims"`
	NNZ            int        `json:"nnz"`
	NTrain         int        `json:"n_train"`
	NVal           int        `json:"n_val"`
	NTest          int        `json:"n_test"`
	NAug           int        `json:"n_aug"`
	RMSEBefore     float64    `json:"rmse_before"` // test RMSE of Θ, √mean(e²)
	RMSEAfter      float64    `json:"rmse_after"`  // test RMSE after retraining on train ∪ aug
	BestEpoch      int        `json:"best_epoch"`  // K, Θ's best checkpoint
	BestEpochAfter int        `json:"best_epoch_after"`
	Backend        string     `json:"backend"`
	Device         string     `json:"device"`
	Seed           uint64     `json:"seed"`
	Ratio          float64    `json:"ratio"`
	Layers         []int      `json:"layers"`
	Epochs         int        `json:"epochs"`
	Batch          int        `json:"batch"`
	Patience       int        `json:"patience"`
	LR             float64    `json:"lr"`
	TestFrac       float64    `json:"test_frac"`
	ValFrac        float64    `json:"val_frac"`
	Predictor      string     `json:"predictor"`
	Draws          int        `json:"sample_draws"`
	RejectObserved int        `json:"sample_rejected_observed"`
	RejectRepeat   int        `json:"sample_rejected_repeated"`
	Seconds        Seconds    `json:"seconds"`
	HistoryBefore  []EpochLog `json:"history_before"`
	HistoryAfter   []EpochLog `json:"history_after"`
}

// Result is what Run returns: the report and the augmented cells.
type Result struct {
	Report Report
	// Aug holds the N_aug new cells and their predicted values, with the
	// input's Dims.
	Aug *tensor.COO
}

// Random streams derived from the seed, one per consumer, so that changing
// one step never shifts another's numbers.
const (
	streamInit = iota + 1
	streamShuffle
	streamInitAfter
	streamShuffleAfter
	streamSample
)

func rng(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x5eed0000+stream))
}

// Run executes DAIN on the observed cells of t with backend be. It returns
// ctx's error when cancelled, an error for a configuration that cannot work
// with t, and the backend's error if the device failed.
func Run(ctx context.Context, t *tensor.COO, cfg Config, be compute.Backend) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	order := t.Order()
	layers := cfg.Layers
	if layers == nil {
		layers = nn.DefaultLayers(order)
	}
	rep := Report{
		Dims: append([]int(nil), t.Dims...), NNZ: t.NNZ(), Backend: be.Name(), Device: be.Device(),
		Seed: cfg.Seed, Ratio: cfg.Ratio, Layers: layers, Epochs: cfg.Epochs, Batch: cfg.Batch,
		Patience: cfg.Patience, LR: cfg.LR, TestFrac: cfg.TestFrac, ValFrac: cfg.ValFrac,
		Predictor: cfg.Predictor,
	}
	logf := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", args...)
		}
	}

	// Step 0: split.
	trainIdx, valIdx, testIdx := tensor.Split(t.NNZ(), cfg.TestFrac, cfg.ValFrac, cfg.Seed)
	train, val, test := t.Subset(trainIdx), t.Subset(valIdx), t.Subset(testIdx)
	rep.NTrain, rep.NVal, rep.NTest = train.NNZ(), val.NNZ(), test.NNZ()
	if rep.NTrain == 0 || rep.NVal == 0 || rep.NTest == 0 {
		return nil, fmt.Errorf("dain: %d cells split into %d train, %d validation, %d test; every part must be non-empty", t.NNZ(), rep.NTrain, rep.NVal, rep.NTest)
	}
	logf("dainx: %d cells, dims %v: %d train, %d validation, %d test; backend %s (%s)", t.NNZ(), t.Dims, rep.NTrain, rep.NVal, rep.NTest, be.Name(), be.Device())

	mcfg := nn.Config{Dims: t.Dims, Layers: layers, Capacity: max(cfg.Batch, cfg.EvalBatch)}
	tcfg := nn.TrainConfig{Epochs: cfg.Epochs, Batch: cfg.Batch, Patience: cfg.Patience, LR: cfg.LR}

	// Steps 1 and 2: train Θ, scoring cells at every checkpoint.
	theta, err := nn.NewMLP(be, mcfg, rng(cfg.Seed, streamInit))
	if err != nil {
		return nil, fmt.Errorf("dain: %w", err)
	}
	defer theta.Free()
	trainSet, valSet, testSet := theta.NewSet(train.Idx, train.Val), theta.NewSet(val.Idx, val.Val), theta.NewSet(test.Idx, test.Val)
	defer trainSet.Free()
	defer valSet.Free()
	defer testSet.Free()
	acc := tracin.NewLastLayer(theta, trainSet, cfg.LR)
	defer acc.Free()
	var influence time.Duration
	tcfg.Shuffle = rng(cfg.Seed, streamShuffle)
	tcfg.ValGradSum = acc.ValGradSum()
	tcfg.AfterEpoch = func(e nn.Epoch) error {
		t0 := time.Now()
		err := acc.Checkpoint(e.Best)
		influence += time.Since(t0)
		logEpoch(cfg.Progress, "Θ", e, cfg.Epochs, time.Since(start))
		return err
	}
	logf("step 1-2: training Θ (layers %v, %d parameters) with TracIn at every checkpoint", layers, theta.NumParams())
	t0 := time.Now()
	res, err := nn.Train(ctx, theta, trainSet, valSet, tcfg)
	if err != nil {
		return nil, fmt.Errorf("dain: training Θ: %w", err)
	}
	rep.Seconds.Influence = influence.Seconds()
	rep.Seconds.Train = time.Since(t0).Seconds() - rep.Seconds.Influence
	rep.BestEpoch = res.BestEpoch
	rep.HistoryBefore = history(res)
	mse, err := theta.Evaluate(testSet)
	if err != nil {
		return nil, fmt.Errorf("dain: testing Θ: %w", err)
	}
	rep.RMSEBefore = math.Sqrt(mse)
	logf("Θ: best epoch %d, validation MSE %.6f, test RMSE %.6f", res.BestEpoch, res.BestValMSE, rep.RMSEBefore)

	// Step 3: entity importance and alias tables.
	t0 = time.Now()
	weights, err := tracin.EntityImportance(be, acc.Scores(), trainSet.Rows, t.Dims)
	if err != nil {
		return nil, fmt.Errorf("dain: %w", err)
	}
	tables := make([]*sampling.Alias, order)
	for n, w := range weights {
		if tables[n], err = sampling.NewAlias(w); err != nil {
			return nil, fmt.Errorf("dain: mode %d: %w", n+1, err)
		}
	}
	rep.Seconds.Entity = time.Since(t0).Seconds()

	// Step 4: draw new cells and predict their values.
	nAug := int(cfg.Ratio * float64(rep.NTrain))
	aug := &tensor.COO{Dims: append([]int(nil), t.Dims...)}
	if nAug > 0 {
		logf("step 4: drawing %d new cells", nAug)
		t0 = time.Now()
		dev := sampling.Upload(be, tables)
		observed := append(append([]int32(nil), train.Idx...), val.Idx...)
		cells, st, err := dev.Cells(observed, nAug, sampling.Options{Key: rng(cfg.Seed, streamSample).Uint64()})
		dev.Free()
		if err != nil {
			return nil, fmt.Errorf("dain: %w", err)
		}
		rep.Draws, rep.RejectObserved, rep.RejectRepeat = st.Draws, st.Observed, st.Duplicate
		rep.Seconds.Sample = time.Since(t0).Seconds()

		t0 = time.Now()
		augSet := theta.NewSet(cells, make([]float64, nAug))
		pred, err := theta.Predict(augSet)
		augSet.Free()
		if err != nil {
			return nil, fmt.Errorf("dain: predicting values: %w", err)
		}
		aug.Idx = cells
		aug.Val = make([]float64, nAug)
		for i, p := range pred {
			aug.Val[i] = shortest(p)
		}
		rep.Seconds.Predict = time.Since(t0).Seconds()
	}
	rep.NAug = aug.NNZ()

	// Step 5: retrain on train ∪ augmentation.
	logf("step 5: retraining on %d + %d cells", rep.NTrain, rep.NAug)
	t0 = time.Now()
	after, err := nn.NewMLP(be, mcfg, rng(cfg.Seed, streamInitAfter))
	if err != nil {
		return nil, fmt.Errorf("dain: %w", err)
	}
	defer after.Free()
	both := after.NewSet(append(append([]int32(nil), train.Idx...), aug.Idx...), append(append([]float64(nil), train.Val...), aug.Val...))
	defer both.Free()
	tcfg = nn.TrainConfig{Epochs: cfg.Epochs, Batch: cfg.Batch, Patience: cfg.Patience, LR: cfg.LR,
		Shuffle: rng(cfg.Seed, streamShuffleAfter),
		AfterEpoch: func(e nn.Epoch) error {
			logEpoch(cfg.Progress, "Θ'", e, cfg.Epochs, time.Since(start))
			return nil
		}}
	res, err = nn.Train(ctx, after, both, valSet, tcfg)
	if err != nil {
		return nil, fmt.Errorf("dain: retraining: %w", err)
	}
	rep.BestEpochAfter = res.BestEpoch
	rep.HistoryAfter = history(res)
	if mse, err = after.Evaluate(testSet); err != nil {
		return nil, fmt.Errorf("dain: testing the retrained model: %w", err)
	}
	rep.RMSEAfter = math.Sqrt(mse)
	rep.Seconds.Retrain = time.Since(t0).Seconds()
	rep.Seconds.Total = time.Since(start).Seconds()
	logf("test RMSE %.6f → %.6f after %d augmented cells (%.1fs)", rep.RMSEBefore, rep.RMSEAfter, rep.NAug, rep.Seconds.Total)
	return &Result{Report: rep, Aug: aug}, nil
}

// shortest returns the float64 nearest to the shortest decimal that reads
// back as p, so a float32 prediction prints as "2.2926" rather than
// "2.2925999164581299".
func shortest(p float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(p), 'g', -1, 32), 64)
	return v
}

func history(r nn.Result) []EpochLog {
	out := make([]EpochLog, len(r.Epochs))
	for i, e := range r.Epochs {
		out[i] = EpochLog{Epoch: e.N, TrainMSE: e.TrainMSE, ValMSE: e.ValMSE, Seconds: e.Seconds}
	}
	return out
}

func logEpoch(w io.Writer, model string, e nn.Epoch, epochs int, elapsed time.Duration) {
	if w == nil {
		return
	}
	mark := ""
	if e.Best {
		mark = " *"
	}
	fmt.Fprintf(w, "%-3s epoch %3d/%d  train MSE %.6f  val MSE %.6f%s  (%.1fs, elapsed %s)\n",
		model, e.N, epochs, e.TrainMSE, e.ValMSE, mark, e.Seconds, elapsed.Round(time.Second))
}
