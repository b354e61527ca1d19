// Package final is the bayes-fm final model of a DAIN run (package dain's
// Experiment.Downstream with -final-model bayes-fm, and auto's and the
// ensemble's bayes-fm member): its Gibbs chain on the training cells and
// the new cells over a cluster's processes, the choice of its prior
// grouping on the validation cells, and the fit on the training cells
// alone that an experiment keeps for the runs that ask for it again.
package final

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/dain/cellmath"
	"github.com/dainx/dainx/dain/config"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// Bayes is an experiment's bayes-fm final model between its fits.
type Bayes struct {
	// Alone is the fit on the training cells alone, once (Downstream with
	// no new cells); KeepAlone makes it keep its chain's samples (a
	// configuration may use the ensemble predictor or the uncertainty).
	Alone     *Run
	KeepAlone bool
	// LastPriors is the prior grouping of the last fit
	// (Report.BayesPriors), LastClamp its clamp rule (Report.BayesClamp;
	// with -bayes-clamp auto, what validation chose).
	LastPriors config.BayesPriorGroups
	LastClamp  bayes.ClampRule
	// LastSweeps is the sweeps of the last fit (Report.BayesSweeps).
	LastSweeps int
	// Rejected says that the last fit with new cells, under -aug-weight
	// auto, had a higher validation MSE than the chain on the training
	// cells alone, which Downstream then returned in its stead.
	Rejected bool
}

// Data is what a fit reads of its experiment: the processes, the tensor's
// dims, this process's training, validation and test cells (NTest: the
// test cells over every process), the configuration and the log.
type Data struct {
	Cl               cluster.Cluster
	Dims             []int
	Train, Val, Test *tensor.COO
	NTest            int
	Cfg              config.Config
	Logf             func(string, ...any)
}

// Hooks are what a fit hands over: Save, when not nil, gets the chain's
// model (its kept samples rounded to float32, which its predictions then
// are: the run's last stage with Keep.Bayes); OnTestPred the test
// predictions; FinalPreds the validation and test predictions (an
// ensemble's member).
type Hooks struct {
	Save       func(*bayes.Model) error
	OnTestPred func([]float64)
	FinalPreds func(val, test []float64)
}

// Downstream trains the bayes-fm final model of package dain's
// Experiment.Downstream: a Gibbs chain on d.Train ∪ aug (this process's
// cells; bayes.FitOn over d.Cl), the validation and test cells as query
// sets, labelled label in d.Logf's lines ("" none). With aug nil or empty
// on every process it is the chain on the training cells alone, kept in
// b.Alone (and taken from there when it ran). It returns the test RMSE of
// the averaged predictions (the validation RMSE when there is no test
// set), an nn.Result whose BestValMSE is the validation MSE (no epochs:
// BestEpoch 0), and its wall time. The same split and seed give the same
// chain whatever aug holds, so runs on one split differ only by aug. With
// new cells, -aug-weight auto and the chain on the training cells alone
// already run (b.Alone), the new cells are kept only if they lower the
// validation MSE: otherwise Downstream returns the chain alone (its
// samples saved through h.Save when it has one) and sets b.Rejected.
func (b *Bayes) Downstream(ctx context.Context, d Data, h Hooks, aug *tensor.COO, label string) (float64, nn.Result, float64, error) {
	// New cells on any process (one's share may be empty while another's
	// is not: every process must take the same path).
	alone := aug == nil || globalNNZ(d.Cl, aug) == 0
	b.Rejected = false
	// save: this chain is Θ′ and Keep.Bayes takes its samples.
	save := h.Save != nil
	if a := b.Alone; alone && a != nil && !save {
		// The chain on the training cells alone ran already (chooseAuto):
		// the same seed and cells give the same chain.
		if h.OnTestPred != nil {
			h.OnTestPred(a.TestPred)
		}
		if h.FinalPreds != nil {
			h.FinalPreds(a.ValPred, a.TestPred)
		}
		b.LastPriors, b.LastClamp, b.LastSweeps = a.Priors, a.Clamp, a.Sweeps
		return a.RMSE, a.Res, a.Seconds, nil
	}
	t0 := time.Now()
	train := d.Train
	cfg := d.Cfg.BayesConfig()
	if !alone {
		d.Cfg.SetNewCells(&cfg, aug.NNZ()) // this process's, the last of its cells
	}
	if aug != nil && aug.NNZ() > 0 {
		order := len(d.Dims)
		train = &tensor.COO{Dims: d.Dims, Idx: make([]int32, 0, (d.Train.NNZ()+aug.NNZ())*order), Val: make([]float64, 0, d.Train.NNZ()+aug.NNZ())}
		train.Idx = append(append(train.Idx, d.Train.Idx...), aug.Idx...)
		train.Val = append(append(train.Val, d.Train.Val...), aug.Val...)
	}
	if alone && b.KeepAlone {
		// Kept for the ensemble predictor; the chain is the same.
		cfg.KeepSamples = d.Cfg.KeptBayes()
	}
	if save {
		cfg.KeepSamples = d.Cfg.Keep.SaveSamples(cfg)
	}
	if d.Cfg.Progress != nil && label != "" {
		cfg.Progress = &PrefixWriter{Prefix: "  " + label + " ", W: d.Cfg.Progress, Every: max(1, cfg.Samples/10)}
	}
	var res *bayes.Result
	var priors config.BayesPriorGroups
	var err error
	if a := b.Alone; a != nil && (!alone && d.Cfg.AugWeight.Resolve(config.FinalBayesFM) != 1 || save) && d.Cfg.BayesPriorsUsed() == config.BayesPriorsAuto {
		// New cells of their own precision: the chain takes the prior
		// grouping that validation chose for the chain on the training
		// cells alone (one chain, not both groupings again).
		cfg.SharedPriors, priors = a.Priors == config.BayesPriorsShared, a.Priors
		res, err = fitClamped(ctx, d, train, []*tensor.COO{d.Val, d.Test}, cfg)
	} else {
		res, priors, err = FitBayes(ctx, d, train, []*tensor.COO{d.Val, d.Test}, cfg)
	}
	if err != nil {
		if ctx.Err() != nil {
			return 0, nn.Result{}, 0, ctx.Err()
		}
		return 0, nn.Result{}, 0, fmt.Errorf("dain: the bayes-fm final model: %w", err)
	}
	b.LastPriors, b.LastClamp, b.LastSweeps = priors, res.Clamp, res.Sweeps
	if save {
		// Θ′ is what the saved model predicts: its kept samples in
		// float32.
		res.Model.Round32()
		for j, q := range []*tensor.COO{d.Val, d.Test} {
			if res.Pred[j], err = res.Model.Predict(q); err != nil {
				return 0, nn.Result{}, 0, fmt.Errorf("dain: the bayes-fm final model: %w", err)
			}
		}
	}
	valMSE := MSEAll(d.Cl, res.Pred[0], d.Val.Val)
	if a := b.Alone; !alone && a != nil && d.Cfg.AugWeight == config.AugWeightAuto && valMSE > a.Res.BestValMSE {
		// -aug-weight auto keeps the new cells only where they lower the
		// validation MSE (the same cells, seed and prior grouping): here
		// they raised it, so Θ′ is the chain on the training cells alone
		// (run again only when its samples are to be saved).
		d.Logf("  bayes-fm: the new cells raised the validation RMSE (%.6f, alone %.6f): the final model is the chain on the training cells alone", math.Sqrt(valMSE), math.Sqrt(a.Res.BestValMSE))
		rmse, out, secs, err := b.Downstream(ctx, d, h, nil, label)
		b.Rejected = true
		return rmse, out, secs + time.Since(t0).Seconds(), err
	}
	out := nn.Result{BestValMSE: valMSE}
	rmse := math.Sqrt(valMSE)
	if d.NTest > 0 {
		rmse = math.Sqrt(MSEAll(d.Cl, res.Pred[1], d.Test.Val))
	}
	if h.OnTestPred != nil {
		h.OnTestPred(res.Pred[1])
	}
	if h.FinalPreds != nil {
		h.FinalPreds(res.Pred[0], res.Pred[1])
	}
	if alone {
		b.Alone = &Run{RMSE: rmse, Res: out, Seconds: time.Since(t0).Seconds(), Priors: priors, Clamp: res.Clamp, Sweeps: res.Sweeps, ValPred: res.Pred[0], TestPred: res.Pred[1], Model: res.Model}
	}
	if save {
		if err := h.Save(res.Model); err != nil {
			return 0, nn.Result{}, 0, err
		}
	}
	if label != "" {
		news := ""
		if res.AlphaNew > 0 {
			news = fmt.Sprintf(", new cells' %.4g (%s)", 1/math.Sqrt(res.AlphaNew), d.Cfg.AugWeight.Applied(config.FinalBayesFM))
		}
		d.Logf("%s: bayes-fm, rank %d, %d samples (burn-in %d), priors by %s, on %d cells: noise sd %.4g%s, %.1fs", label, cfg.Rank, cfg.Samples, cfg.BurnIn, priors, globalNNZ(d.Cl, train), 1/math.Sqrt(res.Alpha), news, time.Since(t0).Seconds())
	}
	return rmse, out, time.Since(t0).Seconds(), nil
}

// FitBayes runs bayes.FitOn over the processes of d.Cl with cfg on train
// (this process's cells), or, when d.Cfg's priors are
// config.BayesPriorsAuto, with both prior groupings (the same seed),
// keeping the fit whose predictions of the first query set (the
// validation cells) have the lower MSE over every process, as d.Logf
// says. It returns the fit and the grouping used; an error is bayes.FitOn's.
func FitBayes(ctx context.Context, d Data, train *tensor.COO, queries []*tensor.COO, cfg bayes.Config) (*bayes.Result, config.BayesPriorGroups, error) {
	name := func(shared bool) config.BayesPriorGroups {
		if shared {
			return config.BayesPriorsShared
		}
		return config.BayesPriorsMode
	}
	res, err := fitClamped(ctx, d, train, queries, cfg)
	if err != nil || d.Cfg.BayesPriorsUsed() != config.BayesPriorsAuto {
		return res, name(cfg.SharedPriors), err
	}
	other := cfg
	other.SharedPriors = !cfg.SharedPriors
	res2, err := fitClamped(ctx, d, train, queries, other)
	if err != nil {
		return nil, "", err
	}
	a, b := MSEAll(d.Cl, res.Pred[0], queries[0].Val), MSEAll(d.Cl, res2.Pred[0], queries[0].Val)
	d.Logf("  bayes-fm priors: validation RMSE %.6f by mode, %.6f shared", math.Sqrt(a), math.Sqrt(b))
	if b < a {
		return res2, name(other.SharedPriors), nil
	}
	return res, name(cfg.SharedPriors), nil
}

// fitClamped is bayes.FitOn over the processes of d.Cl, saying on d.Logf
// what validation chose when cfg.Clamp is bayes.ClampAuto.
func fitClamped(ctx context.Context, d Data, train *tensor.COO, queries []*tensor.COO, cfg bayes.Config) (*bayes.Result, error) {
	res, err := bayes.FitOn(ctx, d.Cl, train, queries, cfg)
	if err == nil && len(res.ValMSE) == 2 {
		d.Logf("  bayes-fm clamp: validation RMSE %.6f clamping each sample, %.6f clamping the mean: %s", math.Sqrt(res.ValMSE[0]), math.Sqrt(res.ValMSE[1]), res.Clamp)
	}
	return res, err
}

// Run is a bayes-fm final model's fit on the training cells alone, kept
// for the runs that ask for it again: its test RMSE (the validation RMSE
// without test cells), its wall time in seconds, its result (BestValMSE
// the validation MSE), its prior grouping and clamp rule, its validation and test
// predictions (this process's cells) and its kept samples (Bayes.KeepAlone),
// else nil.
type Run struct {
	RMSE, Seconds float64
	Res           nn.Result
	Priors        config.BayesPriorGroups
	Clamp         bayes.ClampRule
	Sweeps        int
	ValPred       []float64
	TestPred      []float64
	Model         *bayes.Model
}

// MSEAll is cellmath.MSE over every process of cl's p and y (each
// process passing its own), cellmath.MSE on one process; NaN for no
// value anywhere.
func MSEAll(cl cluster.Cluster, p, y []float64) float64 {
	if cl.Size() <= 1 {
		return cellmath.MSE(p, y)
	}
	s := []float64{0, float64(len(p))}
	if len(p) > 0 {
		s[0] = cellmath.MSE(p, y) * s[1]
	}
	cl.SumF64(s)
	if s[1] == 0 {
		return math.NaN()
	}
	return s[0] / s[1]
}

// PrefixWriter passes every Every-th line written to it to W, with
// Prefix: a chain's progress, one line in Every.
type PrefixWriter struct {
	Prefix string
	W      io.Writer
	Every  int
	n      int
}

// Write counts the line b and passes it on when it is the Every-th.
func (p *PrefixWriter) Write(b []byte) (int, error) {
	p.n++
	if p.n%p.Every == 0 {
		p.W.Write(append([]byte(p.Prefix), b...))
	}
	return len(b), nil
}

// globalNNZ returns the cells of x over every process of cl (x holds this
// process's share).
func globalNNZ(cl cluster.Cluster, x *tensor.COO) int {
	n := []int64{int64(x.NNZ())}
	cl.SumI64(n)
	return int(n[0])
}

// Uncertainty returns the uncertainty importance of the training cells
// train (this process's): bayes-fm's posterior variance of its prediction
// at each cell over m's kept samples, times the |score| at the cell that
// influence returns when it is not nil (one score per cell, in train's
// order). It needs at least 2 kept samples: an error names -influence
// flag otherwise; an error of the variance is m's, and influence's its
// own.
func Uncertainty(m *bayes.Model, train *tensor.COO, influence func() ([]float32, error), flag string) ([]float32, error) {
	if m.NumSamples() < 2 {
		return nil, fmt.Errorf("dain: -influence %s needs at least 2 kept bayes-fm samples (-bayes-samples above -bayes-burnin + 1)", flag)
	}
	variance, err := m.Variance(train)
	if err != nil {
		return nil, fmt.Errorf("dain: bayes-fm's posterior variance: %w", err)
	}
	alpha := make([]float32, len(variance))
	for z, x := range variance {
		alpha[z] = float32(x)
	}
	if influence != nil {
		a, err := influence()
		if err != nil {
			return nil, err
		}
		for z := range alpha {
			alpha[z] *= float32(math.Abs(float64(a[z])))
		}
	}
	return alpha, nil
}
