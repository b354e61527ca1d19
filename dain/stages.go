package dain

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/floats"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tracin"
)

// This file is the one place that lists DAIN's ablated steps, their
// variants and the named methods built from them. Config.Validate, the
// command line's help and `dainx eval`'s method list are generated from it.
// docs/design.md ("Adding an ablation") shows how to extend it.

// Choice is one accepted value of a Config field that picks the variant of
// a step, with its help text and the stage it builds. B is the builder's
// type; the first Choice of each list is the paper's.
type Choice[B any] struct {
	Name  string
	Doc   string
	Build B
}

// MethodName is Config.Method: how new cells are made, a name of Methods
// (-method's variants set it with the settings they stand for). It is
// recorded (report, checkpoint, provenance) as its string.
type MethodName string

// Methods are the accepted Config.Method values: how new cells are made
// (step 4). A nil Values means the cells keep training values.
var Methods = []Choice[func(Config) Pipeline]{
	{"dain", "entities drawn from the entity importance, Algorithm 1", func(c Config) Pipeline {
		return Pipeline{Cells: ImportanceCells{Entity: c.entity()}, Values: &Predictor{Model: Embedding{c.Predictor}}}
	}},
	{"duplication", "copies of random training cells", func(c Config) Pipeline {
		return Pipeline{Cells: Duplicate{}}
	}},
	{"entity-replacement", "a training cell with one index swapped for one of its 10 nearest entities in Θ's embedding space", func(c Config) Pipeline {
		return Pipeline{Cells: ReplaceEntity{Model: Embedding{c.Model}}}
	}},
	{"random", "uniform cells; -predictor gives Random+MLP or Random+CoSTCo", func(c Config) Pipeline {
		return Pipeline{Cells: UniformCells{}, Values: &Predictor{Model: Embedding{c.Predictor}}}
	}},
	{"degree", "entities drawn by their number of training cells (FrequencyEntity: no influence), values from -predictor", func(c Config) Pipeline {
		return Pipeline{Cells: ImportanceCells{Entity: c.withTemperature(FrequencyEntity{})}, Values: &Predictor{Model: Embedding{c.Predictor}}}
	}},
	{"no-aug-steps", "no new cells; the retraining on train alone gets the optimiser steps of train plus N_aug cells (training-length control)", func(c Config) Pipeline {
		return Pipeline{Cells: NoCells{}, MatchSteps: true}
	}},
	{"near-cells", "an important training cell (drawn by its cell importance) with one index redrawn from that mode's entity importance (NearCells), values from -predictor", func(c Config) Pipeline {
		return Pipeline{Cells: NearCells{Entity: c.entity()}, Values: &Predictor{Model: Embedding{c.Predictor}}}
	}},
	{"dain-average", "dain's cells valued by the mean of CoSTCo's and the MLP Θ's predictions (AverageValues)", func(c Config) Pipeline {
		return Pipeline{Cells: AverageValues{Cells: ImportanceCells{Entity: c.entity()}, A: Embedding{nn.KindCoSTCo}, B: Embedding{nn.KindMLP}}}
	}},
	{"random-average", "uniform cells valued by the mean of CoSTCo's and the MLP Θ's predictions (AverageValues)", func(c Config) Pipeline {
		return Pipeline{Cells: AverageValues{Cells: UniformCells{}, A: Embedding{nn.KindCoSTCo}, B: Embedding{nn.KindMLP}}}
	}},
	{"dain-agree", "2·N_aug of dain's cells, keeping the N_aug on which CoSTCo and the MLP Θ agree best, valued by CoSTCo (AgreeCells)", func(c Config) Pipeline {
		return Pipeline{Cells: AgreeCells{Cells: ImportanceCells{Entity: c.entity()}, A: Embedding{nn.KindCoSTCo}, B: Embedding{nn.KindMLP}}}
	}},
}

// Models are the accepted Config.Model and Config.Predictor values: the
// kinds of embedding model (step 1, and the value predictor of step 4).
var Models = []Choice[struct{}]{
	{nn.KindMLP, "the MLP of eq. 4", struct{}{}},
	{nn.KindCoSTCo, "CoSTCo, Liu et al., KDD 2019", struct{}{}},
	{nn.KindFM, "a factorization machine of order 2 over the modes (global and per-entity biases, pairwise factor interactions; Rendle, ICDM 2010), trained by Adam (-fm-rank, -l2)", struct{}{}},
	{nn.KindHybrid, "the MLP plus the factorization machine's biases and pairwise term over the same embeddings, summed before the output (NeuMF-style; -layers, -l2)", struct{}{}},
}

// Predictors are the accepted Config.Predictor values: the value
// predictors of step 4, every kind of embedding model (Models) and the
// Bayesian factorization machine of package bayes (fitted on the training
// cells by Gibbs sampling; predictions averaged over thinned samples).
var Predictors = append(slices.Clone(Models),
	Choice[struct{}]{FinalBayesFM, "a Bayesian factorization machine fitted by Gibbs sampling on the training cells (package bayes; -bayes-rank, -bayes-samples)", struct{}{}},
	Choice[struct{}]{PredictorEnsemble, "the candidates of -final-model auto (Θ's kind, fm, hybrid, bayes-fm) trained on the training cells, stacked with weights fitted on the validation cells by least squares", struct{}{}},
	Choice[struct{}]{"auto", "ensemble with -final-model auto; the final model itself when it is bayes-fm or fm; else costco", struct{}{}})

// InfluenceKind is Config.Influence: the cell-importance estimator, a
// name of Influences. It is recorded (report, checkpoint, provenance) as
// its string.
type InfluenceKind string

// Influences are the accepted Config.Influence values: the cell-importance
// estimator (step 2).
var Influences = []Choice[func(Config) CellImportance]{
	{"tracin", "TracIn-CP, eq. 5", func(c Config) CellImportance {
		return TracIn{Model: Embedding{c.Model}, Layers: string(c.InfluenceLayers)}
	}},
	{"representer", "representer points", func(c Config) CellImportance {
		return Representer{Model: Embedding{c.Model}}
	}},
	{"tracin-adam", "TracIn-CP with each checkpoint's Adam preconditioner: Σ_k η·G_kᵀ·diag(1/(√v̂_k+ε))·∇ℓ(Θ_k, z), over -influence-layers", func(c Config) CellImportance {
		return TracIn{Model: Embedding{c.Model}, Layers: string(c.InfluenceLayers), Estimator: EstimatorAdam}
	}},
	{InfluenceUncertainty, "the bayes-fm chain's posterior variance of its prediction at each training cell (over its kept samples, fitted on the training cells alone; -bayes-rank, -bayes-samples): new cells go where the Bayesian model is least sure", func(c Config) CellImportance {
		return Uncertainty{Model: Embedding{c.Model}}
	}},
	{InfluenceUncertaintyTracIn, "TracIn-CP's |α_z| (eq. 5) times the bayes-fm posterior variance at the cell (uncertainty × influence)", func(c Config) CellImportance {
		return Uncertainty{Model: Embedding{c.Model}, Influence: TracIn{Model: Embedding{c.Model}, Layers: string(c.InfluenceLayers)}}
	}},
	{"in-run", "Adam-preconditioned terms taken during Θ's training, at every -influence-every'th step, for the step's batch at its own parameters, against a fixed sample of -influence-val-sample validation cells, over -influence-layers", func(c Config) CellImportance {
		return TracIn{Model: Embedding{c.Model}, Layers: string(c.InfluenceLayers), Estimator: EstimatorInRun, Every: c.influenceEvery(), ValSample: c.influenceValSample()}
	}},
}

// LayerSet is Config.InfluenceLayers: the parameters TracIn
// differentiates, a name of InfluenceLayers. It is recorded (report,
// checkpoint, provenance) as its string.
type LayerSet string

// InfluenceLayers are the accepted Config.InfluenceLayers values: the
// parameters TracIn differentiates.
var InfluenceLayers = []Choice[struct{}]{
	{"last", "the output layer", struct{}{}},
	{"all", "every layer and the embeddings", struct{}{}},
}

// EntityKind is Config.Entity: the entity-importance aggregator, a name
// of Entities. It is recorded (report, checkpoint, provenance) as its
// string.
type EntityKind string

// Entities are the accepted Config.Entity values: the entity-importance
// aggregator (step 3).
var Entities = []Choice[func(Config, CellImportance) EntityImportance]{
	{"sum", "aggregation, eq. 6", func(c Config, s CellImportance) EntityImportance {
		return SumEntity{Cells: s}
	}},
	{"cp1", "rank-1 CP of the cell importance, eq. 7", func(c Config, s CellImportance) EntityImportance {
		return CP1Entity{Cells: s, Lambda: c.CPLambda, Sweeps: c.CPSweeps}
	}},
	{"max", "the largest cell importance of each entity", func(c Config, s CellImportance) EntityImportance {
		return MaxEntity{Cells: s}
	}},
	{"mean", "the mean cell importance of each entity's training cells (frequency-neutral)", func(c Config, s CellImportance) EntityImportance {
		return MeanEntity{Cells: s}
	}},
}

// SignKind is Config.Sign: how a signed cell score becomes an
// importance, a name of Signs ("" means the first, abs). It is recorded
// (checkpoint, provenance) as its string.
type SignKind string

// Signs are the accepted Config.Sign values: how a signed cell score
// becomes an importance.
var Signs = []Choice[func(CellImportance) CellImportance]{
	{"abs", "|α_z|, eq. 5", func(s CellImportance) CellImportance { return s }},
	{"positive", "only cells whose score says they lower the validation loss, max(α_z, 0)", func(s CellImportance) CellImportance {
		return Signed{Cells: s}
	}},
}

// Variant is a named method of `dainx eval`: DAIN, one of the paper's
// baselines (§5.1.2) or an ablation (§5.4), as a change to the paper's
// configuration.
type Variant struct {
	Name string
	Role string // "method", "baseline" or "ablation"
	Doc  string
	Set  func(*Config)
}

// Variants are the methods `dainx eval` accepts, in the order its help
// lists them.
var Variants = []Variant{
	{"dain", "method", "MLP embeddings, TracIn on the last layer, aggregation, CoSTCo values", func(c *Config) {}},
	{"duplication", "baseline", "copies of training cells", func(c *Config) { c.Method = "duplication" }},
	{"entity-replacement", "baseline", "one index of a training cell replaced by a near entity", func(c *Config) { c.Method = "entity-replacement" }},
	{"random-mlp", "baseline", "uniform cells valued by Θ", func(c *Config) { c.Method, c.Predictor = "random", nn.KindMLP }},
	{"random-costco", "baseline", "uniform cells valued by CoSTCo", func(c *Config) { c.Method, c.Predictor = "random", nn.KindCoSTCo }},
	{"dain-mlp-predictor", "ablation", "values from Θ instead of CoSTCo", func(c *Config) { c.Predictor = nn.KindMLP }},
	{"dain-costco-embedding", "ablation", "CoSTCo as the embedding model Θ", func(c *Config) { c.Model = nn.KindCoSTCo }},
	{"dain-representer", "ablation", "representer points instead of TracIn", func(c *Config) { c.Influence = "representer" }},
	{"dain-all-layers", "ablation", "TracIn over every layer", func(c *Config) { c.InfluenceLayers = "all" }},
	{"dain-cp1", "ablation", "rank-1 CP entity importance", func(c *Config) { c.Entity = "cp1" }},
	{"dain-max-entity", "ablation", "entity importance by the max instead of the sum", func(c *Config) { c.Entity = "max" }},
	{"degree", "baseline", "entities drawn by their training-cell count (no influence), CoSTCo values", func(c *Config) { c.Method = "degree" }},
	{"no-aug-steps", "control", "no new cells, train alone for the optimiser steps of train ∪ N_aug", func(c *Config) { c.Method = "no-aug-steps" }},
	{"dain-mean-entity", "ablation", "entity importance by the mean instead of the sum (frequency-neutral)", func(c *Config) { c.Entity = "mean" }},
	{"dain-signed", "ablation", "only cells whose TracIn score lowers the validation loss, max(S_z, 0)", func(c *Config) { c.Sign = "positive" }},
	{"dain-tau0.5", "ablation", "temperature τ = 0.5 on entity importance (α^τ, flatter)", func(c *Config) { c.Temperature = 0.5 }},
	{"dain-tau2", "ablation", "temperature τ = 2 on entity importance (α^τ, sharper)", func(c *Config) { c.Temperature = 2 }},
	{"dain-mix0.5", "ablation", "entity importance mixed half and half with uniform", func(c *Config) { c.Mix = 0.5 }},
	{"dain-near-cells", "ablation", "one index of an important training cell redrawn from that mode's importance", func(c *Config) { c.Method = "near-cells" }},
	{"dain-avg-predictor", "ablation", "values the mean of CoSTCo's and Θ's predictions", func(c *Config) { c.Method = "dain-average" }},
	{"dain-agree", "ablation", "of 2·N_aug dain cells, the N_aug on which CoSTCo and Θ agree best", func(c *Config) { c.Method = "dain-agree" }},
	{"dain-mix-avg", "ablation", "dain-mix0.5's cells valued as dain-avg-predictor's", func(c *Config) { c.Method, c.Mix = "dain-average", 0.5 }},
	{"random-avg-predictor", "ablation", "uniform cells valued by the mean of CoSTCo's and Θ's predictions", func(c *Config) { c.Method = "random-average" }},
	{"dain-tracin-adam", "ablation", "TracIn-CP with each checkpoint's Adam preconditioner instead of plain TracIn (-influence tracin-adam)", func(c *Config) { c.Influence = "tracin-adam" }},
	{"dain-in-run", "ablation", "in-run influence: Adam-preconditioned terms during Θ's training against a validation sample (-influence in-run)", func(c *Config) { c.Influence = "in-run" }},
	{"dain-tracin-adam-signed", "ablation", "dain-tracin-adam with -sign positive", func(c *Config) { c.Influence, c.Sign = "tracin-adam", "positive" }},
	{"dain-in-run-signed", "ablation", "dain-in-run with -sign positive", func(c *Config) { c.Influence, c.Sign = "in-run", "positive" }},
}

// VariantNamed returns the variant called name.
func VariantNamed(name string) (Variant, bool) {
	for _, v := range Variants {
		if v.Name == name {
			return v, true
		}
	}
	return Variant{}, false
}

// Names returns the names of choices, in order.
func Names[B any](choices []Choice[B]) []string {
	out := make([]string, len(choices))
	for i, c := range choices {
		out[i] = c.Name
	}
	return out
}

// Help returns "a (doc), b (doc) or c (doc)" for a flag's help; the first
// choice is marked as the paper's.
func Help[B any](choices []Choice[B]) string {
	parts := make([]string, len(choices))
	for i, c := range choices {
		doc := c.Doc
		if i == 0 {
			doc += ", the paper's"
		}
		parts[i] = fmt.Sprintf("%s (%s)", c.Name, doc)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

func lookup[B any](field, name string, choices []Choice[B]) (B, error) {
	for _, c := range choices {
		if c.Name == name {
			return c.Build, nil
		}
	}
	var zero B
	return zero, fmt.Errorf("%s %q: want one of %s", field, name, strings.Join(Names(choices), ", "))
}

// Pipeline is a method as a composition of stages: the cells it makes
// (step 4, with steps 1–3 behind it) and the predictor of their values.
type Pipeline struct {
	Cells  CellMaker
	Values *Predictor // nil when Cells keeps the training cells' values
	// MatchSteps: the retraining on train alone runs the optimiser steps of
	// train ∪ N_aug cells (Experiment.Retrain).
	MatchSteps bool
}

// Pipeline returns the composition of stages c names. It panics if c does
// not pass Validate.
func (c Config) Pipeline() Pipeline {
	build, err := lookup("method", string(c.Method), Methods)
	if err != nil {
		panic("dain: " + err.Error())
	}
	return build(c)
}

func (c Config) entity() EntityImportance {
	inf, err := lookup("influence", string(c.Influence), Influences)
	if err != nil {
		panic("dain: " + err.Error())
	}
	ent, err := lookup("entity importance", string(c.Entity), Entities)
	if err != nil {
		panic("dain: " + err.Error())
	}
	sign, err := lookup("sign", string(c.sign()), Signs)
	if err != nil {
		panic("dain: " + err.Error())
	}
	return c.withTemperature(ent(c, sign(inf(c))))
}

// A stage is one step of Algorithm 1 in one variant. Stages are comparable
// values holding their own settings, and a stage's value is its cache
// identity: within an Experiment, equal stages are computed once and their
// result, buffers and wall time kept. deps lists the stages it uses.
type stage interface {
	deps() []stage
}

// walk calls f on s and every stage it depends on, each once.
func walk(s stage, seen map[stage]bool, f func(stage)) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	f(s)
	for _, d := range s.deps() {
		walk(d, seen, f)
	}
}

// Embedding is step 1: the embedding model Θ of one kind (a Models name),
// trained on the training cells with early stopping; the TracIn passes the
// experiment's methods need ride on its training.
type Embedding struct{ Kind string }

func (Embedding) deps() []stage { return nil }

// CellImportance is step 2: a score per training cell (in the order of the
// training set), computed from a trained embedding model.
type CellImportance interface {
	stage
	// scores returns the scores and the trained model they rank cells of.
	scores(ctx context.Context, e *Experiment) (compute.F32, *trained, error)
}

// TracIn is TracIn-CP cell importance (eq. 5) over Layers ("last" or
// "all") of Model, accumulated at every checkpoint of its training.
type TracIn struct {
	Model  Embedding
	Layers string
	// Estimator is EstimatorTracIn (""), EstimatorAdam or EstimatorInRun
	// (influence.go); Every and ValSample are in-run's k and validation
	// sample size (0 for the others).
	Estimator        string
	Every, ValSample int
}

func (s TracIn) deps() []stage { return []stage{s.Model} }

func (s TracIn) scores(ctx context.Context, e *Experiment) (compute.F32, *trained, error) {
	if _, trainedAlready := e.models[s.Model]; !trainedAlready && !slices.Contains(e.plan[s.Model], s) {
		e.plan[s.Model] = append(e.plan[s.Model], s) // ride on Θ's first training
	}
	t, err := e.model(ctx, s.Model)
	if err != nil {
		return nil, nil, err
	}
	if d := e.cellScores[s]; d != nil {
		return d.val, t, nil
	}
	// Not planned when the experiment began: train Θ again (the same
	// seeds give the same model) with this accumulator.
	t, _, err = s.Model.train(ctx, e, []TracIn{s})
	if err != nil {
		return nil, nil, err
	}
	e.retrained = append(e.retrained, t)
	return e.cellScores[s].val, t, nil
}

// Representer is representer-point cell importance (the paper's §5.4
// ablation) of the trained Model.
type Representer struct{ Model Embedding }

func (s Representer) deps() []stage { return []stage{s.Model} }

func (s Representer) scores(ctx context.Context, e *Experiment) (compute.F32, *trained, error) {
	t, err := e.model(ctx, s.Model)
	if err != nil {
		return nil, nil, err
	}
	v, err := e.cellScores.get(s, func() (compute.F32, float64, error) {
		t0 := time.Now()
		v, err := tracin.RepresenterSummed(t.net, t.train, t.val, e.summerF32())
		if err != nil {
			return nil, 0, fmt.Errorf("dain: %w", err)
		}
		e.owned = append(e.owned, v)
		return v, time.Since(t0).Seconds(), nil
	})
	return v, t, err
}

// EntityImportance is step 3: per-mode entity weights from cell importance.
type EntityImportance interface {
	stage
	cells() CellImportance
	// aggregate returns one weight per entity of every mode from the cell
	// scores s of t's training cells.
	aggregate(e *Experiment, s compute.F32, t *trained) ([][]float64, error)
}

// SumEntity is eq. 6: the sum of |α_z| over the training cells of each
// entity, normalised per mode.
type SumEntity struct{ Cells CellImportance }

func (s SumEntity) deps() []stage         { return []stage{s.Cells} }
func (s SumEntity) cells() CellImportance { return s.Cells }
func (s SumEntity) aggregate(e *Experiment, v compute.F32, t *trained) ([][]float64, error) {
	return tracin.EntityImportanceSummed(e.be, v, t.train.Rows, e.x.Dims, e.summerF64())
}

// CP1Entity is eq. 7: the factors of a rank-1 CP decomposition of the cell
// importance tensor, with ridge Lambda and Sweeps ALS sweeps.
type CP1Entity struct {
	Cells  CellImportance
	Lambda float64
	Sweeps int
}

func (s CP1Entity) deps() []stage         { return []stage{s.Cells} }
func (s CP1Entity) cells() CellImportance { return s.Cells }
func (s CP1Entity) aggregate(e *Experiment, v compute.F32, t *trained) ([][]float64, error) {
	return tracin.EntityImportanceCP1Summed(e.be, v, t.train.Rows, e.x.Dims, s.Lambda, s.Sweeps, e.summerF64())
}

// MaxEntity is entity importance by the largest |α_z| over the training
// cells of each entity instead of their sum (eq. 6), normalised per mode.
type MaxEntity struct{ Cells CellImportance }

func (s MaxEntity) deps() []stage         { return []stage{s.Cells} }
func (s MaxEntity) cells() CellImportance { return s.Cells }
func (s MaxEntity) aggregate(e *Experiment, v compute.F32, t *trained) ([][]float64, error) {
	alpha := make([]float32, v.Len())
	if err := e.be.Download(alpha, v); err != nil {
		return nil, err
	}
	order := e.x.Order()
	w := make([][]float64, order)
	for n := range w {
		w[n] = make([]float64, e.x.Dims[n])
		for z, a := range alpha {
			i := e.Train.Idx[z*order+n]
			w[n][i] = max(w[n][i], math.Abs(float64(a)))
		}
	}
	spread.MaxModes(e.sp.cl, w)
	for n := range w {
		sum := floats.Sum(w[n])
		if err := tracin.NoImportance(sum, n); err != nil {
			return nil, err
		}
		floats.Scale(1/sum, w[n])
	}
	return w, nil
}

// CellMaker is step 4's choice of new cells: n cells never observed nor
// repeated (duplication excepted), with values when it keeps training
// values, counting its draws in st.
type CellMaker interface {
	stage
	cells(ctx context.Context, e *Experiment, n int, st *AugStats) (*tensor.COO, error)
}

// ImportanceCells draws each index from Entity's per-mode alias tables
// (Algorithm 1, lines 6–15).
type ImportanceCells struct{ Entity EntityImportance }

func (s ImportanceCells) deps() []stage { return []stage{s.Entity} }

func (s ImportanceCells) cells(ctx context.Context, e *Experiment, n int, st *AugStats) (*tensor.COO, error) {
	tables, err := e.tables(ctx, s.Entity)
	if err != nil {
		return nil, err
	}
	return e.sample(ctx, tables, rng(e.cfg.Seed, streamSample).Uint64(), n, st)
}

// UniformCells draws every index uniformly (the Random baselines).
type UniformCells struct{}

func (UniformCells) deps() []stage { return nil }

func (UniformCells) cells(ctx context.Context, e *Experiment, n int, st *AugStats) (*tensor.COO, error) {
	var tables []*sampling.Alias
	for _, d := range e.x.Dims {
		w := make([]float64, d)
		for i := range w {
			w[i] = 1
		}
		a, err := sampling.NewAlias(w)
		if err != nil {
			return nil, fmt.Errorf("dain: %w", err)
		}
		tables = append(tables, a)
	}
	return e.sample(ctx, tables, rng(e.cfg.Seed, streamRandom).Uint64(), n, st)
}

// Duplicate copies distinct random training cells with their values,
// cycling when n exceeds |train|. Spread over processes, each process
// copies its own training cells: its number of the n draws comes from
// spread.DistinctShares (every process alike), then it draws that many from a
// permutation of its cells as one process does from all of them (process 0
// with one process's stream, so that one process of a cluster of one makes
// one process's cells). The new cells are then a uniformly random set as
// one process's are, but not the same cells; memory is O(cells/P).
type Duplicate struct{}

func (Duplicate) deps() []stage { return nil }

func (Duplicate) cells(ctx context.Context, e *Experiment, n int, st *AugStats) (*tensor.COO, error) {
	t0 := time.Now()
	cl := e.sp.cl
	shares := spread.DistinctShares(rng(e.cfg.Seed, streamDuplicateShares), n, spread.Counts(cl, e.Train.NNZ()))
	rank := cl.Rank()
	rows := make([]int, shares[rank])
	if len(rows) > 0 {
		perm := rng(e.cfg.Seed, rankStream(streamDuplicate, rank)).Perm(e.Train.NNZ())
		for i := range rows {
			rows[i] = perm[i%len(perm)]
		}
	}
	aug := e.Train.Subset(rows)
	e.augFirst = spread.Sum(shares[:rank])
	st.Sample = time.Since(t0).Seconds()
	return aug, nil
}

// ReplaceEntity is entity replacement: a random training cell whose index
// in a random mode is replaced by one of that entity's 10 nearest
// neighbours in Model's embedding table, keeping the value.
type ReplaceEntity struct{ Model Embedding }

func (s ReplaceEntity) deps() []stage { return []stage{Neighbours(s)} }

func (s ReplaceEntity) cells(ctx context.Context, e *Experiment, n int, st *AugStats) (*tensor.COO, error) {
	nbr, err := e.neighbours(ctx, Neighbours(s))
	if err != nil {
		return nil, err
	}
	return e.replace(ctx, nbr, n, st)
}

// Neighbours is the 10 nearest entities of every entity of the training
// cells in Model's embedding table (part of step 3 for entity replacement).
type Neighbours struct{ Model Embedding }

func (s Neighbours) deps() []stage { return []stage{s.Model} }

// Predictor is step 4's value predictor Θ_p: the trained Model of that
// kind (for "mlp", Θ itself).
type Predictor struct{ Model Embedding }

func (s Predictor) deps() []stage { return []stage{s.Model} }
