package config

import (
	"fmt"
	"math"
	"slices"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/dain/streams"
	"github.com/dainx/dainx/nn"
)

// FinalModels are the accepted Config.FinalModel values: the model Θ′
// trained on train ∪ augmentation (step 5) whose test RMSE a run reports.
// The first is the paper's.
var FinalModels = []Choice[struct{}]{
	{FinalMLP, "the MLP of eq. 4, trained as Θ is (the paper's)", struct{}{}},
	{FinalFM, "a factorization machine of order 2 trained by Adam as Θ is (-fm-rank, -l2)", struct{}{}},
	{FinalHybrid, "the MLP plus a factorization machine's pairwise term over the same embeddings, trained by Adam (-layers, -l2)", struct{}{}},
	{FinalBayesFM, "a Bayesian factorization machine (order 2 over the modes, a prior per mode) fitted by Gibbs sampling and averaged over its samples: no learning rate or regulariser (package bayes; Rendle, ACM TIST 2012)", struct{}{}},
	{"ensemble", "the candidates of auto (Θ's kind, fm, hybrid, bayes-fm), each trained on train ∪ the new cells as that final model would be, their predictions stacked with weights fitted on the validation cells by least squares (the test cells unseen)", struct{}{}},
	{"auto", "the kind of Θ (mlp when Θ is costco), fm, hybrid or bayes-fm, whichever has the lowest validation RMSE trained on the training cells alone (chosen once per split; the report's auto_choice gives each)", struct{}{}},
}

// Final-model names.
const (
	FinalMLP      = nn.KindMLP
	FinalFM       = nn.KindFM
	FinalHybrid   = nn.KindHybrid
	FinalBayesFM  = "bayes-fm"
	FinalEnsemble = "ensemble"
	FinalAuto     = "auto"
)

// FinalModelNamed returns the FinalModels choice called name.
func FinalModelNamed(name string) (Choice[struct{}], bool) {
	for _, f := range FinalModels {
		if f.Name == name {
			return f, true
		}
	}
	return Choice[struct{}]{}, false
}

// AutoFamily is the gradient-trained candidate of -final-model auto: the
// kind of Θ, or the MLP when Θ (CoSTCo) is no final model.
func (c Config) AutoFamily() string {
	if c.Model == FinalFM || c.Model == FinalHybrid {
		return c.Model
	}
	return FinalMLP
}

// AutoPredictor is the value predictor that goes with a final model chosen
// by auto (or given with -predictor auto): the model itself for bayes-fm
// and fm, the paper's CoSTCo otherwise.
func AutoPredictor(final string) string {
	if final == FinalBayesFM || final == FinalFM {
		return final
	}
	return nn.KindCoSTCo
}

// Defaults and limits of the bayes-fm final model's settings.
const (
	DefaultBayesRank    = 32  // libFM's -dim 1,1,32 of issue 37's comparison
	DefaultBayesSamples = 200 // libFM's -iter of that comparison
	MaxBayesSamples     = 1 << 20
	DefaultFMRank       = 32   // the fm model's factors per entity, libFM's -dim 1,1,32
	MaxFMRank           = 4096 // a limit on -fm-rank (the table is Σ dims × (rank+1) floats)
)

// BayesPriorGroups is Config.BayesPriors: how bayes-fm's priors are
// grouped. BayesPriorChoices lists its accepted values; "" means
// BayesPriorsAuto (the table's Unset). It is recorded (report,
// checkpoint, provenance, a saved model's training) as its string.
type BayesPriorGroups string

// Values of Config.BayesPriors.
const (
	BayesPriorsMode   BayesPriorGroups = "mode"
	BayesPriorsShared BayesPriorGroups = "shared"
	BayesPriorsAuto   BayesPriorGroups = "auto"
)

// BayesPriorChoices are the accepted values of Config.BayesPriors.
var BayesPriorChoices = []BayesPriorGroups{BayesPriorsMode, BayesPriorsShared, BayesPriorsAuto}

// BayesPriorsUsed returns c.BayesPriors with "" read as the table's Unset
// (BayesPriorsAuto).
func (c Config) BayesPriorsUsed() BayesPriorGroups {
	return Resolved[BayesPriorGroups](c, "BayesPriors")
}

// UsesBayesFM reports whether a run of c fits the Bayesian FM, as its
// final model or its value predictor: only then do the Bayes* settings
// matter.
func (c Config) UsesBayesFM() bool {
	f := c.FinalModelName()
	return f == FinalBayesFM || f == FinalAuto || f == FinalEnsemble || c.Predictor == FinalBayesFM || c.Predictor == PredictorEnsemble || c.UsesUncertainty()
}

// UsesFM reports whether a run of c trains the gradient factorization
// machine (as Θ, value predictor or final model): only then does FMRank
// matter.
func (c Config) UsesFM() bool {
	return c.Model == FinalFM || c.Predictor == FinalFM || c.FinalModelName() == FinalFM || c.FinalModelName() == FinalAuto || c.FinalModelName() == FinalEnsemble || c.UsesEnsemble()
}

// FinalModelName is c.FinalModel with "" read as its default, mlp: what a
// report and a provenance record hold.
func (c Config) FinalModelName() string { return Resolved[string](c, "FinalModel") }

// checkFinal reports a final-model setting that cannot work.
func (c Config) checkFinal() error {
	if _, err := Lookup("final model", c.FinalModelName(), FinalModels); err != nil {
		return err
	}
	if !(c.L2 >= 0) || math.IsInf(c.L2, 0) {
		return fmt.Errorf("l2 %g: want a finite value ≥ 0", c.L2)
	}
	if c.UsesFM() && (c.FMRank < 1 || c.FMRank > MaxFMRank) {
		return fmt.Errorf("fm rank %d: want 1 to %d", c.FMRank, MaxFMRank)
	}
	if err := c.AugWeight.check(); err != nil {
		return err
	}
	if f := c.FinalModelName(); c.AugWeight == AugWeightLearn && f != FinalBayesFM && f != FinalAuto && f != FinalEnsemble {
		return fmt.Errorf("aug weight learn: the %s final model, trained by Adam, takes a weight (or auto); learn needs -final-model bayes-fm (or auto, or ensemble, whose bayes-fm takes it)", f)
	}
	if !c.UsesBayesFM() {
		return nil
	}
	b := c.BayesConfig()
	if p := c.BayesPriorsUsed(); !slices.Contains(BayesPriorChoices, p) {
		return fmt.Errorf("bayes priors %q: want %s, %s or %s", p, BayesPriorChoices[0], BayesPriorChoices[1], BayesPriorChoices[2])
	}
	if c.BayesStop < 0 || c.BayesStop > MaxBayesSamples {
		return fmt.Errorf("bayes stop %d: want 0 (every sweep) to %d sweeps", c.BayesStop, MaxBayesSamples)
	}
	if c.BayesSamples > MaxBayesSamples {
		return fmt.Errorf("bayes samples %d: above the limit %d", c.BayesSamples, MaxBayesSamples)
	}
	if err := b.Validate(); err != nil {
		return err
	}
	if f := c.FinalModelName(); c.Keep.Model != nil && f == FinalEnsemble && (c.Keep.Ensemble == nil || c.Keep.Bayes == nil) {
		return fmt.Errorf("final model %s: Keep.Model is set but Keep.Ensemble or Keep.Bayes, which save an ensemble Θ′ and its bayes-fm member, is not", f)
	}
	if f := c.FinalModelName(); c.Keep.Model != nil && c.Keep.Bayes == nil && (f == FinalBayesFM || f == FinalAuto) {
		return fmt.Errorf("final model %s: Keep.Model is set but Keep.Bayes, which saves a bayes-fm Θ′, is not", f)
	}
	if c.Keep.BayesSamples < 0 {
		return fmt.Errorf("keep %d bayes-fm samples: want ≥ 0 (0: every sample after burn-in)", c.Keep.BayesSamples)
	}
	return nil
}

// BayesConfig is the bayes.Config of the bayes-fm final model: Rank,
// Samples and BurnIn from c (0 means the default), the chain's seed drawn
// from c.Seed's own stream.
func (c Config) BayesConfig() bayes.Config {
	b := bayes.DefaultConfig()
	b.Rank, b.Samples, b.BurnIn = DefaultBayesRank, DefaultBayesSamples, 0
	if c.BayesRank != 0 {
		b.Rank = c.BayesRank
	}
	if c.BayesSamples != 0 {
		b.Samples = c.BayesSamples
	}
	b.BurnIn = c.BayesBurnIn
	b.Seed = BayesSeed(c.Seed)
	b.SharedPriors = c.BayesPriorsUsed() == BayesPriorsShared
	b.Clamp = c.BayesClampUsed()
	b.StopWindow, b.StopTol = c.BayesStop, DefaultBayesStopTol
	return b
}

// DefaultBayesStopTol is -bayes-stop's relative improvement of the
// validation RMSE over its window (bayes.Config.StopTol).
const DefaultBayesStopTol = 1e-4

// BayesClampUsed returns c.BayesClamp with "" read as the table's Unset
// (bayes.ClampAuto).
func (c Config) BayesClampUsed() bayes.ClampRule {
	return Resolved[bayes.ClampRule](c, "BayesClamp")
}

// BayesSeed is the seed of the bayes-fm final model's Gibbs chain in a run
// of seed seed (its own random stream of seed).
func BayesSeed(seed uint64) uint64 { return streams.New(seed, streams.Bayes).Uint64() }

// SetNewCells sets b, the bayes-fm final chain's configuration on train ∪
// aug, for this process's n new cells (the last n of its training cells)
// under c.AugWeight: with a weight other than 1, or learn, they get their
// own noise precision; with 1 they are observations (NewCells 0, the
// chain of every dainx before the setting).
func (c Config) SetNewCells(b *bayes.Config, n int) {
	switch w := c.AugWeight.Resolve(FinalBayesFM); w {
	case 1:
	case AugWeightLearn:
		b.NewCells, b.NewLearn = n, true
	default:
		b.NewCells, b.NewWeight = n, float64(w)
	}
}

// Resolve returns the weight w stands for with final model kind (a
// FinalModels name but auto): AugWeightAuto's default for that kind
// (DefaultBayesAugWeight for bayes-fm and the ensemble's bayes-fm, else
// 1), else w; 1 for AugWeightLearn with a kind trained by Adam, which
// cannot learn it (Config.checkFinal refuses that unless an auto final
// model may choose either).
func (w AugWeight) Resolve(kind string) AugWeight {
	if w == AugWeightLearn && kind != FinalBayesFM && kind != FinalEnsemble {
		return 1
	}
	if w != AugWeightAuto {
		return w
	}
	if kind == FinalBayesFM || kind == FinalEnsemble { // the ensemble's bayes-fm
		return DefaultBayesAugWeight
	}
	return 1
}

// Applied describes the weight w gives final model kind, as logs and
// reports say it: "weight 0.1", "learned", "auto: weight 0.1".
func (w AugWeight) Applied(kind string) string {
	r := w.Resolve(kind)
	s := "weight " + r.String()
	if r == AugWeightLearn {
		s = "learned"
	}
	if w == AugWeightAuto {
		s = "auto: " + s
	}
	return s
}

// MaxKeptBayes is the most parameter samples the bayes-fm value predictor
// keeps to predict new cells (thinned evenly over the chain): each costs
// 8·(1 + Σ dims·(rank+1)) bytes.
const MaxKeptBayes = 20

// KeptBayes is the number of parameter samples a bayes-fm chain on the
// training cells keeps to predict new cells (the value predictor, the
// ensemble's member): MaxKeptBayes, or every sample after burn-in when
// there are fewer.
func (c Config) KeptBayes() int {
	b := c.BayesConfig()
	return min(MaxKeptBayes, b.Samples-b.BurnIn)
}

// SaveSamples is the number of samples the chain of cfg keeps for
// Keep.Bayes: k.BayesSamples, or every sample after burn-in when 0 (or
// more).
func (k Keep) SaveSamples(cfg bayes.Config) int {
	all := cfg.Samples - cfg.BurnIn
	if k.BayesSamples > 0 && k.BayesSamples < all {
		return k.BayesSamples
	}
	return all
}

// SavedBayes is the number of samples a bayes-fm Θ′ keeps for Keep.Bayes
// (0 without it).
func (c Config) SavedBayes() int {
	if c.Keep.Bayes == nil {
		return 0
	}
	return c.Keep.SaveSamples(c.BayesConfig())
}

// PredictorEnsemble is the -predictor value that stacks the candidates of
// -final-model auto (final.Ensemble).
const PredictorEnsemble = "ensemble"

// AutoKinds are the gradient-trained candidates of -final-model auto and
// of the ensemble predictor, in the order of their ties: the kind of Θ
// (AutoFamily), then the fm and the hybrid when Θ is neither. bayes-fm
// comes after them.
func (c Config) AutoKinds() []string {
	kinds := []string{c.AutoFamily()}
	for _, k := range []string{FinalFM, FinalHybrid} {
		if k != kinds[0] {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// UsesEnsemble reports whether a run of c may value new cells with the
// ensemble predictor (given, or what -predictor auto resolves to).
func (c Config) UsesEnsemble() bool {
	return c.Predictor == PredictorEnsemble || c.Predictor == FinalAuto
}
