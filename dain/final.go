package dain

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
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

// Plain trains the final model of kind (a FinalModels name but auto) on
// the training cells alone, as Downstream does with no new cells, and
// returns its test RMSE, training result and wall time: the no-augmentation
// baseline of that model (dainx eval -baselines).
func (e *Experiment) Plain(ctx context.Context, kind string) (float64, nn.Result, float64, error) {
	saved := e.cfg
	defer func() { e.cfg = saved }()
	e.cfg.FinalModel = kind
	return e.Downstream(ctx, &tensor.COO{Dims: append([]int(nil), e.x.Dims...)}, "")
}

// AutoChoice records what -final-model auto (or -predictor auto) chose on
// a split: the candidates' validation RMSE trained on the training cells
// alone, and the final model and value predictor that follow.
type AutoChoice struct {
	// Candidates maps each candidate final model to its validation RMSE.
	Candidates map[string]float64 `json:"candidates"`
	// FinalModel is the candidate of lowest validation RMSE; Predictor
	// the value predictor that goes with it (autoPredictor).
	FinalModel string `json:"final_model"`
	Predictor  string `json:"predictor"`
}

// autoFamily is the gradient-trained candidate of -final-model auto: the
// kind of Θ, or the MLP when Θ (CoSTCo) is no final model.
func (c Config) autoFamily() string {
	if c.Model == FinalFM || c.Model == FinalHybrid {
		return c.Model
	}
	return FinalMLP
}

// chooseAuto resolves -final-model auto once per experiment: it trains
// (or takes the memoised) gradient-trained candidates on the training
// cells — the kind of Θ (autoFamily), the fm and the hybrid (autoKinds) —
// and fits bayes-fm on them alone (kept for rmse_before and the ratio-0
// baseline), and picks the candidate of lowest validation MSE (ties: the
// first of autoKinds, then bayes-fm). -predictor auto then gives the
// ensemble of the candidates (ensembleModel).
func (e *Experiment) chooseAuto(ctx context.Context) (*AutoChoice, error) {
	if e.auto != nil {
		return e.auto, nil
	}
	kinds := e.cfg.autoKinds()
	a := &AutoChoice{Candidates: map[string]float64{}}
	for _, k := range kinds {
		t, err := e.model(ctx, Embedding{k})
		if err != nil {
			return nil, err
		}
		a.Candidates[k] = math.Sqrt(t.res.BestValMSE)
	}
	_, res, _, err := e.downstreamBayes(ctx, nil, "bayes-fm on the training cells alone")
	if err != nil {
		return nil, err
	}
	a.Candidates[FinalBayesFM] = math.Sqrt(res.BestValMSE)
	kinds = append(kinds, FinalBayesFM)
	a.FinalModel = kinds[0]
	for _, k := range kinds[1:] {
		if a.Candidates[k] < a.Candidates[a.FinalModel] {
			a.FinalModel = k
		}
	}
	a.Predictor = autoPredictor(a.FinalModel)
	if e.cfg.Predictor == FinalAuto {
		a.Predictor = PredictorEnsemble
	}
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s %.6f", k, a.Candidates[k])
	}
	e.logf("final model auto: validation RMSE%s: %s, value predictor %s", b.String(), a.FinalModel, a.Predictor)
	e.auto = a
	return a, nil
}

// autoPredictor is the value predictor that goes with a final model chosen
// by auto (or given with -predictor auto): the model itself for bayes-fm
// and fm, the paper's CoSTCo otherwise.
func autoPredictor(final string) string {
	if final == FinalBayesFM || final == FinalFM {
		return final
	}
	return nn.KindCoSTCo
}

// resolve returns c with -final-model auto and -predictor auto replaced by
// what they resolve to on e's split (chooseAuto, run on first need); c
// unchanged when it has neither.
func (e *Experiment) resolve(ctx context.Context, c Config) (Config, error) {
	if c.finalModel() == FinalAuto {
		if _, err := e.chooseAuto(ctx); err != nil {
			return c, err
		}
	}
	return e.applyAuto(c), nil
}

// applyAuto replaces c's auto settings by what they resolve to: a final
// model auto by e.auto's choice (left as is while none is made), a
// predictor auto by the ensemble when the final model was auto, else by
// the one that follows the final model (autoPredictor).
func (e *Experiment) applyAuto(c Config) Config {
	wasAuto := c.finalModel() == FinalAuto
	if wasAuto && e.auto != nil {
		c.FinalModel = e.auto.FinalModel
	}
	if c.Predictor == FinalAuto && c.finalModel() != FinalAuto { // else not chosen yet
		c.Predictor = autoPredictor(c.finalModel())
		if wasAuto {
			c.Predictor = PredictorEnsemble
		}
	}
	return c
}

// Resolve is resolve for callers outside the package (dainx eval): c with
// its auto settings replaced by what they resolve to on e's split, and
// what auto chose (nil when c has no auto setting).
func (e *Experiment) Resolve(ctx context.Context, c Config) (Config, *AutoChoice, error) {
	r, err := e.resolve(ctx, c)
	if err != nil || (c.finalModel() != FinalAuto && c.Predictor != FinalAuto) {
		return r, nil, err
	}
	return r, e.auto, nil
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

// bayesPriors returns c.BayesPriors with "" read as the table's Unset
// (BayesPriorsAuto).
func (c Config) bayesPriors() BayesPriorGroups {
	return resolved[BayesPriorGroups](c, "BayesPriors")
}

// bayesClamp returns c.BayesClamp with "" read as the table's Unset
// (bayes.ClampAuto).
func (c Config) bayesClamp() bayes.ClampRule {
	return resolved[bayes.ClampRule](c, "BayesClamp")
}

// finalModel returns c.FinalModel with "" read as the table's Unset
// (FinalMLP).
func (c Config) finalModel() string { return resolved[string](c, "FinalModel") }

// UsesBayesFM reports whether a run of c fits the Bayesian FM, as its
// final model or its value predictor: only then do the Bayes* settings
// matter.
func (c Config) UsesBayesFM() bool {
	f := c.finalModel()
	return f == FinalBayesFM || f == FinalAuto || f == FinalEnsemble || c.Predictor == FinalBayesFM || c.Predictor == PredictorEnsemble || c.usesUncertainty()
}

// UsesFM reports whether a run of c trains the gradient factorization
// machine (as Θ, value predictor or final model): only then does FMRank
// matter.
func (c Config) UsesFM() bool {
	return c.Model == FinalFM || c.Predictor == FinalFM || c.finalModel() == FinalFM || c.finalModel() == FinalAuto || c.finalModel() == FinalEnsemble || c.usesEnsemble()
}

// FinalModelName is c.FinalModel with "" read as its default, mlp: what a
// report and a provenance record hold.
func (c Config) FinalModelName() string { return c.finalModel() }

// checkFinal reports a final-model setting that cannot work.
func (c Config) checkFinal() error {
	if _, err := lookup("final model", c.finalModel(), FinalModels); err != nil {
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
	if f := c.finalModel(); c.AugWeight == AugWeightLearn && f != FinalBayesFM && f != FinalAuto && f != FinalEnsemble {
		return fmt.Errorf("aug weight learn: the %s final model, trained by Adam, takes a weight (or auto); learn needs -final-model bayes-fm (or auto, or ensemble, whose bayes-fm takes it)", f)
	}
	if !c.UsesBayesFM() {
		return nil
	}
	b := c.bayesConfig()
	if p := c.bayesPriors(); !slices.Contains(BayesPriorChoices, p) {
		return fmt.Errorf("bayes priors %q: want %s, %s or %s", p, BayesPriorChoices[0], BayesPriorChoices[1], BayesPriorChoices[2])
	}
	if c.BayesSamples > MaxBayesSamples {
		return fmt.Errorf("bayes samples %d: above the limit %d", c.BayesSamples, MaxBayesSamples)
	}
	if err := b.Validate(); err != nil {
		return err
	}
	if f := c.finalModel(); c.Keep.Model != nil && f == FinalEnsemble {
		return fmt.Errorf("final model %s has no saved form yet: -model-out saves a net or bayes-fm Θ′ (give -final-model mlp, fm, hybrid, bayes-fm or auto, or no -model-out)", f)
	}
	if f := c.finalModel(); c.Keep.Model != nil && c.Keep.Bayes == nil && (f == FinalBayesFM || f == FinalAuto) {
		return fmt.Errorf("final model %s: Keep.Model is set but Keep.Bayes, which saves a bayes-fm Θ′, is not", f)
	}
	if c.Keep.BayesSamples < 0 {
		return fmt.Errorf("keep %d bayes-fm samples: want ≥ 0 (0: every sample after burn-in)", c.Keep.BayesSamples)
	}
	return nil
}

// bayesConfig is the bayes.Config of the bayes-fm final model: Rank,
// Samples and BurnIn from c (0 means the default), the chain's seed drawn
// from c.Seed's own stream.
func (c Config) bayesConfig() bayes.Config {
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
	b.SharedPriors = c.bayesPriors() == BayesPriorsShared
	b.Clamp = c.bayesClamp()
	return b
}

// fitBayes runs bayes.Fit with cfg, or with BayesPriorsAuto both prior
// groupings (the same seed), keeping the fit whose predictions of the
// first query set (the validation cells) have the lower MSE. It returns
// the fit and the grouping used.
func (e *Experiment) fitBayes(ctx context.Context, train *tensor.COO, queries []*tensor.COO, cfg bayes.Config) (*bayes.Result, BayesPriorGroups, error) {
	name := func(shared bool) BayesPriorGroups {
		if shared {
			return BayesPriorsShared
		}
		return BayesPriorsMode
	}
	res, err := e.fitClamped(ctx, train, queries, cfg)
	if err != nil || e.cfg.bayesPriors() != BayesPriorsAuto {
		return res, name(cfg.SharedPriors), err
	}
	other := cfg
	other.SharedPriors = !cfg.SharedPriors
	res2, err := e.fitClamped(ctx, train, queries, other)
	if err != nil {
		return nil, "", err
	}
	a, b := e.mseAll(res.Pred[0], queries[0].Val), e.mseAll(res2.Pred[0], queries[0].Val)
	e.logf("  bayes-fm priors: validation RMSE %.6f by mode, %.6f shared", math.Sqrt(a), math.Sqrt(b))
	if b < a {
		return res2, name(other.SharedPriors), nil
	}
	return res, name(cfg.SharedPriors), nil
}

// BayesChoice returns the prior grouping and clamp rule of the last
// bayes-fm final model e fitted (Downstream or Retrain with a bayes-fm
// Θ′; with auto, what validation chose), or "" for each when none.
func (e *Experiment) BayesChoice() (BayesPriorGroups, bayes.ClampRule) {
	return e.lastBayesPriors, e.lastBayesClamp
}

// fitClamped is bayes.FitOn on e's processes, saying on the log what
// validation chose when cfg.Clamp is bayes.ClampAuto.
func (e *Experiment) fitClamped(ctx context.Context, train *tensor.COO, queries []*tensor.COO, cfg bayes.Config) (*bayes.Result, error) {
	res, err := bayes.FitOn(ctx, e.sp.cl, train, queries, cfg)
	if err == nil && len(res.ValMSE) == 2 {
		e.logf("  bayes-fm clamp: validation RMSE %.6f clamping each sample, %.6f clamping the mean: %s", math.Sqrt(res.ValMSE[0]), math.Sqrt(res.ValMSE[1]), res.Clamp)
	}
	return res, err
}

// BayesSeed is the seed of the bayes-fm final model's Gibbs chain in a run
// of seed seed (its own random stream of seed).
func BayesSeed(seed uint64) uint64 { return rng(seed, streamBayes).Uint64() }

// downstreamBayes is Downstream with the bayes-fm final model: a Gibbs
// chain on train ∪ aug (bayes.Fit), the validation and test cells as
// query sets. It returns the test RMSE of the averaged predictions (the
// validation RMSE when there is no test set), an nn.Result whose
// BestValMSE is the validation MSE (no epochs: BestEpoch 0), and its wall
// time. The same split and seed give the same chain whatever aug holds, so
// runs on one split differ only by aug.
func (e *Experiment) downstreamBayes(ctx context.Context, aug *tensor.COO, label string) (float64, nn.Result, float64, error) {
	// New cells on any process (one's share may be empty while another's
	// is not: every process must take the same path).
	alone := aug == nil || e.globalNNZ(aug) == 0
	// save: this chain is Θ′ and Keep.Bayes takes its samples.
	save := e.lastStage && e.onRetrainedBayes != nil
	if a := e.bayesAlone; alone && a != nil && !save {
		// The chain on the training cells alone ran already (chooseAuto):
		// the same seed and cells give the same chain.
		if e.onTestPred != nil {
			e.onTestPred(a.testPred)
		}
		if e.finalPreds != nil {
			e.finalPreds(a.valPred, a.testPred)
		}
		e.lastBayesPriors, e.lastBayesClamp = a.priors, a.clamp
		return a.rmse, a.res, a.seconds, nil
	}
	t0 := time.Now()
	train := e.Train
	cfg := e.cfg.bayesConfig()
	if !alone {
		e.cfg.newCells(&cfg, aug.NNZ()) // this process's, the last of its cells
	}
	if aug != nil && aug.NNZ() > 0 {
		order := e.x.Order()
		train = &tensor.COO{Dims: e.x.Dims, Idx: make([]int32, 0, (e.Train.NNZ()+aug.NNZ())*order), Val: make([]float64, 0, e.Train.NNZ()+aug.NNZ())}
		train.Idx = append(append(train.Idx, e.Train.Idx...), aug.Idx...)
		train.Val = append(append(train.Val, e.Train.Val...), aug.Val...)
	}
	if alone && e.keepAlone {
		// Kept for the ensemble predictor; the chain is the same.
		cfg.KeepSamples = e.cfg.keptBayes()
	}
	if save {
		cfg.KeepSamples = e.cfg.Keep.saveSamples(cfg)
	}
	if e.cfg.Progress != nil && label != "" {
		cfg.Progress = &prefixWriter{prefix: "  " + label + " ", w: e.cfg.Progress, every: max(1, cfg.Samples/10), n: 0}
	}
	var res *bayes.Result
	var priors BayesPriorGroups
	var err error
	if a := e.bayesAlone; a != nil && (!alone && e.cfg.AugWeight.Resolve(FinalBayesFM) != 1 || save) && e.cfg.bayesPriors() == BayesPriorsAuto {
		// New cells of their own precision: the chain takes the prior
		// grouping that validation chose for the chain on the training
		// cells alone (one chain, not both groupings again).
		cfg.SharedPriors, priors = a.priors == BayesPriorsShared, a.priors
		res, err = e.fitClamped(ctx, train, []*tensor.COO{e.Val, e.Test}, cfg)
	} else {
		res, priors, err = e.fitBayes(ctx, train, []*tensor.COO{e.Val, e.Test}, cfg)
	}
	if err != nil {
		if ctx.Err() != nil {
			return 0, nn.Result{}, 0, ctx.Err()
		}
		return 0, nn.Result{}, 0, fmt.Errorf("dain: the bayes-fm final model: %w", err)
	}
	e.lastBayesPriors, e.lastBayesClamp = priors, res.Clamp
	if save {
		// Θ′ is what the saved model predicts: its kept samples in
		// float32.
		res.Model.Round32()
		for j, q := range []*tensor.COO{e.Val, e.Test} {
			if res.Pred[j], err = res.Model.Predict(q); err != nil {
				return 0, nn.Result{}, 0, fmt.Errorf("dain: the bayes-fm final model: %w", err)
			}
		}
	}
	valMSE := e.mseAll(res.Pred[0], e.Val.Val)
	out := nn.Result{BestValMSE: valMSE}
	rmse := math.Sqrt(valMSE)
	if e.sp.counts[2] > 0 {
		rmse = math.Sqrt(e.mseAll(res.Pred[1], e.Test.Val))
	}
	if e.onTestPred != nil {
		e.onTestPred(res.Pred[1])
	}
	if e.finalPreds != nil {
		e.finalPreds(res.Pred[0], res.Pred[1])
	}
	if alone {
		e.bayesAlone = &bayesRun{rmse: rmse, res: out, seconds: time.Since(t0).Seconds(), priors: priors, clamp: res.Clamp, valPred: res.Pred[0], testPred: res.Pred[1], model: res.Model}
	}
	if save {
		if err := e.onRetrainedBayes(res.Model); err != nil {
			return 0, nn.Result{}, 0, err
		}
	}
	if label != "" {
		news := ""
		if res.AlphaNew > 0 {
			news = fmt.Sprintf(", new cells' %.4g (%s)", 1/math.Sqrt(res.AlphaNew), e.cfg.AugWeight.applied(FinalBayesFM))
		}
		e.logf("%s: bayes-fm, rank %d, %d samples (burn-in %d), priors by %s, on %d cells: noise sd %.4g%s, %.1fs", label, cfg.Rank, cfg.Samples, cfg.BurnIn, priors, e.globalNNZ(train), 1/math.Sqrt(res.Alpha), news, time.Since(t0).Seconds())
	}
	return rmse, out, time.Since(t0).Seconds(), nil
}

// newCells sets b, the bayes-fm final chain's configuration on train ∪
// aug, for this process's n new cells (the last n of its training cells)
// under c.AugWeight: with a weight other than 1, or learn, they get their
// own noise precision; with 1 they are observations (NewCells 0, the
// chain of every dainx before the setting).
func (c Config) newCells(b *bayes.Config, n int) {
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

// applied describes the weight w gives final model kind, as logs and
// reports say it: "weight 0.1", "learned", "auto: weight 0.1".
func (w AugWeight) applied(kind string) string {
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

// bayesRun is a bayes-fm final model's fit on the training cells alone,
// kept for the runs that ask for it again.
type bayesRun struct {
	rmse, seconds float64
	res           nn.Result
	priors        BayesPriorGroups
	clamp         bayes.ClampRule
	valPred       []float64
	testPred      []float64
	model         *bayes.Model // its kept samples (Experiment.keepAlone), else nil
}

// mseAll is mse over every process's p and y (each process passing its
// own), mse on one process.
func (e *Experiment) mseAll(p, y []float64) float64 {
	if !e.many() {
		return mse(p, y)
	}
	s := []float64{0, float64(len(p))}
	if len(p) > 0 {
		s[0] = mse(p, y) * s[1]
	}
	e.sp.cl.SumF64(s)
	if s[1] == 0 {
		return math.NaN()
	}
	return s[0] / s[1]
}

// mse returns the mean squared difference of p and y (NaN when empty).
func mse(p, y []float64) float64 {
	if len(p) == 0 {
		return math.NaN()
	}
	s := 0.0
	for i, v := range p {
		d := v - y[i]
		s += d * d
	}
	return s / float64(len(p))
}

// prefixWriter passes every every-th line written to w, with prefix.
type prefixWriter struct {
	prefix string
	w      io.Writer
	every  int
	n      int
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.n++
	if p.n%p.every == 0 {
		p.w.Write(append([]byte(p.prefix), b...))
	}
	return len(b), nil
}

// maxKeptBayes is the most parameter samples the bayes-fm value predictor
// keeps to predict new cells (thinned evenly over the chain): each costs
// 8·(1 + Σ dims·(rank+1)) bytes.
const maxKeptBayes = 20

// keptBayes is the number of parameter samples a bayes-fm chain on the
// training cells keeps to predict new cells (the value predictor, the
// ensemble's member): maxKeptBayes, or every sample after burn-in when
// there are fewer.
func (c Config) keptBayes() int {
	b := c.bayesConfig()
	return min(maxKeptBayes, b.Samples-b.BurnIn)
}

// saveSamples is the number of samples the chain of cfg keeps for
// Keep.Bayes: k.BayesSamples, or every sample after burn-in when 0 (or
// more).
func (k Keep) saveSamples(cfg bayes.Config) int {
	all := cfg.Samples - cfg.BurnIn
	if k.BayesSamples > 0 && k.BayesSamples < all {
		return k.BayesSamples
	}
	return all
}

// bayesPredictor returns the bayes-fm value predictor of step 4: a Gibbs
// chain on the training cells (its own seed stream, the final model's
// rank, samples and burn-in), keeping up to maxKeptBayes samples, fitted
// once per experiment.
func (e *Experiment) bayesPredictor(ctx context.Context) (*bayes.Model, error) {
	if e.bayesP == nil {
		e.bayesP = memo[struct{}, *bayes.Model]{}
	}
	return e.bayesP.get(struct{}{}, func() (*bayes.Model, float64, error) {
		t0 := time.Now()
		cfg := e.cfg.bayesConfig()
		cfg.Seed = rng(e.cfg.Seed, streamBayesPredictor).Uint64()
		cfg.KeepSamples = e.cfg.keptBayes()
		if e.cfg.Progress != nil {
			cfg.Progress = &prefixWriter{prefix: "  Θ_p ", w: e.cfg.Progress, every: max(1, cfg.Samples/10)}
		}
		res, priors, err := e.fitBayes(ctx, e.Train, []*tensor.COO{e.Val}, cfg)
		if err != nil {
			if ctx.Err() != nil {
				return nil, 0, ctx.Err()
			}
			return nil, 0, fmt.Errorf("dain: the bayes-fm value predictor: %w", err)
		}
		e.logf("value predictor: bayes-fm, rank %d, %d samples (%d kept), priors by %s, on %d training cells: validation RMSE %.6f, %.1fs",
			cfg.Rank, cfg.Samples, cfg.KeepSamples, priors, e.nTrain(), math.Sqrt(e.mseAll(res.Pred[0], e.Val.Val)), time.Since(t0).Seconds())
		return res.Model, time.Since(t0).Seconds(), nil
	})
}

// savedBayes is the number of samples a bayes-fm Θ′ keeps for Keep.Bayes
// (0 without it).
func (c Config) savedBayes() int {
	if c.Keep.Bayes == nil {
		return 0
	}
	return c.Keep.saveSamples(c.bayesConfig())
}
