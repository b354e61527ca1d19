package dain

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/dain/config"
	"github.com/dainx/dainx/dain/final"
	"github.com/dainx/dainx/dain/memo"
	"github.com/dainx/dainx/dain/streams"
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
// cells — Θ's kind (Config.AutoFamily), fm and hybrid (Config.AutoKinds)
// — and fits bayes-fm on them alone (kept for rmse_before and the ratio-0
// baseline), and picks the candidate of lowest validation MSE (ties: the
// first of Config.AutoKinds, then bayes-fm). -predictor auto then gives
// the ensemble of the candidates (final.Ensemble).
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
		a.Candidates[k] = math.Sqrt(t.Res.BestValMSE)
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
	return e.bfm.LastPriors, e.bfm.LastClamp
}

// bayesData is what a bayes-fm fit reads of e (final.Data).
func (e *Experiment) bayesData() final.Data {
	return final.Data{Cl: e.sp.Cl, Dims: e.x.Dims, Train: e.Train, Val: e.Val, Test: e.Test, NTest: e.sp.Counts[2], Cfg: e.cfg, Logf: e.logf}
}

// downstreamBayes is Downstream with the bayes-fm final model
// (final.Bayes.Downstream): a Gibbs chain on train ∪ aug, the validation
// and test cells as query sets, its model handed to Keep.Bayes when it is
// the run's last stage. It returns the test RMSE (the validation RMSE
// when there is no test set), an nn.Result whose BestValMSE is the
// validation MSE, and its wall time.
func (e *Experiment) downstreamBayes(ctx context.Context, aug *tensor.COO, label string) (float64, nn.Result, float64, error) {
	h := final.Hooks{OnTestPred: e.onTestPred, FinalPreds: e.finalPreds}
	if e.lastStage {
		h.Save = e.onRetrainedBayes
	}
	return e.bfm.Downstream(ctx, e.bayesData(), h, aug, label)
}

// bayesPredictor returns the bayes-fm value predictor of step 4: a Gibbs
// chain on the training cells (its own seed stream, the final model's
// rank, samples and burn-in), keeping up to MaxKeptBayes samples, fitted
// once per experiment.
func (e *Experiment) bayesPredictor(ctx context.Context) (*bayes.Model, error) {
	if e.bayesP == nil {
		e.bayesP = memo.Map[struct{}, *bayes.Model]{}
	}
	return e.bayesP.Get(struct{}{}, func() (*bayes.Model, float64, error) {
		t0 := time.Now()
		cfg := e.cfg.BayesConfig()
		cfg.Seed = streams.New(e.cfg.Seed, streams.BayesPredictor).Uint64()
		cfg.KeepSamples = e.cfg.KeptBayes()
		if e.cfg.Progress != nil {
			cfg.Progress = &final.PrefixWriter{Prefix: "  Θ_p ", W: e.cfg.Progress, Every: max(1, cfg.Samples/10)}
		}
		res, priors, err := final.FitBayes(ctx, e.bayesData(), e.Train, []*tensor.COO{e.Val}, cfg)
		if err != nil {
			if ctx.Err() != nil {
				return nil, 0, ctx.Err()
			}
			return nil, 0, fmt.Errorf("dain: the bayes-fm value predictor: %w", err)
		}
		e.logf("value predictor: bayes-fm, rank %d, %d samples (%d kept), priors by %s, on %d training cells: validation RMSE %.6f, %.1fs",
			cfg.Rank, cfg.Samples, cfg.KeepSamples, priors, e.sp.NTrain(), math.Sqrt(final.MSEAll(e.sp.Cl, res.Pred[0], e.Val.Val)), time.Since(t0).Seconds())
		return res.Model, time.Since(t0).Seconds(), nil
	})
}
