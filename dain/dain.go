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
	"runtime"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
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
	// EmbeddingOptimizer updates the embedding tables of every model:
	// nn.Adam (dense, the paper's), nn.SparseAdam (the rows a step
	// touched) or nn.Auto (chosen per model by
	// nn.ChooseEmbeddingOptimizer; "" means Auto).
	EmbeddingOptimizer string
	// ShardTables says whether a run spread over processes (RunOn)
	// shards a model's embedding table by row over them (each row on one
	// process, nn.Sharding): "on", "off", or "auto" ("" too): on when the
	// run has more than one process and the table holds at least
	// ShardTablesAbove bytes. A sharded table trains with sparse-adam
	// (auto's choice then; an explicit adam is an error with "on").
	// One-process runs ignore it.
	ShardTables TableSharding
	// Split chooses how cells are split and ordered: SplitKeyed (the
	// default since 0.7: tensor.KeyedSplit and nn.KeyedOrder, every cell's
	// part and its place in each epoch's order computed, not stored, so a
	// run spread over processes needs no array of every cell, and gives
	// the same split and orders for any number of processes) or
	// SplitLegacy (a permutation of all cells drawn by tensor.Split, and
	// each model's cell order shuffled anew every epoch, as dainx did up
	// to 0.6: it reproduces results of those versions). "" means
	// SplitKeyed. The two give different random splits for one seed.
	Split SplitKind
	// Graphs says whether training replays each step as a graph on a
	// backend that records them (CUDA: nn.TrainConfig.Eager is its
	// opposite): GraphsOn ("" too, the default) or GraphsOff. The results
	// are the same bit for bit; only the time differs.
	Graphs Graphs
	// Exchange says how a run spread over processes (RunOn) sums the
	// embedding gradients of a table it does not shard: ExchangeAuto (""
	// too: by the table's size against the rows a step touches),
	// ExchangeDense or ExchangeSparse. One-process runs ignore it.
	Exchange Exchange

	// The variant of each step, by name; stages.go lists the names.
	Method          MethodName    // how cells are made: a Methods name (dain, duplication, …)
	Model           string        // embedding model Θ: a Models name (mlp, the paper's; costco, fm, hybrid)
	Predictor       string        // value predictor Θ_p: a Predictors name (costco, the paper's; Θ's kind reuses Θ; bayes-fm; ensemble; auto)
	Influence       InfluenceKind // cell importance: an Influences name (tracin, the paper's; representer; tracin-adam; in-run; uncertainty; uncertainty-tracin)
	InfluenceLayers LayerSet      // TracIn's parameters: an InfluenceLayers name (last, the paper's, or all)
	Entity          EntityKind    // entity importance: an Entities name (sum, eq. 6, the paper's; cp1; max)
	Sign            SignKind      // cell score to importance: a Signs name (abs, the paper's; "" means abs)
	Temperature     float64       // τ on entity importance, α^τ (1, the paper's; 0 is uniform); see Tempered
	Mix             float64       // share of the uniform distribution mixed into entity importance (0, the paper's)
	// InfluenceEvery and InfluenceValSample set -influence in-run: its
	// terms are taken at every InfluenceEvery-th step of Θ's training,
	// against a fixed sample of InfluenceValSample validation cells (all
	// of them when there are no more). 0 means DefaultInfluenceEvery and
	// DefaultInfluenceValSample.
	InfluenceEvery, InfluenceValSample int
	// Values says where new cells' values come from: a ValueSources name,
	// ValuesPredictor ("" too: each method's own, the paper's) or
	// ValuesOracle (the generator Oracle's value plus its noise; see
	// Experiment.OracleValues).
	Values ValueSource
	// Oracle is the generator of the tensor (dainx synth -generator-out),
	// which ValuesOracle needs; nil when not known.
	Oracle *tensor.Generator

	// FinalModel is the model Θ′ trained on train ∪ augmentation (step 5)
	// whose test RMSE the run reports: a FinalModels name, "mlp" (the
	// paper's, "" too), "fm" or "hybrid" (trained by Adam as Θ is),
	// "bayes-fm" (package bayes), "ensemble" (the candidates of auto
	// stacked; downstreamEnsemble) or "auto" (AutoChoice). With a final
	// model other than the MLP the report's rmse_before is that model's on
	// train alone (and theta_rmse Θ's), so that improved compares one model
	// with and without the new cells.
	FinalModel string
	// FMRank is the fm model's factors per entity K (its embedding width
	// is K+1, the last column the entity's bias); 0 is not valid.
	FMRank int
	// L2 is the coupled L2 penalty of every Adam-trained model (MLP,
	// CoSTCo, fm, hybrid): each step uses g + L2·θ for every parameter it
	// updates (compute.AdamStep.L2; with sparse Adam the batch's rows).
	// 0, the paper's, is none.
	L2 float64
	// BayesRank, BayesSamples and BayesBurnIn set the bayes-fm final
	// model: its rank K, its Gibbs sweeps (burn-in included) and the first
	// sweeps not averaged (0: DefaultBayesRank, DefaultBayesSamples; a
	// burn-in of 0 averages every sweep, as libFM).
	BayesRank, BayesSamples, BayesBurnIn int
	// BayesPriors groups bayes-fm's priors: BayesPriorsMode (a mean and
	// precision per mode, as libFM with a -meta file of one group per
	// mode), BayesPriorsShared (one group for every mode, libFM without
	// -meta) or BayesPriorsAuto (both chains, the one of lower validation
	// MSE kept; twice the time). "" means BayesPriorsAuto.
	BayesPriors BayesPriorGroups
	// AugWeight is how much a new cell counts against an observed one in
	// the final model's fit (see AugWeight): AugWeightAuto (the zero
	// value), AugWeightLearn or a weight > 0.
	AugWeight AugWeight

	Rank, Channels int     // CoSTCo's R and C (20, 20)
	CoSTCoLR       float64 // CoSTCo's Adam learning rate (1e-3; see DefaultConfig)
	CoSTCoBatch    int     // CoSTCo's batch (256)
	CPLambda       float64 // rank-1 CP's ridge λ (on |α| scaled to mean 1)
	CPSweeps       int     // rank-1 CP's ALS sweeps

	// MaxMemory is the most bytes a run may need by its estimate
	// (MemoryParts), checked before any model is built: a run that needs
	// more is refused with an error naming the flags that size its
	// largest part. 0 means what the system says this process may still
	// allocate (memlimit.Available). It changes whether a run starts,
	// never what it computes.
	MaxMemory int64
	// Progress receives one line per epoch and per step; nil is silent.
	Progress io.Writer
	// OnEpoch, when not nil, is called after every training epoch of every
	// model (Θ, the CoSTCo value predictor, Θ′), on the goroutine that
	// trains, and gets the epoch's progress line (EpochInfo.Line) instead
	// of Progress. It must not block for long.
	OnEpoch func(EpochInfo)
	// Keep asks Run (and RunOn) for more than the report and the new
	// cells: the split, the cell scores, the entity importance, the
	// trained models. It changes what a run returns, never what it
	// computes. On more than one process RunOn refuses some of it (see
	// RunOn).
	Keep Keep
}

// settings is Settings' table, one entry per setting of Config (see
// Setting), in the order eval's provenance records them; those it does
// not record last. A setting added to Config adds its entry here.
func settings() []Setting {
	return []Setting{
		// -ratio, -layers and -method are registered by hand: eval has
		// -ratios instead, -layers sets a cli.IntList, -method a name that
		// cli.ApplyMethod turns into settings.
		{Field: "Ratio", Flag: "ratio", Key: "ratio", Report: "ratio"},
		{Field: "Seed", Flag: "seed", Bind: "training", Key: "seed", Report: "seed",
			Help: "random `seed` for the split, initialisation, shuffling and sampling"},
		{Field: "Layers", Flag: "layers", Key: "layers", Report: "layers"},
		{Field: "Epochs", Flag: "epochs", Bind: "training", Key: "epochs", Report: "epochs",
			Help: "maximum training `epochs` per model"},
		{Field: "Batch", Flag: "batch", Bind: "training", Key: "batch", Report: "batch",
			Help: "MLP training batch `size` in cells"},
		{Field: "Patience", Flag: "patience", Bind: "training", Key: "patience", Report: "patience",
			Help: "early-stopping patience in `epochs` without a better validation MSE"},
		{Field: "LR", Flag: "lr", Bind: "training", Key: "lr", Report: "lr",
			Help: "MLP Adam learning `rate`, also TracIn's step size η"},
		{Field: "TestFrac", Flag: "test-frac", Bind: "training", Key: "test_frac", Report: "test_frac",
			Help: "`fraction` of all cells held out for test"},
		{Field: "ValFrac", Flag: "val-frac", Bind: "training", Key: "val_frac", Report: "val_frac",
			Help: "`fraction` of the remaining cells used for validation"},
		// EvalBatch, CPLambda and CPSweeps have no flag: checkpoints name
		// them by their Go names.
		{Field: "EvalBatch", Key: "eval_batch"},
		{Field: "Method", Flag: "method", Key: "method", Report: "method"},
		{Field: "Model", Flag: "model", Bind: "method", Key: "model", Report: "model",
			Help: "embedding `model` Θ whose influence ranks cells: " + Help(Models)},
		{Field: "Predictor", Flag: "predictor", Bind: "method", Key: "predictor", Report: "predictor",
			Help: "value `predictor` for new cells: " + Help(Predictors) + "; mlp reuses Θ"},
		{Field: "Influence", Flag: "influence", Bind: "method", Key: "influence", Report: "influence",
			Help: "cell importance `estimator`: " + Help(Influences)},
		{Field: "InfluenceLayers", Flag: "influence-layers", Bind: "method", Key: "influence_layers", Report: "influence_layers",
			Help: "TracIn's `parameters`: " + Help(InfluenceLayers)},
		{Field: "Entity", Flag: "entity", Bind: "method", Key: "entity", Report: "entity",
			Help: "entity importance `aggregator`: " + Help(Entities)},
		// Sign, Temperature and Mix: abs, 1 and 0 before the study
		// variants; checkpoints name them by their Go names, as before
		// their flags.
		{Field: "Sign", Flag: "sign", Bind: "method", Ck: "Sign", Key: "sign", Legacy: "abs",
			Help: "cell score to importance: " + Help(Signs)},
		{Field: "Temperature", Flag: "temperature", Bind: "method", Ck: "Temperature", Key: "temperature", Legacy: 1.0,
			Help: "temperature `τ` on entity importance, drawn ∝ α^τ: 1 the paper's, 0 uniform, > 1 sharper (dain, degree, near-cells)"},
		{Field: "Mix", Flag: "mix", Bind: "method", Ck: "Mix", Key: "mix", Legacy: 0.0,
			Help: "`share` of the uniform distribution mixed into entity importance, 0 to 1 (0 the paper's)"},
		{Field: "Rank", Flag: "rank", Bind: "training", Key: "rank",
			Help: "CoSTCo embedding `rank` R"},
		{Field: "Channels", Flag: "channels", Bind: "training", Key: "channels",
			Help: "CoSTCo convolution `channels` C"},
		{Field: "CoSTCoLR", Flag: "costco-lr", Bind: "training", Key: "costco_lr",
			Help: "CoSTCo Adam learning `rate`"},
		{Field: "CoSTCoBatch", Flag: "costco-batch", Bind: "training", Key: "costco_batch",
			Help: "CoSTCo training batch `size`"},
		{Field: "CPLambda", Key: "cp_lambda"},
		{Field: "CPSweeps", Key: "cp_sweeps"},
		// Dense Adam before -embedding-optimizer.
		{Field: "EmbeddingOptimizer", Flag: "embedding-optimizer", Bind: "training", Key: "embedding_optimizer", Legacy: nn.Adam,
			Help: "embedding tables' `optimizer`: adam (dense Adam over every row each step, the paper's), sparse-adam (Adam on the rows a step touched: a step's cost does not grow with the number of entities) or auto (adam while a dense step over the table costs less than the step's other work, else sparse-adam; says which on standard error and in the report)"},
		// The permutation split before 0.7.
		{Field: "Split", Flag: "split", Bind: "training", Key: "split", Report: "split", Unset: SplitKeyed, Legacy: SplitLegacy,
			Help: "how cells are `split` and ordered: keyed (each cell's part and its place in every epoch's order computed from the seed: the same for any number of MPI ranks, and no rank holds an array of every cell) or legacy (one random permutation of every cell, and each epoch's order shuffled from the last: reproduces dainx 0.6 and earlier); the two give different random splits for one seed"},
		// Θ′ an MLP before -final-model (and bayes-fm's defaults, with one
		// prior group per mode, before its settings).
		{Field: "FinalModel", Flag: "final-model", Bind: "training", Key: "final_model", Report: "final_model", Unset: FinalMLP, Legacy: FinalMLP,
			Help: "`model` Θ′ trained on train ∪ the new cells, whose test RMSE the run reports: " + Help(FinalModels) + "; with bayes-fm, rmse_before is bayes-fm's on train alone"},
		{Field: "BayesRank", Flag: "bayes-rank", Bind: "training", Key: "bayes_rank", Legacy: DefaultBayesRank,
			Help: "with -final-model bayes-fm, its `rank` K (factors per entity)"},
		{Field: "BayesSamples", Flag: "bayes-samples", Bind: "training", Key: "bayes_samples", Legacy: DefaultBayesSamples,
			Help: "with -final-model bayes-fm, its Gibbs `sweeps`, burn-in included"},
		{Field: "BayesBurnIn", Flag: "bayes-burnin", Bind: "training", Key: "bayes_burnin", Legacy: 0,
			Help: "with -final-model bayes-fm, the first `sweeps` not averaged (0 averages all, as libFM)"},
		{Field: "BayesPriors", Flag: "bayes-priors", Bind: "training", Key: "bayes_priors", Unset: BayesPriorsAuto, Legacy: BayesPriorsMode,
			Help: "with bayes-fm, its prior `groups`: mode (a mean and precision per mode, as libFM with -meta), shared (one for every mode, libFM without -meta) or auto (both chains, the one of lower validation RMSE kept: twice the time)"},
		// New cells counted as observations before -aug-weight.
		{Field: "AugWeight", Flag: "aug-weight", Bind: "training", Key: "aug_weight", Legacy: AugWeight(1),
			Help: "how much a new cell counts against an observed one when the final model is fitted: a `weight` w > 0 (bayes-fm: the new cells' noise precision is w·α, α the observed cells'; 1 counts them as observations), learn (bayes-fm: their own noise precision, drawn in every Gibbs sweep) or auto (1 for mlp, fm and hybrid, which take only 1 so far; " + strconv.FormatFloat(DefaultBayesAugWeight, 'g', -1, 64) + " for bayes-fm)"},
		// The default fm rank, and no L2 penalty, before -fm-rank and -l2.
		{Field: "FMRank", Flag: "fm-rank", Bind: "training", Key: "fm_rank", Legacy: DefaultFMRank,
			Help: "the fm model's `rank` K (factors per entity; its embedding width is K+1, the last column the entity's bias), as -model, -predictor or -final-model"},
		{Field: "L2", Flag: "l2", Bind: "training", Key: "l2", Legacy: 0.0,
			Help: "L2 penalty `λ` of every Adam-trained model (mlp, costco, fm, hybrid): each step uses g + λ·θ for the parameters it updates (with sparse Adam the batch's rows); 0 is none, the paper's"},
		// Each method's own values, and no generator, before -values and
		// -oracle (a file name, registered by hand; recorded only when
		// there is one).
		{Field: "Values", Flag: "values", Bind: "values", Key: "values", Report: "values", Unset: ValuesPredictor, Legacy: ValuesPredictor,
			Help: "`source` of the new cells' values: " + Help(ValueSources)},
		{Field: "Oracle", Flag: "oracle", Key: "oracle", OmitEmpty: true, Legacy: (*tensor.Generator)(nil)},
		// In-run's defaults before its settings.
		{Field: "InfluenceEvery", Flag: "influence-every", Bind: "in-run", Key: "influence_every", Unset: DefaultInfluenceEvery, Legacy: DefaultInfluenceEvery,
			Help: "with -influence in-run, take its terms at every `k`-th training step of Θ (the steps t with (t−1) mod k = 0; 0 means the default)"},
		{Field: "InfluenceValSample", Flag: "influence-val-sample", Bind: "in-run", Key: "influence_val_sample", Unset: DefaultInfluenceValSample, Legacy: DefaultInfluenceValSample,
			Help: "with -influence in-run, the number of `cells` of the fixed validation sample (drawn by the seed) its validation gradient is taken over; every validation cell when there are no more (0 means the default)"},
		// Not recorded by eval (a run of one process ignores them).
		// No sharding before -shard-tables, which dainx augment registers
		// (with -dist); checkpoints name it by its Go name.
		{Field: "ShardTables", Flag: "shard-tables", Ck: "ShardTables", Unset: ShardTablesAuto, Legacy: ShardTablesOff},
		// Graph replay and auto exchange before -graphs and -exchange
		// ($DAINX_CUDA_GRAPHS and $DAINX_EXCHANGE, not recorded); -exchange
		// is registered by dainx augment (with -dist).
		{Field: "Graphs", Flag: "graphs", Bind: "training", Report: "graphs", Unset: GraphsOn, Legacy: GraphsOn,
			Help: "replay each training step as a CUDA graph (one per batch size) instead of launching its kernels one by one: `on` or off; the same results bit for bit, faster steps on a GPU; the CPU ignores it; $DAINX_CUDA_GRAPHS=0 makes off the default"},
		{Field: "Exchange", Flag: "exchange", Unset: ExchangeAuto, Legacy: ExchangeAuto},
	}
}

// Keep names what Run returns (in Result) or hands over beside the report.
// The zero value keeps nothing more. Run (and RunCheckpointed) return an
// error if something asked for cannot be given: scores or importance of a
// method that computes none (duplication, random, entity-replacement,
// no-aug-steps), or anything from steps 1–4 when a checkpoint resumed
// after them.
type Keep struct {
	// Split fills Result.Split with the train, validation and test cells.
	Split bool
	// Scores fills Result.Scores: every training cell's α_z (the
	// importance the sampler used) and signed score S_z.
	Scores bool
	// Importance fills Result.Importance: each mode's entity importance,
	// the distribution the alias tables draw from.
	Importance bool
	// Model, when not nil, is called with the retrained model Θ′ (role
	// "theta-prime") before Run frees it and, with AllModels, first with
	// the embedding model Θ ("theta") and the value predictor
	// ("predictor") when the method trains one of its own. An error it
	// returns ends the run. The net is only valid during the call.
	Model     func(role string, net *nn.Net) error
	AllModels bool
	// Bayes, when not nil, is called with a bayes-fm Θ′ (role
	// "theta-prime": -final-model bayes-fm, or auto when it chooses
	// bayes-fm) once its chain has run; the model holds BayesSamples
	// samples (0: every sample after burn-in) rounded to float32 (Round32),
	// and the run's rmse_after is its predictions'. Keep.Model set and
	// Bayes nil refuses a bayes-fm (or auto) final model. The model is
	// only valid during the call.
	Bayes        func(role string, m *bayes.Model) error
	BayesSamples int
}

// Split is the train/validation/test partition of a run's observed cells
// (tensor.Split over the input's cell order), each with the input's Dims
// and values.
type Split struct {
	Train, Val, Test *tensor.COO
}

// CellScores are the cell importances of a run's training cells, in the
// order of Split.Train (and Result.Split.Train's cells in Cells).
type CellScores struct {
	// Cells are the training cells, with their values.
	Cells *tensor.COO
	// Alpha[z] is α_z, the importance the entity aggregation used:
	// |S_z| with -sign abs (eq. 5), max(S_z, 0) with -sign positive.
	Alpha []float32
	// S[z] is the signed score S_z: TracIn-CP's Σ_k η ∇ℓ(Θ_k, z)·G_k
	// (positive when a step on z lowers the validation loss), or the
	// representer value with -influence representer.
	S []float32
}

// DefaultConfig returns the paper's settings (SPEC step 1 and §5.1): ratio
// 0.5, seed 1, default layers, 50 epochs, batch 1024, patience 10, lr 1e-3,
// a 72/18/10 split, DAIN with TracIn on the MLP's last layer, aggregation,
// and a CoSTCo value predictor (R = C = 20, batch 256, lr 1e-3). The
// variants of the steps are the first of their Choice lists (stages.go),
// the paper's.
//
// CoSTCo's learning rate departs from SPEC's 1e-4: within the 50-epoch cap
// that rate leaves CoSTCo far from converged (measured on the demo tensor:
// test RMSE 0.584 at 1e-4, 0.431 at 1e-3, still improving at epoch 50 with
// 1e-4; on MovieLens 0.904 vs 0.877).
func DefaultConfig() Config {
	return Config{
		Ratio: 0.5, Seed: 1, Epochs: 50, Batch: 1024, Patience: 10, LR: 1e-3,
		TestFrac: 0.1, ValFrac: 0.2, EvalBatch: 4096, EmbeddingOptimizer: nn.Auto, Split: SplitKeyed,
		Method: MethodName(Methods[0].Name), Model: nn.KindMLP, Predictor: nn.KindCoSTCo, Influence: InfluenceKind(Influences[0].Name), InfluenceLayers: LayerSet(InfluenceLayers[0].Name), Entity: EntityKind(Entities[0].Name), Sign: SignKind(Signs[0].Name), Temperature: 1,
		Rank: 20, Channels: 20, CoSTCoLR: 1e-3, CoSTCoBatch: 256, CPLambda: 1e-3, CPSweeps: 30,
		FinalModel: FinalMLP, FMRank: DefaultFMRank, BayesRank: DefaultBayesRank, BayesSamples: DefaultBayesSamples, BayesPriors: BayesPriorsAuto,
		InfluenceEvery: DefaultInfluenceEvery, InfluenceValSample: DefaultInfluenceValSample,
		Graphs: GraphsOn, Exchange: ExchangeAuto,
	}
}

// Limits on the settings (issue 31: no flag value overflows a count).
const (
	// MaxRatio is the largest augmentation ratio: new cells per training
	// cell.
	MaxRatio = 1000
	// MaxBatch is the largest batch, in cells, of Config.Batch,
	// CoSTCoBatch and EvalBatch (model.MaxCapacity, the largest batch a
	// saved model is loaded for).
	MaxBatch = 1 << 24
	// MaxAug is the most new cells one run draws (⌊ratio·|train|⌋),
	// 2³¹−1.
	MaxAug = math.MaxInt32
)

// CheckRatio reports a ratio that cannot work: N_aug = ⌊r·|train|⌋ needs a
// finite r with 0 ≤ r ≤ MaxRatio (0 draws nothing: eval's baseline).
func CheckRatio(r float64) error {
	if !(r >= 0) || math.IsInf(r, 0) {
		return fmt.Errorf("ratio %v: want a finite number ≥ 0", r)
	}
	if r > MaxRatio {
		return fmt.Errorf("ratio %v: above the limit %d (new cells per training cell)", r, MaxRatio)
	}
	return nil
}

// AugCount returns N_aug = ⌊ratio·nTrain⌋, the number of new cells a run
// draws, or an error (naming both) when it is above MaxAug. ratio is
// assumed checked by CheckRatio.
func AugCount(ratio float64, nTrain int) (int, error) {
	f := math.Floor(ratio * float64(nTrain))
	if !(f >= 0 && f <= MaxAug) {
		return 0, fmt.Errorf("dain: ratio %v × %d training cells = %.4g new cells: above the limit of %d new cells per run; use a smaller ratio", ratio, nTrain, f, MaxAug)
	}
	return int(f), nil
}

// SplitKind is Config.Split: how cells are split and ordered. Splits
// lists its accepted values; "" means SplitKeyed (the table's Unset).
// It is recorded (report, checkpoint, provenance) as its string.
type SplitKind string

// The splits of Config.Split.
const (
	SplitLegacy SplitKind = "legacy"
	SplitKeyed  SplitKind = "keyed"
)

// Splits are the accepted values of Config.Split.
var Splits = []SplitKind{SplitLegacy, SplitKeyed}

// split returns c.Split with "" resolved (the table's Unset, keyed).
func (c Config) split() SplitKind { return resolved[SplitKind](c, "Split") }

// order returns the TrainConfig.Order of n training cells for the model
// whose shuffle stream is stream: a keyed order under SplitKeyed, nil (the
// shuffle) under SplitLegacy.
func (c Config) order(stream uint64, n int) func(int) nn.EpochOrder {
	if c.split() != SplitKeyed {
		return nil
	}
	return nn.KeyedOrder(n, c.Seed, 0x5eed0000+stream)
}

// splitParts returns the part (tensor.PartTrain, PartVal or PartTest) of
// each cell of [lo, hi) of a tensor of nnz cells under c's split, one byte
// per cell. Under SplitLegacy it draws the split of all nnz cells
// (tensor.Split) and marks those in [lo, hi); under SplitKeyed it looks at
// [lo, hi) alone. before is the number of training cells before lo under
// SplitLegacy (-1 under SplitKeyed, where the caller sums the ranges
// before its own); counts are the parts' sizes over all nnz cells.
func (c Config) splitParts(nnz, lo, hi int) (part []uint8, before int, counts [3]int) {
	part = make([]uint8, hi-lo)
	if c.split() == SplitKeyed {
		s := tensor.NewKeyedSplit(nnz, c.TestFrac, c.ValFrac, c.Seed)
		counts[0], counts[1], counts[2] = s.Counts()
		s.Parts(part, lo)
		return part, -1, counts
	}
	tr, va, te := tensor.Split(nnz, c.TestFrac, c.ValFrac, c.Seed)
	for p, cells := range [][]int{tr, va, te} {
		counts[p] = len(cells)
		a, b := sort.SearchInts(cells, lo), sort.SearchInts(cells, hi)
		for _, cell := range cells[a:b] {
			part[cell-lo] = uint8(p)
		}
		if p == tensor.PartTrain {
			before = a
		}
	}
	return part, before, counts
}

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	if err := CheckRatio(c.Ratio); err != nil {
		return err
	}
	switch {
	case c.Epochs <= 0:
		return fmt.Errorf("epochs %d: want ≥ 1", c.Epochs)
	case c.Batch <= 0:
		return fmt.Errorf("batch %d: want ≥ 1", c.Batch)
	case c.Patience <= 0:
		return fmt.Errorf("patience %d: want ≥ 1", c.Patience)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("lr %v: want a finite number > 0", c.LR)
	case !(c.TestFrac >= 0 && c.TestFrac < 1):
		return fmt.Errorf("test fraction %v: want 0 ≤ f < 1 (0: no test set, the production mode)", c.TestFrac)
	case !(c.ValFrac > 0 && c.ValFrac < 1):
		return fmt.Errorf("validation fraction %v: want 0 < f < 1", c.ValFrac)
	case c.EvalBatch <= 0:
		return fmt.Errorf("eval batch %d: want ≥ 1", c.EvalBatch)
	case c.Rank <= 0 || c.Channels <= 0:
		return fmt.Errorf("CoSTCo rank %d, channels %d: want ≥ 1", c.Rank, c.Channels)
	case !(c.CoSTCoLR > 0) || math.IsInf(c.CoSTCoLR, 0) || c.CoSTCoBatch <= 0:
		return fmt.Errorf("CoSTCo lr %v, batch %d: want > 0", c.CoSTCoLR, c.CoSTCoBatch)
	case !(c.CPLambda >= 0) || c.CPSweeps <= 0:
		return fmt.Errorf("rank-1 CP λ %v, sweeps %d: want λ ≥ 0 and sweeps ≥ 1", c.CPLambda, c.CPSweeps)
	case !(c.Temperature >= 0) || math.IsInf(c.Temperature, 0):
		return fmt.Errorf("temperature %v: want a finite number ≥ 0", c.Temperature)
	case !(c.Mix >= 0 && c.Mix <= 1):
		return fmt.Errorf("mix %v: want 0 ≤ mix ≤ 1", c.Mix)
	}
	for _, b := range []struct {
		name string
		v    int
	}{{"batch", c.Batch}, {"eval batch", c.EvalBatch}, {"CoSTCo batch", c.CoSTCoBatch}} {
		if b.v > MaxBatch {
			return fmt.Errorf("%s %d: above the limit %d cells", b.name, b.v, MaxBatch)
		}
	}
	if sp := c.Split; sp != "" && !slices.Contains(Splits, sp) {
		return fmt.Errorf("split %q: want %s or %s", sp, Splits[0], Splits[1])
	}
	if err := c.checkSettings(); err != nil {
		return err
	}
	if st := c.ShardTables; st != "" && !slices.Contains(TableShardings, st) {
		return fmt.Errorf("shard-tables %q: want %s, %s or %s", st, TableShardings[0], TableShardings[1], TableShardings[2])
	}
	if o := c.EmbeddingOptimizer; o != "" && o != nn.Auto {
		if err := nn.CheckEmbeddingOptimizer(o); err != nil {
			return fmt.Errorf("%w (or %s)", err, nn.Auto)
		}
	}
	if _, err := lookup("sign", string(c.sign()), Signs); err != nil {
		return err
	}
	if err := c.checkFinal(); err != nil {
		return err
	}
	if _, err := lookup("method", string(c.Method), Methods); err != nil {
		return err
	}
	if _, err := lookup("model", c.Model, Models); err != nil {
		return err
	}
	if _, err := lookup("predictor", c.Predictor, Predictors); err != nil {
		return err
	}
	if _, err := lookup("influence", string(c.Influence), Influences); err != nil {
		return err
	}
	if _, err := lookup("influence layers", string(c.InfluenceLayers), InfluenceLayers); err != nil {
		return err
	}
	if err := c.checkInfluence(); err != nil {
		return err
	}
	if err := c.checkValueSource(); err != nil {
		return err
	}
	_, err := lookup("entity importance", string(c.Entity), Entities)
	return err
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
	Input  string `json:"input,omitempty"`
	Dims   []int  `json:"dims"`
	NNZ    int    `json:"nnz"`
	NTrain int    `json:"n_train"`
	NVal   int    `json:"n_val"`
	NTest  int    `json:"n_test"`
	NAug   int    `json:"n_aug"`
	// RMSEBefore is the test RMSE of the MLP Θ on train alone,
	// √mean(e²); RMSEAfter that after retraining on train ∪ aug. With no
	// test set (TestFrac 0, NoTest) they are the validation RMSEs.
	RMSEBefore float64 `json:"rmse_before"`
	RMSEAfter  float64 `json:"rmse_after"`
	// NoTest says the run held out no test cells (TestFrac 0, the
	// production mode): rmse_before and rmse_after are then on the
	// validation cells, which also chose the best epoch.
	NoTest bool `json:"no_test,omitempty"`
	// ValRMSEBefore and ValRMSEAfter are the validation RMSEs of Θ and Θ′
	// at their best epochs.
	ValRMSEBefore  float64 `json:"val_rmse_before"`
	ValRMSEAfter   float64 `json:"val_rmse_after"`
	Improved       bool    `json:"improved"`   // whether the augmentation lowered the RMSE: rmse_after < rmse_before
	BestEpoch      int     `json:"best_epoch"` // K, Θ's best checkpoint
	BestEpochAfter int     `json:"best_epoch_after"`
	Backend        string  `json:"backend"`
	Device         string  `json:"device"`
	Seed           uint64  `json:"seed"`
	Ratio          float64 `json:"ratio"`
	Layers         []int   `json:"layers"`
	Epochs         int     `json:"epochs"`
	Batch          int     `json:"batch"`
	Patience       int     `json:"patience"`
	LR             float64 `json:"lr"`
	TestFrac       float64 `json:"test_frac"`
	ValFrac        float64 `json:"val_frac"`
	Method         string  `json:"method"` // the cell maker (a Methods name)
	// Variant is the -method name when it named one of Variants (e.g.
	// dain-mix-avg, whose cell maker is dain-average with mix 0.5).
	Variant        string `json:"variant,omitempty"`
	Model          string `json:"model"`
	Predictor      string `json:"predictor"`
	Influence      string `json:"influence"`
	InfLayers      string `json:"influence_layers"`
	Entity         string `json:"entity"`
	Draws          int    `json:"sample_draws"`
	RejectObserved int    `json:"sample_rejected_observed"`
	RejectRepeat   int    `json:"sample_rejected_repeated"`
	// EmbeddingOptimizer is the setting (auto, adam or sparse-adam);
	// EmbeddingOptimizers what each model kind the run trains used.
	EmbeddingOptimizer  string            `json:"embedding_optimizer"`
	EmbeddingOptimizers map[string]string `json:"embedding_optimizers"`
	Split               string            `json:"split"` // legacy or keyed (Config.Split)
	// Graphs is Config.Graphs (on or off): whether training replayed its
	// steps as graphs on a backend that records them (CUDA; the others
	// ignore it).
	Graphs string `json:"graphs"`
	// GemmTune is how the CUDA backend chose its GEMM kernels (off, model
	// or time: dainx -gemm-tune); absent on the CPU.
	GemmTune string `json:"gemm_tune,omitempty"`
	// SplitFingerprint identifies which cells the split put in each part
	// (splitPrint): equal for every number of processes of the same run.
	SplitFingerprint string     `json:"split_fingerprint"`
	Seconds          Seconds    `json:"seconds"`
	HistoryBefore    []EpochLog `json:"history_before"`
	HistoryAfter     []EpochLog `json:"history_after"`
	// Dist describes a run on the processes of a job (RunOn on any
	// cluster but cluster.Local, even of one process); nil for Run.
	Dist *DistReport `json:"dist,omitempty"`
	// Version is dainx's version and commit, set by the program that
	// ran it (dainx augment, libdainx); empty when not set.
	Version string `json:"version,omitempty"`
	// FinalModel is the model Θ′ of step 5 (Config.FinalModel); ThetaRMSE
	// is Θ's test RMSE when the final model is not an MLP (rmse_before is
	// then the final model's on train alone).
	FinalModel string `json:"final_model"`
	// AutoChoice, with -final-model auto or -predictor auto, is what they
	// chose on this split (FinalModel and Predictor then hold the choice).
	AutoChoice *AutoChoice `json:"auto_choice,omitempty"`
	// BayesPriors is the prior grouping bayes-fm's final chain used
	// (mode or shared; with auto, the one it chose).
	BayesPriors BayesPriorGroups `json:"bayes_priors,omitempty"`
	// AugWeight says how much the new cells counted in the fit of a
	// bayes-fm final model (or an ensemble's; Config.AugWeight with auto
	// resolved): "weight 1" (as observations), "weight 0.1", "learned",
	// prefixed "auto: " when -aug-weight was auto; empty without new
	// cells and for the Adam-trained final models, which count them as
	// observations.
	AugWeight string `json:"aug_weight,omitempty"`
	// Preset is the -preset the settings came from (set by the program
	// that parsed them; empty when none).
	Preset    string  `json:"preset,omitempty"`
	ThetaRMSE float64 `json:"theta_rmse,omitempty"`

	// InfluenceEvery and InfluenceValSample are in-run's k and validation
	// sample size (Config's, resolved), with -influence in-run only.
	InfluenceEvery     int `json:"influence_every,omitempty"`
	InfluenceValSample int `json:"influence_val_sample,omitempty"`

	// Values is where the new cells' values came from (Config.Values):
	// predictor (each method's own) or oracle (the tensor's generator plus
	// its noise).
	Values string `json:"values,omitempty"`
	// Diagnostics compare, per mode, the entity importance the new cells
	// were drawn from with the entities' training-cell counts
	// (Experiment.ImportanceDiagnostics); absent for a method that draws
	// from none (and for a run resumed from a checkpoint written before
	// them).
	Diagnostics []ModeDiagnostics `json:"diagnostics,omitempty"`
	// Outputs names every file and directory the command wrote, as the
	// user gave them, the report's own file included (set by the program
	// that writes them, e.g. cmd/dainx; empty when none).
	Outputs []string `json:"outputs,omitempty"`
}

// Result is what Run returns: the report and the augmented cells.
type Result struct {
	Report Report
	// Aug holds the N_aug new cells and their predicted values, with the
	// input's Dims.
	Aug *tensor.COO
	// Split, Scores and Importance are filled when Config.Keep asks for
	// them, else nil. Importance[n][i] is entity i of mode n's share of
	// mode n's draws (each mode sums to 1).
	Split      *Split
	Scores     *CellScores
	Importance [][]float64
}

// Run executes DAIN, or the baseline c.Method names, on the observed cells
// of t with backend be: split, train Θ with TracIn, entity importance,
// N_aug = ⌊Ratio·|train|⌋ new cells with predicted values, and the test RMSE
// of a fresh MLP trained on train ∪ augmentation. rmse_before is the test
// RMSE of the MLP trained on train alone (Θ itself when Model is mlp). It
// returns ctx's error when cancelled, an error for a configuration that
// cannot work with t, and the backend's error if the device failed.
func Run(ctx context.Context, t *tensor.COO, cfg Config, be compute.Backend) (*Result, error) {
	return RunOn(ctx, cluster.Local{}, &tensor.Part{Cells: t, NNZ: t.NNZ()}, cfg, be)
}

// RunCheckpointed is Run saving its state in ck.Dir after every epoch
// of every training stage, and with ck.Resume going on from the state
// saved there (see Checkpoint). On the CPU backend a run interrupted at any
// point (even by SIGKILL) and resumed gives the result of a run never
// interrupted, wall times aside; the wall times of a resumed run count the
// epochs it saved and those it ran. Besides Run's errors, it returns an
// error if ck.Dir holds a checkpoint and ck.Resume is not set
// (ErrCheckpointExists), or if the checkpoint there was made with another
// configuration or input, naming the first difference.
func RunCheckpointed(ctx context.Context, t *tensor.COO, cfg Config, be compute.Backend, ck Checkpoint) (*Result, error) {
	return RunOnCheckpointed(ctx, cluster.Local{}, &tensor.Part{Cells: t, NNZ: t.NNZ()}, cfg, be, ck)
}

// RunOn is Run on the processes of cl (spread.go), each calling it with its
// part of the tensor (a tensor.Part) and the same configuration on its own backend; Run
// is RunOn on cluster.Local, and every setting and Config.Keep work on
// both. Every process returns the same report (with Report.Dist, the
// per-rank times, unless cl is cluster.Local), or the same error, and its share of
// the augmented cells: of Run's N_aug new cells (Report.NAug), Result.Aug
// holds cells Rank·N_aug/Size to (Rank+1)·N_aug/Size − 1 with their
// values, so the processes' shares in rank order are the whole (written
// together by tensor.WriteFileParallel). On one process the cells, values
// and RMSEs are Run's, bit for bit; on several, the split, the
// initialisations, the shuffles and the sampling's draws are those of Run
// with the same seed and only the order in which gradients and importances
// are summed differs. Every method and setting runs on any number of
// processes; with sharded tables (Config.ShardTables) those that need the
// whole table are refused (checkSpreadOn). On more than one process
// Config.Keep's Split and Scores are refused (each process holds its own
// share of them), and Model with a sharded table; the models (replicated)
// are handed to Keep.Model and Keep.Bayes on rank 0 only, and every
// process returns Result.Importance. Progress goes to
// cfg.Progress (give it to one process). Like Run, RunOn keeps the split
// only: once its parts are made it replaces sh.Cells by a tensor of the
// same dims without cells, so that the part's cells can be freed (the
// caller must not need them afterwards).
func RunOn(ctx context.Context, cl cluster.Cluster, sh *tensor.Part, cfg Config, be compute.Backend) (*Result, error) {
	return run(ctx, cl, sh, cfg, be, nil)
}

// RunOnCheckpointed is RunOn made restartable as RunCheckpointed makes
// Run: after every epoch of every training stage each process saves its
// state in a directory of its own under ck.Dir (rank-R-of-P), rank 0
// writes the manifest, and an epoch counts as saved once every process has
// saved it, so a run killed at any moment on any process continues, with
// ck.Resume and as many processes, from the last epoch every process
// saved, to the uninterrupted run's result (bit for bit on the CPU).
// On cluster.Local it is RunCheckpointed, whose checkpoint (one process's
// files at the top of ck.Dir) a job does not resume, nor the reverse.
// ck.Dir must be one directory seen by every process (a shared file
// system across nodes). It needs the keyed split.
func RunOnCheckpointed(ctx context.Context, cl cluster.Cluster, sh *tensor.Part, cfg Config, be compute.Backend, ck Checkpoint) (*Result, error) {
	return run(ctx, cl, sh, cfg, be, &ck)
}

// run is DAIN on the processes of cl (cluster.Local for Run), this one
// holding sh, checkpointed in ck when not nil.
func run(ctx context.Context, cl cluster.Cluster, sh *tensor.Part, cfg Config, be compute.Backend, ck *Checkpoint) (*Result, error) {
	start := time.Now()
	e, rep, err := begin(cl, sh, cfg, be, ck, start)
	if e != nil {
		defer e.Close()
		if e.ck != nil {
			defer e.ck.Close() // the checkpoint directory's lock
		}
	}
	if err != nil {
		return nil, err
	}
	cfg = e.cfg
	out := &Result{}
	if cfg.Keep.Split {
		out.Split = &Split{Train: e.Train, Val: e.Val, Test: e.Test}
	}
	e.keep = &kept{want: cfg.Keep}
	if cfg.Keep.Scores {
		// The kept scores name their cells; otherwise the training cells
		// are not held here, so that the retraining, whose set holds
		// them, can let the split go.
		e.keep.train = e.Train
	}
	runtime.GC()

	nAug, err := AugCount(cfg.Ratio, rep.NTrain)
	if err != nil {
		return nil, err
	}
	aug, saved, err := e.steps14(ctx, &rep, nAug)
	if err != nil {
		return nil, err
	}
	cfg = e.cfg
	if saved == nil {
		if err := e.keepModels(cfg); err != nil {
			return nil, err
		}
		out.Scores, out.Importance = e.keep.scores, e.keep.importance
	}
	if k := cfg.Keep.Model; k != nil {
		e.onRetrained = func(m *nn.Net) error { return k("theta-prime", m) }
	}
	if k := cfg.Keep.Bayes; k != nil {
		e.onRetrainedBayes = func(m *bayes.Model) error { return k("theta-prime", m) }
	}
	if err := e.step5(ctx, &rep, aug, nAug); err != nil {
		return nil, err
	}
	if err := e.ck.Done(); err != nil {
		return nil, err
	}
	rep.Seconds.Total = time.Since(start).Seconds()
	if d := e.sp.dist; d != nil {
		d.Mark(cl) // retrain
		rep.Dist = d.Finish(cl, e.logf)
		for _, kind := range rep.Dist.ShardedTables {
			rep.EmbeddingOptimizers[kind] = nn.SparseAdam
		}
	}
	on := "test"
	if rep.NoTest {
		on = "validation (no test set)"
	}
	e.logf("%s RMSE %.6f → %.6f after %d augmented cells (%.1fs)", on, rep.RMSEBefore, rep.RMSEAfter, rep.NAug, rep.Seconds.Total)
	if !rep.Improved {
		e.logf("the augmentation did not lower the %s RMSE: %.6f after it, %.6f before (%+.2f%%); the augmented cells did not help this model on this split", on, rep.RMSEAfter, rep.RMSEBefore, 100*(rep.RMSEAfter/rep.RMSEBefore-1))
	}
	out.Report, out.Aug = rep, aug
	return out, nil
}

// begin is step 0 of run: the checks, the split of sh into the
// experiment's parts, the checkpoint and the report. From here on the run
// uses the split only: sh's cells are dropped, and collected once the
// caller drops them too (dainx augment does), so that a large tensor is
// not held twice. On error the experiment, if not nil, must be closed.
func begin(cl cluster.Cluster, sh *tensor.Part, cfg Config, be compute.Backend, ck *Checkpoint, start time.Time) (*Experiment, Report, error) {
	if err := cfg.checkKeepOn(cl.Size(), sh.Cells.Dims); err != nil {
		return nil, Report{}, err
	}
	cfg.Keep = cfg.Keep.onRank0(cl)
	e, err := newExperimentOn(cl, sh, cfg, be)
	if err != nil {
		return nil, Report{}, err
	}
	e.single = true
	cfg = e.cfg
	job := inJob(cl)
	if ck != nil {
		if job {
			e.ck, err = openDistCheckpoint(ck, cfg, be, cl, sh.Cells, sh.NNZ, e.logf)
		} else {
			e.ck, err = openCheckpoint(ck, e, sh.Cells)
		}
		if err != nil {
			return e, Report{}, err
		}
	}
	dims := e.x.Dims
	sh.Cells = &tensor.COO{Dims: dims} // the parts hold the cells now
	c := e.sp.counts
	var ranks string
	if job {
		d := spread.NewRecorder(cl, start)
		e.sp.dist = d
		if o, ok := cl.(interface{ Oversubscribed() bool }); ok && o.Oversubscribed() {
			d.Report.Oversubscribed = true
			e.logf("dainx: more ranks on this node than cores: waits yield the core instead of polling; times are not a dedicated node's")
		}
		rows := 0
		for _, d := range dims {
			rows += d
		}
		d.Report.Exchange = cfg.exchange(rows, cfg.Batch, len(dims))
		ranks = fmt.Sprintf("; %d ranks (%s)", cl.Size(), d.Report.Library)
	}
	e.logf("dainx: %d cells, dims %v: %d train, %d validation, %d test; backend %s (%s)%s", sh.NNZ, dims, c[0], c[1], c[2], be.Name(), be.Device(), ranks)
	rep := cfg.newReport(be, dims, sh.NNZ, c, e.splitPrint, e.logf)
	if err := cfg.checkKeep(); err != nil {
		return e, rep, err
	}
	e.sp.dist.Mark(cl) // split
	return e, rep, nil
}

// steps14 is steps 1–4 of run (or their record in the checkpoint): Θ,
// rmse_before, the final model's choice and the nAug new cells (this
// process's share), recorded in rep. saved is the checkpoint's record when
// the steps finished before an interruption.
func (e *Experiment) steps14(ctx context.Context, rep *Report, nAug int) (aug *tensor.COO, saved *augRecord, err error) {
	cfg := e.cfg
	saved, aug, err = loadAugmented(e.ck)
	if err != nil {
		return nil, nil, err
	}
	if saved != nil {
		if len(cfg.Keep.Steps14Flags()) > 0 {
			// rundir.Dir.LoadAugmented refuses this first, saying
			// whether the run there finished or was interrupted.
			return nil, nil, fmt.Errorf("dain: -resume: the cell scores, entity importance and models Θ and Θ_p come from steps 1–4, whose result the checkpoint holds without them: resume without -scores-out, -importance-out and -model-out-all, or remove the checkpoint directory and run without -resume to have them")
		}
		// Steps 1–4 finished in an earlier run on the checkpoint.
		rep.RMSEBefore, rep.BestEpoch, rep.HistoryBefore = saved.RMSEBefore, saved.BestEpoch, saved.HistoryBefore
		rep.ValRMSEBefore = bestValRMSE(saved.HistoryBefore, saved.BestEpoch)
		st := saved.Stats
		rep.NAug = e.globalNNZ(aug)
		if e.sp.dist != nil {
			// This process's share starts after those of the processes
			// before it (Rank·N_aug/Size for CellsShared's; duplication's
			// vary).
			e.augFirst = spread.CountBefore(e.sp.cl, len(aug.Idx)/e.x.Order())
			aug.Dims = append([]int(nil), e.x.Dims...)
			if aug.Val == nil {
				aug.Val = []float64{}
			}
		}
		rep.Draws, rep.RejectObserved, rep.RejectRepeat = st.Draws, st.RejectObserved, st.RejectRepeat
		rep.Seconds = saved.Seconds
		rep.Diagnostics = saved.Diagnostics
		e.logf("steps 1–4 taken from the checkpoint: test RMSE %.6f before augmentation, %d new cells", rep.RMSEBefore, rep.NAug)
		e.sp.dist.Mark(e.sp.cl) // train
		// auto chooses again as it did: the same split and seeds.
		if cfg, rep.AutoChoice, err = e.Resolve(ctx, cfg); err != nil {
			return nil, nil, err
		}
		e.cfg = cfg
		rep.FinalModel, rep.Predictor = cfg.finalModel(), cfg.Predictor
		e.sp.dist.Mark(e.sp.cl) // augment
		return aug, saved, nil
	}
	// Steps 1–2: Θ (the downstream MLP on train alone, for rmse_before).
	mlp, err := e.model(ctx, Embedding{nn.KindMLP})
	if err != nil {
		return nil, nil, err
	}
	rep.RMSEBefore, rep.BestEpoch, rep.HistoryBefore = mlp.rmse, mlp.res.BestEpoch, history(mlp.res)
	rep.ValRMSEBefore = math.Sqrt(mlp.res.BestValMSE)
	e.sp.dist.Mark(e.sp.cl) // train
	if cfg, rep.AutoChoice, err = e.Resolve(ctx, cfg); err != nil {
		return nil, nil, err
	}
	e.cfg = cfg
	rep.FinalModel, rep.Predictor = cfg.finalModel(), cfg.Predictor
	if nAug > 0 {
		e.logf("step 4: %s, %d new cells", cfg.Method, nAug)
	}
	var st AugStats
	if aug, st, err = e.Augment(ctx, cfg, nAug); err != nil {
		return nil, nil, err
	}
	rep.NAug = e.globalNNZ(aug)
	rep.Draws, rep.RejectObserved, rep.RejectRepeat = st.Draws, st.RejectObserved, st.RejectRepeat
	rep.Diagnostics = e.ImportanceDiagnostics(cfg, aug)
	sh := e.SharedSeconds(cfg)
	rep.Seconds.Train, rep.Seconds.Influence, rep.Seconds.Entity = sh.Train, sh.Influence, sh.Entity
	if sh.Train == 0 {
		rep.Seconds.Train = e.models.seconds(Embedding{nn.KindMLP}) // the baselines' rmse_before model
	}
	rep.Seconds.Sample, rep.Seconds.Predict = st.Sample, st.Predict+sh.Predictor
	total := 0 // the record of one process (Run) has NAug alone
	if e.sp.dist != nil {
		total = nAug
	}
	err = e.ck.SaveAugmented(augRecord{RMSEBefore: rep.RMSEBefore, BestEpoch: rep.BestEpoch, HistoryBefore: rep.HistoryBefore,
		NAug: aug.NNZ(), Total: total, Stats: st, Seconds: rep.Seconds, Dims: aug.Dims, Diagnostics: rep.Diagnostics}, aug)
	if err != nil {
		return nil, nil, err
	}
	e.sp.dist.Mark(e.sp.cl) // augment
	return aug, nil, nil
}

// step5 is step 5 of run: the final model on train ∪ aug (and, for a final
// model other than the MLP, on train alone for rmse_before), recorded in
// rep.
func (e *Experiment) step5(ctx context.Context, rep *Report, aug *tensor.COO, nAug int) error {
	cfg := e.cfg
	// theta_rmse is Θ's own when Θ is a final-model kind of its own (fm,
	// hybrid) rather than the MLP trained for rmse_before.
	thetaRMSE := rep.RMSEBefore
	if k := (Embedding{cfg.Model}); (k.Kind == FinalFM || k.Kind == FinalHybrid) && e.models[k] != nil {
		thetaRMSE = e.models[k].val.rmse
	}
	// Step 5 needs only the split and the new cells: Θ, its scores and
	// the predictor's copies of the split are freed first.
	e.release()
	if cfg.finalModel() != FinalMLP {
		// rmse_before: the final model on train alone, so that improved
		// compares one model with and without the new cells.
		e.logf("step 5: %s on the %d training cells alone", cfg.finalModel(), rep.NTrain)
		rmse0, res0, _, err := e.downstreamAt(ctx, &tensor.COO{Dims: append([]int(nil), e.x.Dims...)}, "Θ′ without augmentation", "final-alone")
		if err != nil {
			return err
		}
		rep.ThetaRMSE, rep.RMSEBefore = thetaRMSE, rmse0
		rep.ValRMSEBefore = math.Sqrt(res0.BestValMSE)
	}
	e.logf("step 5: retraining on %d + %d cells", rep.NTrain, rep.NAug)
	e.lastStage = true
	rmse, res, secs, err := e.Retrain(ctx, cfg, aug, nAug, "Θ'")
	if err != nil {
		return err
	}
	rep.RMSEAfter, rep.BestEpochAfter, rep.HistoryAfter = rmse, res.BestEpoch, history(res)
	rep.BayesPriors = e.lastBayesPriors
	if f := e.applyAuto(e.cfg).finalModel(); rep.NAug > 0 && (f == FinalBayesFM || f == FinalEnsemble) {
		rep.AugWeight = e.cfg.AugWeight.applied(f)
	}
	rep.ValRMSEAfter = math.Sqrt(res.BestValMSE)
	// No new cell is no augmentation: a lower RMSE then is the
	// retraining's noise.
	rep.Improved = rep.NAug > 0 && rep.RMSEAfter < rep.RMSEBefore
	rep.Seconds.Retrain = secs
	return nil
}

// embeddingOptimizerSetting is EmbeddingOptimizer with "" read as auto.
func (c *Config) embeddingOptimizerSetting() string {
	if c.EmbeddingOptimizer == "" {
		return nn.Auto
	}
	return c.EmbeddingOptimizer
}

// EmbeddingOptimizer returns the embedding optimiser of a model of the
// given kind (mlp or costco) on a tensor of the given dims, and why when
// it was chosen automatically (nn.ChooseEmbeddingOptimizer). c.Layers nil
// means the default layers.
func (c *Config) EmbeddingOptimizerFor(kind string, dims []int) (name, why string) {
	rows := 0
	for _, d := range dims {
		rows += d
	}
	if kind == nn.KindCoSTCo {
		return nn.ChooseEmbeddingOptimizer(c.embeddingOptimizerSetting(), rows, c.Rank, nn.CoSTCoLayers(len(dims), c.Rank, c.Channels), c.CoSTCoBatch)
	}
	layers := c.Layers
	if layers == nil {
		layers = nn.DefaultLayers(len(dims))
	}
	return nn.ChooseEmbeddingOptimizer(c.embeddingOptimizerSetting(), rows, layers[0]/len(dims), nn.MLPLayers(layers), c.Batch)
}

// EmbeddingOptimizers returns the embedding optimiser of each model kind
// the configuration trains (mlp always; costco when it is Θ or the
// predictor), and says each automatic choice through logf.
func (c *Config) EmbeddingOptimizers(dims []int, logf func(string, ...any)) map[string]string {
	kinds := []string{nn.KindMLP}
	if c.Model == nn.KindCoSTCo || c.Predictor == nn.KindCoSTCo {
		kinds = append(kinds, nn.KindCoSTCo)
	}
	out := map[string]string{}
	for _, k := range kinds {
		name, why := c.EmbeddingOptimizerFor(k, dims)
		out[k] = name
		if why != "" && logf != nil {
			logf("dainx: embedding optimizer of %s: %s, %s", k, name, why)
		}
	}
	return out
}

func history(r nn.Result) []EpochLog {
	out := make([]EpochLog, len(r.Epochs))
	for i, e := range r.Epochs {
		out[i] = EpochLog{Epoch: e.N, TrainMSE: e.TrainMSE, ValMSE: e.ValMSE, Seconds: e.Seconds}
	}
	return out
}

// EpochInfo is one finished training epoch, as Config.OnEpoch receives it.
type EpochInfo struct {
	// Stage is the report's stage the epoch belongs to: "train" (Θ),
	// "predict" (Θc, the CoSTCo value predictor) or "retrain" (Θ′).
	Stage string
	// Model is the model's label in the progress lines: Θ, Θc or Θ'.
	Model string
	// Epochs is the number of epochs asked for (training may stop early).
	Epochs int
	// Elapsed is the wall time since the run began, in seconds.
	Elapsed float64
	// Line is the progress line Progress would have had (no newline).
	Line string
	nn.Epoch
}

// stageOf maps a progress label to the report's stage.
func stageOf(model string) string {
	switch model {
	case "Θ":
		return "train"
	case "Θc":
		return "predict"
	}
	return "retrain"
}

// logEpoch writes the epoch's progress line to c.Progress and hands it to
// c.OnEpoch.
func logEpoch(c *Config, model string, e nn.Epoch, epochs int, elapsed time.Duration) {
	if c.Progress == nil && c.OnEpoch == nil {
		return
	}
	mark := ""
	if e.Best {
		mark = " *"
	}
	line := fmt.Sprintf("%-3s epoch %3d/%d  train MSE %.6f  val MSE %.6f%s  (%.1fs, elapsed %s)",
		model, e.N, epochs, e.TrainMSE, e.ValMSE, mark, e.Seconds, elapsed.Round(time.Second))
	if c.OnEpoch != nil {
		c.OnEpoch(EpochInfo{Stage: stageOf(model), Model: model, Epochs: epochs, Elapsed: elapsed.Seconds(), Line: line, Epoch: e})
		return
	}
	fmt.Fprintln(c.Progress, line)
}

// splitPrint is a fingerprint of a split: over every cell c (its number in
// the file) of part p (0 train, 1 validation, 2 test), three sums of 24-bit
// pieces of a 64-bit hash of 4c+p. Sums do not depend on the order in
// which cells are added, so processes add their own cells and sum the
// lanes; 24-bit pieces keep the sums exact past 10¹⁰ cells.
type splitPrint [3]int64

// add adds the cells lo, lo+1, … whose parts part holds.
func (s *splitPrint) add(part []uint8, lo int) {
	for i, p := range part {
		h := uint64(lo+i)*4 + uint64(p)
		h ^= h >> 30
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 27
		h *= 0x94d049bb133111eb
		h ^= h >> 31
		s[0] += int64(h & 0xffffff)
		s[1] += int64(h >> 24 & 0xffffff)
		s[2] += int64(h >> 48)
	}
}

func (s splitPrint) String() string { return fmt.Sprintf("%x.%x.%x", s[0], s[1], s[2]) }
