package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dainx/dainx/nn"
)

// Choice is one accepted value of a Config field that picks the variant of
// a step, with its help text and, in package dain's lists, the stage it
// builds: B is the builder's type (struct{} in this package's lists, which
// name the values). The first Choice of each list is the paper's.
type Choice[B any] struct {
	Name  string
	Doc   string
	Build B
}

// MethodName is Config.Method: how new cells are made, a name of Methods
// (-method's variants set it with the settings they stand for). It is
// recorded (report, checkpoint, provenance) as its string.
type MethodName string

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

// SignKind is Config.Sign: how a signed cell score becomes an
// importance, a name of Signs ("" means the first, abs). It is recorded
// (checkpoint, provenance) as its string.
type SignKind string

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

// Methods are the accepted Config.Method values: how new cells are made
// (step 4); package dain's Methods builds each one's stages.
var Methods = []Choice[struct{}]{
	{"dain", "entities drawn from the entity importance, Algorithm 1", struct{}{}},
	{"duplication", "copies of random training cells", struct{}{}},
	{"entity-replacement", "a training cell with one index swapped for one of its 10 nearest entities in Θ's embedding space", struct{}{}},
	{"random", "uniform cells; -predictor gives Random+MLP or Random+CoSTCo", struct{}{}},
	{"degree", "entities drawn by their number of training cells (FrequencyEntity: no influence), values from -predictor", struct{}{}},
	{"no-aug-steps", "no new cells; the retraining on train alone gets the optimiser steps of train plus N_aug cells (training-length control)", struct{}{}},
	{"near-cells", "an important training cell (drawn by its cell importance) with one index redrawn from that mode's entity importance (NearCells), values from -predictor", struct{}{}},
	{"dain-average", "dain's cells valued by the mean of CoSTCo's and the MLP Θ's predictions (AverageValues)", struct{}{}},
	{"random-average", "uniform cells valued by the mean of CoSTCo's and the MLP Θ's predictions (AverageValues)", struct{}{}},
	{"dain-agree", "2·N_aug of dain's cells, keeping the N_aug on which CoSTCo and the MLP Θ agree best, valued by CoSTCo (AgreeCells)", struct{}{}},
}

// Influences are the accepted Config.Influence values: the cell-importance
// estimator (step 2); package dain's Influences builds each one's stage.
var Influences = []Choice[struct{}]{
	{"tracin", "TracIn-CP, eq. 5", struct{}{}},
	{"representer", "representer points", struct{}{}},
	{"tracin-adam", "TracIn-CP with each checkpoint's Adam preconditioner: Σ_k η·G_kᵀ·diag(1/(√v̂_k+ε))·∇ℓ(Θ_k, z), over -influence-layers", struct{}{}},
	{InfluenceUncertainty, "the bayes-fm chain's posterior variance of its prediction at each training cell (over its kept samples, fitted on the training cells alone; -bayes-rank, -bayes-samples): new cells go where the Bayesian model is least sure", struct{}{}},
	{InfluenceUncertaintyTracIn, "TracIn-CP's |α_z| (eq. 5) times the bayes-fm posterior variance at the cell (uncertainty × influence)", struct{}{}},
	{"in-run", "Adam-preconditioned terms taken during Θ's training, at every -influence-every'th step, for the step's batch at its own parameters, against a fixed sample of -influence-val-sample validation cells, over -influence-layers", struct{}{}},
}

// Entities are the accepted Config.Entity values: the entity-importance
// aggregator (step 3); package dain's Entities builds each one's stage.
var Entities = []Choice[struct{}]{
	{"sum", "aggregation, eq. 6", struct{}{}},
	{"cp1", "rank-1 CP of the cell importance, eq. 7", struct{}{}},
	{"max", "the largest cell importance of each entity", struct{}{}},
	{"mean", "the mean cell importance of each entity's training cells (frequency-neutral)", struct{}{}},
}

// Signs are the accepted Config.Sign values: how a signed cell score
// becomes an importance; package dain's Signs builds each one's stage.
var Signs = []Choice[struct{}]{
	{"abs", "|α_z|, eq. 5", struct{}{}},
	{"positive", "only cells whose score says they lower the validation loss, max(α_z, 0)", struct{}{}},
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

// Lookup returns the Build of the choice called name, or an error naming
// field and the accepted names ("field \"name\": want one of a, b").
func Lookup[B any](field, name string, choices []Choice[B]) (B, error) {
	for _, c := range choices {
		if c.Name == name {
			return c.Build, nil
		}
	}
	var zero B
	return zero, fmt.Errorf("%s %q: want one of %s", field, name, strings.Join(Names(choices), ", "))
}

// SignUsed returns c.Sign, the paper's (Signs' first, abs) when empty. The
// table gives Sign no Unset: eval's provenance and the checkpoint record
// an empty Sign as it is.
func (c Config) SignUsed() SignKind {
	if c.Sign == "" {
		return SignKind(Signs[0].Name)
	}
	return c.Sign
}
