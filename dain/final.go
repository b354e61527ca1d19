package dain

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/dain/cellmath"
	"github.com/dainx/dainx/dain/config"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

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

// chooseAuto resolves -final-model auto once per experiment: it trains
// (or takes the memoised) gradient-trained candidates on the training
// cells — the kind of Θ (Config.AutoFamily), the fm and the hybrid (Config.AutoKinds) —
// and fits bayes-fm on them alone (kept for rmse_before and the ratio-0
// baseline), and picks the candidate of lowest validation MSE (ties: the
// first of Config.AutoKinds, then bayes-fm). -predictor auto then gives the
// ensemble of the candidates (ensembleModel).
func (e *Experiment) chooseAuto(ctx context.Context) (*AutoChoice, error) {
	if e.auto != nil {
		return e.auto, nil
	}
	kinds := e.cfg.AutoKinds()
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
	a.Predictor = config.AutoPredictor(a.FinalModel)
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

// resolve returns c with -final-model auto and -predictor auto replaced by
// what they resolve to on e's split (chooseAuto, run on first need); c
// unchanged when it has neither.
func (e *Experiment) resolve(ctx context.Context, c Config) (Config, error) {
	if c.FinalModelName() == FinalAuto {
		if _, err := e.chooseAuto(ctx); err != nil {
			return c, err
		}
	}
	return e.applyAuto(c), nil
}

// applyAuto replaces c's auto settings by what they resolve to: a final
// model auto by e.auto's choice (left as is while none is made), a
// predictor auto by the ensemble when the final model was auto, else by
// the one that follows the final model (config.AutoPredictor).
func (e *Experiment) applyAuto(c Config) Config {
	wasAuto := c.FinalModelName() == FinalAuto
	if wasAuto && e.auto != nil {
		c.FinalModel = e.auto.FinalModel
	}
	if c.Predictor == FinalAuto && c.FinalModelName() != FinalAuto { // else not chosen yet
		c.Predictor = config.AutoPredictor(c.FinalModelName())
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
	if err != nil || (c.FinalModelName() != FinalAuto && c.Predictor != FinalAuto) {
		return r, nil, err
	}
	return r, e.auto, nil
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
	if err != nil || e.cfg.BayesPriorsUsed() != BayesPriorsAuto {
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
	cfg := e.cfg.BayesConfig()
	if !alone {
		e.cfg.SetNewCells(&cfg, aug.NNZ()) // this process's, the last of its cells
	}
	if aug != nil && aug.NNZ() > 0 {
		order := e.x.Order()
		train = &tensor.COO{Dims: e.x.Dims, Idx: make([]int32, 0, (e.Train.NNZ()+aug.NNZ())*order), Val: make([]float64, 0, e.Train.NNZ()+aug.NNZ())}
		train.Idx = append(append(train.Idx, e.Train.Idx...), aug.Idx...)
		train.Val = append(append(train.Val, e.Train.Val...), aug.Val...)
	}
	if alone && e.keepAlone {
		// Kept for the ensemble predictor; the chain is the same.
		cfg.KeepSamples = e.cfg.KeptBayes()
	}
	if save {
		cfg.KeepSamples = e.cfg.Keep.SaveSamples(cfg)
	}
	if e.cfg.Progress != nil && label != "" {
		cfg.Progress = &prefixWriter{prefix: "  " + label + " ", w: e.cfg.Progress, every: max(1, cfg.Samples/10), n: 0}
	}
	var res *bayes.Result
	var priors BayesPriorGroups
	var err error
	if a := e.bayesAlone; a != nil && (!alone && e.cfg.AugWeight.Resolve(FinalBayesFM) != 1 || save) && e.cfg.BayesPriorsUsed() == BayesPriorsAuto {
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
			news = fmt.Sprintf(", new cells' %.4g (%s)", 1/math.Sqrt(res.AlphaNew), e.cfg.AugWeight.Applied(FinalBayesFM))
		}
		e.logf("%s: bayes-fm, rank %d, %d samples (burn-in %d), priors by %s, on %d cells: noise sd %.4g%s, %.1fs", label, cfg.Rank, cfg.Samples, cfg.BurnIn, priors, e.globalNNZ(train), 1/math.Sqrt(res.Alpha), news, time.Since(t0).Seconds())
	}
	return rmse, out, time.Since(t0).Seconds(), nil
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

// mseAll is cellmath.MSE over every process's p and y (each process
// passing its own), cellmath.MSE on one process.
func (e *Experiment) mseAll(p, y []float64) float64 {
	if !e.many() {
		return cellmath.MSE(p, y)
	}
	s := []float64{0, float64(len(p))}
	if len(p) > 0 {
		s[0] = cellmath.MSE(p, y) * s[1]
	}
	e.sp.cl.SumF64(s)
	if s[1] == 0 {
		return math.NaN()
	}
	return s[0] / s[1]
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

// bayesPredictor returns the bayes-fm value predictor of step 4: a Gibbs
// chain on the training cells (its own seed stream, the final model's
// rank, samples and burn-in), keeping up to MaxKeptBayes samples, fitted
// once per experiment.
func (e *Experiment) bayesPredictor(ctx context.Context) (*bayes.Model, error) {
	if e.bayesP == nil {
		e.bayesP = memo[struct{}, *bayes.Model]{}
	}
	return e.bayesP.get(struct{}{}, func() (*bayes.Model, float64, error) {
		t0 := time.Now()
		cfg := e.cfg.BayesConfig()
		cfg.Seed = rng(e.cfg.Seed, streamBayesPredictor).Uint64()
		cfg.KeepSamples = e.cfg.KeptBayes()
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
