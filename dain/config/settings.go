package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// Setting describes one setting of Config once, for every place that
// names it: the flag that sets it (cmd/internal/cli registers the flags
// of the settings whose Bind it names, with Help), its name in a
// checkpoint's header, its key in eval's provenance (runs.json's "base")
// and in the report, what its zero value stands for, and the value runs
// had before it existed. Settings lists them; a setting added to Config
// adds its entry there, and the flag, the checkpoint, the provenance and
// the report follow from it.
type Setting struct {
	// Field is the name of the Config field.
	Field string
	// Flag is its flag of dainx augment (and the libdainx option, the
	// Python keyword), without the dash; "" when it has none.
	Flag string
	// Bind is the group of flags whose cmd/internal/cli function
	// registers Flag, with Help as its usage and the field's value as
	// its default (BindTraining, BindMethod, BindInRun, BindValues); ""
	// when the flag is registered by hand (it sets another variable, or
	// its default differs by command).
	Bind, Help string
	// Ck is its name in a checkpoint's header when that is not the flag
	// ("-" and Flag): settings checkpointed before they had a flag keep
	// their Go name there. "" means "-"+Flag, or Field without a flag.
	Ck string
	// Key is its key in eval's provenance ("" when not recorded), and
	// OmitEmpty leaves it out there when it is the zero value.
	Key       string
	OmitEmpty bool
	// Report is the key of the Report field that newReport fills with its
	// value (with Unset resolved); "" when the report records it by hand
	// or not at all.
	Report string
	// Unset is the value the field's zero value stands for ("" keyed for
	// Split): what the provenance and the report record, and what the
	// checkpoint and the provenance compare, in its stead. nil: the zero
	// value is a value of its own.
	Unset any
	// Legacy is the value every run had before the setting existed: a
	// checkpoint or provenance record that lacks the setting reads as
	// made with it. nil when every record has the setting.
	Legacy any
}

// CkName returns s's name in a checkpoint's header.
func (s Setting) CkName() string {
	switch {
	case s.Ck != "":
		return s.Ck
	case s.Flag != "":
		return "-" + s.Flag
	}
	return s.Field
}

// Type returns the type of s's Config field.
func (s Setting) Type() reflect.Type {
	f, ok := reflect.TypeFor[Config]().FieldByName(s.Field)
	if !ok {
		panic("dain: Settings names no Config field " + s.Field)
	}
	return f.Type
}

// Of returns c's field of s, settable.
func (s Setting) Of(c *Config) reflect.Value {
	v := reflect.ValueOf(c).Elem().FieldByName(s.Field)
	if !v.IsValid() {
		panic("dain: Settings names no Config field " + s.Field)
	}
	return v
}

// As returns x (Unset, Legacy) as a value of s's field's type.
func (s Setting) As(x any) reflect.Value {
	t := s.Type()
	if x == nil {
		return reflect.Zero(t)
	}
	return reflect.ValueOf(x).Convert(t)
}

// Resolved returns c's value of s with Unset in the stead of the zero
// value, as the field's type.
func (s Setting) Resolved(c Config) any {
	v := s.Of(&c)
	if s.Unset != nil && v.IsZero() {
		return s.As(s.Unset).Interface()
	}
	return v.Interface()
}

// Resolve returns x (a value of s's field's type, or nil for none) with
// Unset in the stead of the zero value.
func (s Setting) Resolve(x any) any {
	if s.Unset != nil && (x == nil || reflect.ValueOf(x).IsZero()) {
		return s.As(s.Unset).Interface()
	}
	return x
}

// LegacyValue returns Legacy as a value of s's field's type, and false
// when s has none.
func (s Setting) LegacyValue() (any, bool) {
	if s.Legacy == nil {
		return nil, false
	}
	return s.As(s.Legacy).Interface(), true
}

// SettingByKey returns the setting that eval's provenance records as key.
func SettingByKey(key string) (Setting, bool) {
	for _, s := range Settings() {
		if s.Key == key && key != "" {
			return s, true
		}
	}
	return Setting{}, false
}

// FormatSetting formats a setting's value x as a checkpoint's header
// records it: floats in their shortest round-tripping form, lists
// comma-separated.
func FormatSetting(x reflect.Value) string {
	switch x.Kind() {
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(x.Float(), 'g', -1, 64)
	case reflect.Slice:
		parts := make([]string, x.Len())
		for k := range parts {
			parts[k] = fmt.Sprint(x.Index(k).Interface())
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(x.Interface())
}

// Settings returns every setting of Config (the table settings() in
// dain.go), in the order eval's provenance records them (the settings it
// does not record last). It is a variable only so that a test can add a
// setting; programs never change it.
var Settings = sync.OnceValue(settings)

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
		// libFM's rule, each sample clamped, before -bayes-clamp.
		{Field: "BayesClamp", Flag: "bayes-clamp", Bind: "training", Key: "bayes_clamp", Unset: bayes.ClampAuto, Legacy: bayes.ClampSamples,
			Help: "with bayes-fm, where its predictions are clamped to the training values' range (the `rule`): samples (each sample's, then averaged: libFM's), mean (the average) or auto (both from the one chain, the one of lower validation RMSE kept)"},
		// Every sweep run before -bayes-stop.
		{Field: "BayesStop", Flag: "bayes-stop", Bind: "training", Key: "bayes_stop", Legacy: 0,
			Help: "with bayes-fm, end its chain early once the validation RMSE of its running average has improved by less than " + strconv.FormatFloat(DefaultBayesStopTol, 'g', -1, 64) + " (relative) over a window of `sweeps`; 0 runs every sweep (-bayes-samples)"},
		// New cells counted as observations before -aug-weight.
		{Field: "AugWeight", Flag: "aug-weight", Bind: "training", Key: "aug_weight", Legacy: AugWeight(1),
			Help: "how much a new cell counts against an observed one when the final model is fitted: a `weight` w > 0 (bayes-fm: the new cells' noise precision is w·α, α the observed cells'; mlp, fm, hybrid: each new cell's squared error counts w times in Adam's loss; 1 counts them as observations), learn (bayes-fm: their own noise precision, drawn in every Gibbs sweep) or auto (1 for mlp, fm and hybrid; " + strconv.FormatFloat(DefaultBayesAugWeight, 'g', -1, 64) + " for bayes-fm)"},
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

// SettingOfCk returns the entry of Settings named name in a checkpoint's
// header.
func SettingOfCk(name string) (Setting, bool) {
	for _, s := range Settings() {
		if s.CkName() == name {
			return s, true
		}
	}
	return Setting{}, false
}

// SettingOf returns the entry of Settings of Config's field field.
func SettingOf(field string) (Setting, bool) {
	for _, s := range Settings() {
		if s.Field == field {
			return s, true
		}
	}
	return Setting{}, false
}

// settingNamed is SettingOf, set by init: the resolvers read the table,
// whose help texts name the Choice lists (Help(Influences)); were a list's
// entries to call a resolver (as package dain's stage builders do), a
// direct call would make Settings' initialisation depend on itself.
var settingNamed func(field string) (Setting, bool)

func init() { settingNamed = SettingOf }

// Resolved returns c's value of the setting of Config field field, the
// table's Unset in the stead of the zero value (Setting.Resolved): the
// resolvers (c.SplitUsed(), c.ValuesUsed(), …) read each default from
// settings() rather than repeat it. It panics on a field the table does
// not name.
func Resolved[T any](c Config, field string) T {
	s, ok := settingNamed(field)
	if !ok {
		panic("dain: Settings names no Config field " + field)
	}
	return s.Resolved(c).(T)
}

// checkSettings reports a Graphs or Exchange value that is not one of
// theirs (a Config made in Go; the flags refuse them when parsed).
func (c *Config) checkSettings() error {
	if g := c.Graphs; g != "" && g != GraphsOn && g != GraphsOff {
		return fmt.Errorf("graphs %q: want %s or %s", g, GraphsOn, GraphsOff)
	}
	if x := c.Exchange; x != "" && x != ExchangeAuto && x != ExchangeDense && x != ExchangeSparse {
		return fmt.Errorf("exchange %q: want %s, %s or %s", x, ExchangeAuto, ExchangeDense, ExchangeSparse)
	}
	return nil
}

// Graphs is Config.Graphs: whether training replays each step as a graph
// on a backend that records them (CUDA; nn.TrainConfig.Eager is its
// opposite). Its pointer is a flag.Value (dainx -graphs), so a bad value
// is refused where it is parsed.
type Graphs string

// The values of Graphs; "" means GraphsOn.
const (
	GraphsOn  Graphs = "on"
	GraphsOff Graphs = "off"
)

// String returns g as the flag takes it.
func (g *Graphs) String() string { return string(*g) }

// Set parses on or off.
func (g *Graphs) Set(s string) error {
	switch v := Graphs(s); v {
	case GraphsOn, GraphsOff:
		*g = v
		return nil
	}
	return fmt.Errorf("want %s or %s", GraphsOn, GraphsOff)
}

// GraphsUsed returns c.Graphs with "" resolved (the table's Unset, on).
func (c *Config) GraphsUsed() Graphs { return Resolved[Graphs](*c, "Graphs") }

// Exchange is Config.Exchange: how a run spread over processes (RunOn)
// sums the gradients of an embedding table that is not sharded. Its
// pointer is a flag.Value (dainx augment -exchange).
type Exchange string

// The values of Exchange; "" means ExchangeAuto.
const (
	// ExchangeAuto chooses per model by the table's rows and the rows a
	// step touches (nn.ChooseExchange).
	ExchangeAuto Exchange = "auto"
	// ExchangeDense sums the whole table's gradient (an all-reduce).
	ExchangeDense Exchange = "dense"
	// ExchangeSparse exchanges only the rows a step touched.
	ExchangeSparse Exchange = "sparse"
)

// String returns x as the flag takes it.
func (x *Exchange) String() string { return string(*x) }

// Set parses auto, dense or sparse.
func (x *Exchange) Set(s string) error {
	switch v := Exchange(s); v {
	case ExchangeAuto, ExchangeDense, ExchangeSparse:
		*x = v
		return nil
	}
	return fmt.Errorf("want %s, %s or %s", ExchangeAuto, ExchangeDense, ExchangeSparse)
}

// ExchangeFor returns the exchange of a model's unsharded table of rows
// rows, trained in batches of batch cells of an order-N tensor:
// c.Exchange, or with auto ("" too) nn.ChooseExchange's choice.
func (c *Config) ExchangeFor(rows, batch, order int) string {
	if x := c.Exchange; x == ExchangeDense || x == ExchangeSparse {
		return string(x)
	}
	return nn.ChooseExchange(rows, batch, order)
}

// AugWeight is Config.AugWeight: how much a new cell counts against an
// observed one when the final model Θ′ is fitted (step 5). Its pointer is
// a flag.Value (dainx -aug-weight): a number w > 0, learn or auto.
//
// For the bayes-fm final model a weight w gives the new cells the noise
// precision α_new = w·α (bayes.Config.NewWeight; α the observed cells'),
// and AugWeightLearn draws α_new in every Gibbs sweep under its own
// Gamma prior (bayes.Config.NewLearn). For the Adam-trained final models
// (mlp, fm, hybrid, and an ensemble's members) a weight w multiplies each
// new cell's squared error in the batch loss (nn.TrainConfig.NewWeight:
// its gradient is w·(2/B)·(ŷ − y)); they cannot learn it, and auto gives
// them 1. 1 counts the new cells as observations, as every dainx before
// the setting did, bit for bit.
type AugWeight float64

// Special values of AugWeight.
const (
	// AugWeightAuto, the zero value (the default): 1 for the Adam-trained
	// final models, DefaultBayesAugWeight for bayes-fm.
	AugWeightAuto AugWeight = 0
	// AugWeightLearn draws bayes-fm's α_new (bayes-fm only; 1 for an
	// Adam-trained member of an ensemble or candidate of auto).
	AugWeightLearn AugWeight = -1
)

// DefaultBayesAugWeight is what AugWeightAuto gives the bayes-fm final
// model: a new cell counts as a tenth of an observation (α_new = α/10).
// Chosen by the study in docs/augment-best-model.md: on MovieLens, new
// cells as full observations raised bayes-fm's test RMSE, learned α_new
// trusted them most (the chain fits its own new cells closely) and raised
// it most, and a weight of about a tenth lowered it.
const DefaultBayesAugWeight = 0.1

// String returns w as the flag takes it.
func (w *AugWeight) String() string {
	switch *w {
	case AugWeightAuto:
		return "auto"
	case AugWeightLearn:
		return "learn"
	}
	return strconv.FormatFloat(float64(*w), 'g', -1, 64)
}

// Set parses auto, learn or a weight in (0, bayes.MaxNewWeight].
func (w *AugWeight) Set(s string) error {
	switch s {
	case "auto":
		*w = AugWeightAuto
		return nil
	case "learn":
		*w = AugWeightLearn
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0 && v <= bayes.MaxNewWeight) {
		return fmt.Errorf("want auto, learn or a weight in (0, %g]", float64(bayes.MaxNewWeight))
	}
	*w = AugWeight(v)
	return nil
}

// MarshalText writes w as the flag takes it (auto, learn or the weight),
// As JSON records it.
func (w AugWeight) MarshalText() ([]byte, error) { return []byte(w.String()), nil }

// UnmarshalText parses what MarshalText writes (Set).
func (w *AugWeight) UnmarshalText(b []byte) error { return w.Set(string(b)) }

// check reports a weight that is none of the accepted values (a Config
// built in code rather than by Set).
func (w AugWeight) check() error {
	if w == AugWeightAuto || w == AugWeightLearn || (w > 0 && w <= bayes.MaxNewWeight) {
		return nil
	}
	return fmt.Errorf("aug weight %v: want auto, learn or a weight in (0, %g]", float64(w), float64(bayes.MaxNewWeight))
}
