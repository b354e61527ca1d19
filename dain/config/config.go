// Package config is the configuration of a dainx run (package dain's
// Config): every setting, its default (DefaultConfig), its checks
// (Config.Validate), the table that names each setting once for the
// flags, the checkpoint, the provenance and the report (Settings,
// settings.go), the accepted values of each variant's setting and the
// named methods of dainx eval (choices.go: the registry, by name; package
// dain builds each one's stages), and what a setting resolves to (auto
// and "" made the effective values: the final model and bayes-fm in
// final.go, the influence estimators and value sources in influence.go,
// how a run over processes shards its tables in sharding.go). It computes
// nothing of a run; it imports nothing of package dain.
package config

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/dainx/dainx/bayes"
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
	// BayesClamp is where bayes-fm's predictions meet the training
	// values' range: bayes.ClampSamples (each sample's prediction is
	// clamped before the average, libFM's rule), bayes.ClampMean (the
	// average is clamped) or bayes.ClampAuto (both averages from the one
	// chain, the one of lower validation MSE kept: no more sweeps). ""
	// means bayes.ClampAuto.
	BayesClamp bayes.ClampRule
	// BayesStop > 0 ends each bayes-fm chain early once the validation
	// RMSE of its running average has improved by less than
	// DefaultBayesStopTol (relative) over the last BayesStop sweeps
	// (bayes.Config.StopWindow); 0 runs every sweep.
	BayesStop int
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
	// Ensemble, when not nil, is called with a stacked ensemble Θ′ (role
	// "theta-prime": -final-model ensemble) once its members are fitted
	// and stacked: its members' kinds (bayes-fm last), its weights (the
	// intercept, then one per member) and its clamp range [lo, hi].
	// Before it, each member went to Model (a net) or Bayes (the bayes-fm)
	// with role "theta-prime." + its kind, and the run's rmse_after is the
	// stack of what those saved members predict. Keep.Model set and
	// Ensemble or Bayes nil refuses an ensemble final model.
	Ensemble func(role string, kinds []string, weights []float64, lo, hi float64) error
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
		FinalModel: FinalMLP, FMRank: DefaultFMRank, BayesRank: DefaultBayesRank, BayesSamples: DefaultBayesSamples, BayesPriors: BayesPriorsAuto, BayesClamp: bayes.ClampAuto,
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

// SplitUsed returns c.Split with "" resolved (the table's Unset, keyed).
func (c Config) SplitUsed() SplitKind { return Resolved[SplitKind](c, "Split") }

// Order returns the TrainConfig.Order of n training cells for the model
// whose shuffle stream is stream: a keyed order under SplitKeyed, nil (the
// shuffle) under SplitLegacy.
func (c Config) Order(stream uint64, n int) func(int) nn.EpochOrder {
	if c.SplitUsed() != SplitKeyed {
		return nil
	}
	return nn.KeyedOrder(n, c.Seed, 0x5eed0000+stream)
}

// SplitParts returns the part (tensor.PartTrain, PartVal or PartTest) of
// each cell of [lo, hi) of a tensor of nnz cells under c's split, one byte
// per cell. Under SplitLegacy it draws the split of all nnz cells
// (tensor.Split) and marks those in [lo, hi); under SplitKeyed it looks at
// [lo, hi) alone. before is the number of training cells before lo under
// SplitLegacy (-1 under SplitKeyed, where the caller sums the ranges
// before its own); counts are the parts' sizes over all nnz cells.
func (c Config) SplitParts(nnz, lo, hi int) (part []uint8, before int, counts [3]int) {
	part = make([]uint8, hi-lo)
	if c.SplitUsed() == SplitKeyed {
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
	if _, err := Lookup("sign", string(c.SignUsed()), Signs); err != nil {
		return err
	}
	if err := c.checkFinal(); err != nil {
		return err
	}
	if _, err := Lookup("method", string(c.Method), Methods); err != nil {
		return err
	}
	if _, err := Lookup("model", c.Model, Models); err != nil {
		return err
	}
	if _, err := Lookup("predictor", c.Predictor, Predictors); err != nil {
		return err
	}
	if _, err := Lookup("influence", string(c.Influence), Influences); err != nil {
		return err
	}
	if _, err := Lookup("influence layers", string(c.InfluenceLayers), InfluenceLayers); err != nil {
		return err
	}
	if err := c.checkInfluence(); err != nil {
		return err
	}
	if err := c.checkValueSource(); err != nil {
		return err
	}
	_, err := Lookup("entity importance", string(c.Entity), Entities)
	return err
}

// EmbeddingOptimizerSetting is EmbeddingOptimizer with "" read as auto.
func (c *Config) EmbeddingOptimizerSetting() string {
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
		return nn.ChooseEmbeddingOptimizer(c.EmbeddingOptimizerSetting(), rows, c.Rank, nn.CoSTCoLayers(len(dims), c.Rank, c.Channels), c.CoSTCoBatch)
	}
	layers := c.Layers
	if layers == nil {
		layers = nn.DefaultLayers(len(dims))
	}
	return nn.ChooseEmbeddingOptimizer(c.EmbeddingOptimizerSetting(), rows, layers[0]/len(dims), nn.MLPLayers(layers), c.Batch)
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

// LogEpoch writes the epoch's progress line to c.Progress and hands it to
// c.OnEpoch.
func LogEpoch(c *Config, model string, e nn.Epoch, epochs int, elapsed time.Duration) {
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

// FromSteps14 returns what k asks for that only steps 1–4 compute, which
// a checkpoint does not keep (the cell scores, the entity importance, the
// models Θ and Θ_p), and the flags of dainx augment that ask for each.
func (k Keep) FromSteps14() (what, flags []string) {
	if k.Scores {
		what, flags = append(what, "the cell scores"), append(flags, "-scores-out")
	}
	if k.Importance {
		what, flags = append(what, "the entity importance"), append(flags, "-importance-out")
	}
	if k.Model != nil && k.AllModels {
		what, flags = append(what, "the models Θ and Θ_p"), append(flags, "-model-out-all")
	}
	return what, flags
}

// Steps14Flags returns the flags of dainx augment (-scores-out,
// -importance-out, -model-out-all) by which k asks for what only steps 1–4
// compute: a run resumed after them cannot give it.
func (k Keep) Steps14Flags() []string {
	_, flags := k.FromSteps14()
	return flags
}
