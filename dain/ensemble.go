package dain

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/dain/cellmath"
	"github.com/dainx/dainx/dain/final"
	"github.com/dainx/dainx/dain/memo"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// ensemble returns the ensemble predictor, fitting its weights on first
// use (the candidates are the memoised models chooseAuto trains).
func (e *Experiment) ensemble(ctx context.Context) (*final.Ensemble, error) {
	if e.ens == nil {
		e.ens = memo.Map[struct{}, *final.Ensemble]{}
	}
	return e.ens.Get(struct{}{}, func() (*final.Ensemble, float64, error) {
		t0 := time.Now()
		m := &final.Ensemble{Kinds: e.cfg.AutoKinds()}
		var cols [][]float64
		for _, k := range m.Kinds {
			t, err := e.model(ctx, Embedding{k})
			if err != nil {
				return nil, 0, err
			}
			p, err := cellmath.Predict(t.Net, e.Val.Idx)
			if err != nil {
				return nil, 0, err
			}
			cols = append(cols, p)
		}
		bm, err := e.bayesAloneModel(ctx)
		if err != nil {
			return nil, 0, err
		}
		p, err := bm.Predict(e.Val)
		if err != nil {
			return nil, 0, fmt.Errorf("dain: the ensemble predictor: %w", err)
		}
		m.Kinds, m.Bayes, m.Lo, m.Hi = append(m.Kinds, FinalBayesFM), bm, bm.Min, bm.Max
		cols = append(cols, p)
		if m.Weights, err = cellmath.StackWeights(e.sp.Cl, cols, e.Val.Val); err != nil {
			return nil, 0, err
		}
		m.ValRMSE = math.Sqrt(final.MSEAll(e.sp.Cl, m.Combine(cols), e.Val.Val))
		var b strings.Builder
		for j, k := range m.Kinds {
			fmt.Fprintf(&b, ", %s %.4f", k, m.Weights[j+1])
		}
		e.logf("value predictor: ensemble of the training cells' models, weights on the validation cells: intercept %.4f%s; validation RMSE %.6f", m.Weights[0], b.String(), m.ValRMSE)
		return m, time.Since(t0).Seconds(), nil
	})
}

// predictEnsemble values cells (K×N entity indices of this process) with
// the ensemble predictor.
func (e *Experiment) predictEnsemble(ctx context.Context, cells []int32) ([]float64, error) {
	m, err := e.ensemble(ctx)
	if err != nil {
		return nil, err
	}
	var cols [][]float64
	for _, k := range m.Kinds[:len(m.Kinds)-1] {
		t, err := e.model(ctx, Embedding{k})
		if err != nil {
			return nil, err
		}
		p, err := cellmath.Predict(t.Net, cells)
		if err != nil {
			return nil, err
		}
		cols = append(cols, p)
	}
	n := len(cells) / e.x.Order()
	p, err := m.Bayes.Predict(&tensor.COO{Dims: e.x.Dims, Idx: cells, Val: make([]float64, n)})
	if err != nil {
		return nil, fmt.Errorf("dain: the ensemble predictor: %w", err)
	}
	return m.Combine(append(cols, p)), nil
}

// bayesAloneModel returns the kept samples of the bayes-fm chain on the
// training cells alone (the final model's ratio-0 fit, downstreamBayes),
// fitting it if it has not run; a chain that ran without keeping samples
// is fitted again with them (the same seed: the same chain).
func (e *Experiment) bayesAloneModel(ctx context.Context) (*bayes.Model, error) {
	if a := e.bfm.Alone; a != nil && a.Model != nil {
		return a.Model, nil
	}
	e.bfm.Alone, e.bfm.KeepAlone = nil, true
	if _, _, _, err := e.downstreamBayes(ctx, nil, "bayes-fm on the training cells alone"); err != nil {
		return nil, err
	}
	return e.bfm.Alone.Model, nil
}

// downstreamEnsemble is Downstream with -final-model ensemble: each
// candidate of auto (Config.AutoKinds, then bayes-fm) trained on train ∪
// aug as Downstream trains that final model (bayes-fm with -aug-weight),
// their validation and test predictions stacked with weights fitted on
// the validation cells (final.Stack; the test cells unseen), clamped to the
// training values' range. It returns the stack's test RMSE (its
// validation RMSE without a test set), an nn.Result whose BestValMSE is
// the stack's validation MSE, and the members' wall time. Each member's
// checkpoint stage is stage-kind.
func (e *Experiment) downstreamEnsemble(ctx context.Context, aug *tensor.COO, label, stage string) (float64, nn.Result, float64, error) {
	t0 := time.Now()
	saved, savedOnTest := e.cfg, e.onTestPred
	savedNet, savedBayes := e.onRetrained, e.onRetrainedBayes
	defer func() {
		e.cfg, e.finalPreds, e.onTestPred = saved, nil, savedOnTest
		e.onRetrained, e.onRetrainedBayes = savedNet, savedBayes
	}()
	e.onTestPred = nil
	// Θ′'s members are saved (each predicting what the run's stack
	// combines) only when the ensemble is the run's last stage.
	save := e.lastStage && e.ensembleSaver != nil
	kinds := append(saved.AutoKinds(), FinalBayesFM)
	var val, test [][]float64
	for _, k := range kinds {
		e.cfg = saved
		e.cfg.FinalModel = k
		var pv, pt []float64
		e.finalPreds = func(v, t []float64) { pv, pt = v, t }
		l := ""
		if label != "" {
			l = label + " " + k
		}
		e.onRetrained, e.onRetrainedBayes = nil, nil
		if save {
			if k == FinalBayesFM {
				e.onRetrainedBayes = e.ensembleSaver.bayes
			} else {
				e.onRetrained = func(m *nn.Net) error { return e.ensembleSaver.net(k, m) }
			}
		}
		var err error
		if k == FinalBayesFM {
			_, _, _, err = e.downstreamBayes(ctx, aug, l)
		} else {
			_, _, _, err = e.downstreamAt(ctx, aug, l, stage+"-"+k)
		}
		if err != nil {
			return 0, nn.Result{}, 0, err
		}
		val, test = append(val, pv), append(test, pt)
	}
	m, pt, valMSE, rmse, err := final.Stack(e.bayesData(), kinds, val, test)
	if err != nil {
		return 0, nn.Result{}, 0, err
	}
	w := m.Weights
	if savedOnTest != nil {
		savedOnTest(pt)
	}
	if save {
		if err := e.ensembleSaver.stack(kinds, w, m.Lo, m.Hi); err != nil {
			return 0, nn.Result{}, 0, err
		}
	}
	var b strings.Builder
	for j, k := range kinds {
		fmt.Fprintf(&b, ", %s %.4f", k, w[j+1])
	}
	if label != "" {
		e.logf("%s: ensemble, weights on the validation cells: intercept %.4f%s; validation RMSE %.6f, %.1fs", label, w[0], b.String(), math.Sqrt(valMSE), time.Since(t0).Seconds())
	}
	return rmse, nn.Result{BestValMSE: valMSE}, time.Since(t0).Seconds(), nil
}

// ensembleSaver hands an ensemble Θ′ to Keep: each net member to
// Keep.Model and the bayes-fm member to Keep.Bayes (roles
// "theta-prime.KIND"), then the stack to Keep.Ensemble.
type ensembleSaver struct {
	net   func(kind string, m *nn.Net) error
	bayes func(m *bayes.Model) error
	stack func(kinds []string, weights []float64, lo, hi float64) error
}
