// Package bayes completes sparse tensors with a Bayesian order-2
// factorization machine over the one-hot modes of the tensor, fitted by
// Gibbs sampling (MCMC), as libFM's MCMC learner does: there is no learning
// rate or regulariser to tune, and predictions are averaged over the
// samples drawn after burn-in.
//
// Model, for a cell (i_1..i_N) of an N-mode tensor with rank K:
//
//	ŷ = w0 + Σ_n w_n[i_n] + Σ_{n<m} ⟨V_n[i_n], V_m[i_m]⟩,
//
// w_n a vector of dims[n] biases and V_n a dims[n]×K factor matrix per mode
// (an order-2 factorization machine whose features are the N active
// entities: Rendle, "Factorization Machines", ICDM 2010). Priors, as in
// libFM's MCMC (Rendle, "Factorization Machines with libFM", ACM TIST 3(3),
// 2012; Freudenthaler, Schmidt-Thieme & Rendle, "Bayesian Factorization
// Machines", NIPS workshop 2011), in the style of BPMF (Salakhutdinov &
// Mnih, ICML 2008) and BPTF (Xiong et al., SDM 2010):
//
//	y | ŷ ~ N(ŷ, 1/α),            α ~ Gamma(α0/2, γ0/2)
//	w0 ~ flat
//	w_n[i] ~ N(μ_n, 1/λ_n),       V_n[i,f] ~ N(μ_{n,f}, 1/λ_{n,f})
//	λ ~ Gamma(α0/2, γ0/2),        μ | λ ~ N(μ0, 1/(β0 λ))   (each group)
//
// with α0 = γ0 = β0 = 1 and μ0 = 0 (libFM's defaults); Gamma(a, b) has
// shape a and rate b. One sweep draws every variable from its full
// conditional; see docs/bayes-fm.md for the equations. A sweep costs
// O(nnz·N·K) time: the sampler keeps the residual e_c = y_c − ŷ_c of every
// training cell and, while factor f is drawn, q_c = Σ_n V_n[i_n,f], so
// drawing one parameter costs O(cells of its entity). By default every
// sample's prediction is clamped to [min, max] of the training values
// before it is averaged, as libFM does for regression; Config.Clamp can
// instead clamp the average (ClampMean), or choose on validation
// (ClampAuto).
package bayes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"time"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/tensor"
)

// MaxRank is the largest Config.Rank accepted.
const MaxRank = 1 << 16

// MaxNewWeight is the largest Config.NewWeight accepted.
const MaxNewWeight = 1e6

// MaxParams is the largest number of parameters, 1 + Σ_n dims[n]·(K+1),
// Fit accepts (16 GiB of float64s); a larger model is an error rather
// than an allocation failure.
const MaxParams = 1 << 31

// ClampRule says where a prediction meets the clamp range [Min, Max],
// the training values' extremes: before the samples are averaged or after.
type ClampRule string

// Values of Config.Clamp and Model.Clamp.
const (
	// ClampSamples clamps each sample's ŷ, then averages: libFM's rule
	// for regression. "" means ClampSamples.
	ClampSamples ClampRule = "samples"
	// ClampMean averages the samples' ŷ, then clamps the average. A
	// sample's excursion beyond the range then still pulls the mean
	// (towards the range's nearest edge only as far as the other samples
	// allow), where ClampSamples cuts it off: on a tensor whose values
	// pile up at an extreme (counts at 1) this is the better estimate of
	// the posterior mean (docs/bayes-fm.md, "Clamping").
	ClampMean ClampRule = "mean"
	// ClampAuto (Config only) accumulates both averages in the one chain
	// and keeps the rule whose predictions of the first query set (the
	// validation cells: their values must be the true ones) have the
	// lower MSE; ClampSamples on a tie or without a query set.
	// Result.Clamp says which; it costs 8 bytes per query cell.
	ClampAuto ClampRule = "auto"
)

// ClampRules lists the accepted values of Config.Clamp.
var ClampRules = []ClampRule{ClampSamples, ClampMean, ClampAuto}

// apply returns the average of a sample sum of clamped predictions
// (clamped) or of raw ones (raw) over n samples under rule r.
func (r ClampRule) apply(clamped, raw, n, lo, hi float64) float64 {
	if r == ClampMean {
		return min(max(raw/n, lo), hi)
	}
	return clamped / n
}

// Config sets up Fit. There is no learning rate or regulariser: the
// precisions are sampled.
type Config struct {
	// Rank K ≥ 1 is the number of factors per entity (libFM's -dim 1,1,K).
	Rank int
	// Samples ≥ 1 is the total number of Gibbs sweeps, burn-in included
	// (libFM's -iter).
	Samples int
	// BurnIn, 0 ≤ BurnIn < Samples, is the number of first sweeps whose
	// samples are discarded; predictions average the Samples − BurnIn
	// samples after them. libFM averages all its sweeps (BurnIn 0).
	BurnIn int
	// Seed determines the chain: the same inputs, Config and Seed give the
	// same results bit for bit, for any Workers.
	Seed uint64
	// InitStd ≥ 0 is the standard deviation of the initial V entries
	// (libFM's -init_stdev, default 0.1); w0 and w start at 0.
	InitStd float64
	// KeepSamples, 0 ≤ KeepSamples ≤ Samples − BurnIn, is the number of
	// parameter samples, evenly spaced over the sweeps after burn-in (the
	// last one included), kept in Result.Model to predict cells not passed
	// to Fit. 0 keeps none (Result.Model is nil). Each kept sample costs
	// 8·(1 + Σ_n dims[n]·(K+1)) bytes. A chain that StopWindow ends keeps
	// those of the schedule it reached, and the sample of its last sweep.
	KeepSamples int
	// SharedPriors makes all modes share one (μ, λ) for their w and one
	// per factor for their V, as libFM does when no -meta file groups the
	// features. The default (false) gives each mode its own, as with a
	// libFM -meta file that puts each mode in its own group.
	SharedPriors bool
	// NewCells ≥ 0 is the number of this process's training cells, the
	// last ones of train, that are new cells of an augmentation rather
	// than observations (it may differ between processes). They have a
	// noise precision of their own, α_new (NewWeight, NewLearn), in
	// place of α: y_c | ŷ_c ~ N(ŷ_c, 1/α_new). α is drawn from the
	// observed cells alone, and TrainRMSE and the clamp range are theirs.
	// With 0 on every process the chain is the one without new cells,
	// bit for bit. See docs/bayes-fm.md, "New cells as softer evidence".
	NewCells int
	// NewWeight > 0 (with NewCells) fixes α_new = NewWeight·α in every
	// sweep: a new cell counts as NewWeight of an observation (a
	// tempered likelihood). Ignored when NewLearn is set.
	NewWeight float64
	// NewLearn draws α_new in every sweep from its full conditional under
	// its own Gamma(α0/2, γ0/2) prior, as α is drawn: the chain learns
	// how closely the new cells' values agree with the model.
	NewLearn bool
	// Clamp is where predictions are clamped to the training values'
	// range (ClampRules; "" means ClampSamples, libFM's rule). It changes
	// Result.Pred, QueryRMSE and Model's predictions, not the chain.
	Clamp ClampRule
	// StopWindow > 0 ends the chain before Samples sweeps once it has
	// converged on the first query set (the validation cells; their
	// values must be the true ones): after a sweep d ≥ StopWindow sweeps
	// past burn-in at which the RMSE of the running average (the lower of
	// the two clamp rules' with ClampAuto) is above (1 − StopTol) times
	// its value StopWindow sweeps before, the chain stops. The chain up to
	// there is the one of Samples = BurnIn + d, bit for bit; Result.Sweeps
	// says how many ran. 0 (the default) runs every sweep.
	StopWindow int
	// StopTol ≥ 0 is StopWindow's relative improvement (e.g. 1e-4).
	StopTol float64
	// Workers ≥ 0 is the number of goroutines drawing the entities of a
	// mode in parallel (0: GOMAXPROCS). It does not change the results.
	Workers int
	// Progress, when not nil, receives one line per sweep (training RMSE,
	// α, and each query set's RMSE of the running average).
	Progress io.Writer
}

// DefaultConfig returns libFM-like settings: rank 32, 200 sweeps all
// averaged (burn-in 0, as libFM; on MovieLens and Foursquare a burn-in of
// 20 changed the test RMSE by less than the spread between chain seeds,
// docs/bayes-fm.md), InitStd 0.1, seed 1.
func DefaultConfig() Config {
	return Config{Rank: 32, Samples: 200, BurnIn: 0, Seed: 1, InitStd: 0.1}
}

// Validate reports the first problem with c, or nil.
func (c Config) Validate() error {
	switch {
	case c.Rank < 1 || c.Rank > MaxRank:
		return fmt.Errorf("bayes: rank %d: want 1..%d", c.Rank, MaxRank)
	case c.Samples < 1:
		return fmt.Errorf("bayes: %d samples: want at least 1", c.Samples)
	case c.BurnIn < 0 || c.BurnIn >= c.Samples:
		return fmt.Errorf("bayes: burn-in %d with %d samples: want 0 ≤ burn-in < samples", c.BurnIn, c.Samples)
	case !(c.InitStd >= 0) || math.IsInf(c.InitStd, 0):
		return fmt.Errorf("bayes: init std %v: want a finite value ≥ 0", c.InitStd)
	case c.KeepSamples < 0 || c.KeepSamples > c.Samples-c.BurnIn:
		return fmt.Errorf("bayes: keep %d samples: want 0..%d (samples − burn-in)", c.KeepSamples, c.Samples-c.BurnIn)
	case c.Workers < 0:
		return fmt.Errorf("bayes: %d workers: want ≥ 0 (0: GOMAXPROCS)", c.Workers)
	case c.Clamp != "" && c.Clamp != ClampSamples && c.Clamp != ClampMean && c.Clamp != ClampAuto:
		return fmt.Errorf("bayes: clamp rule %q: want %s, %s or %s", c.Clamp, ClampSamples, ClampMean, ClampAuto)
	case c.StopWindow < 0 || !(c.StopTol >= 0) || math.IsInf(c.StopTol, 0):
		return fmt.Errorf("bayes: stop window %d, tolerance %v: want ≥ 0 and a finite value ≥ 0", c.StopWindow, c.StopTol)
	case c.NewCells < 0:
		return fmt.Errorf("bayes: %d new cells: want ≥ 0", c.NewCells)
	case c.NewCells > 0 && !c.NewLearn && !(c.NewWeight > 0 && c.NewWeight <= MaxNewWeight):
		return fmt.Errorf("bayes: new-cell weight %v: want a value in (0, %g], or NewLearn", c.NewWeight, float64(MaxNewWeight))
	}
	return nil
}

// Result is what Fit returns.
type Result struct {
	// Pred[j][c] is the posterior-mean prediction for cell c of query set
	// j: the mean over the Samples − BurnIn samples after burn-in of each
	// sample's ŷ clamped to [Min, Max] (Clamp ClampSamples), or that mean
	// of the unclamped ŷ, clamped (ClampMean). len(Pred) = len(queries) and
	// len(Pred[j]) = queries[j].NNZ(). Memory: 8 bytes per query cell.
	Pred [][]float64
	// TrainRMSE[s] is the RMSE on the training cells of sweep s's sample
	// (ŷ clamped to [Min, Max]), for s = 0..Samples−1; value units.
	TrainRMSE []float64
	// QueryRMSE[j][s] is the RMSE of query set j's running average after
	// sweep BurnIn+s against queries[j].Val (meaningful only when those
	// values are the true ones; NaN for an empty query set).
	QueryRMSE [][]float64
	// Alpha is the noise precision α of the last sample (1/value²); 1/√α
	// is the sampled noise standard deviation.
	Alpha float64
	// AlphaNew is the new cells' noise precision α_new of the last sample
	// (0 without new cells; Config.NewCells).
	AlphaNew float64
	// Min and Max are the smallest and largest observed training values: every
	// prediction is clamped to [Min, Max], as libFM does for regression.
	Min, Max float64
	// Clamp is the rule Pred, QueryRMSE and Model use: Config.Clamp, or
	// with ClampAuto the one validation chose (never ClampAuto or "").
	Clamp ClampRule
	// ValMSE is, with Config.Clamp ClampAuto, the MSE of the first query
	// set's predictions under ClampSamples and ClampMean (in that order);
	// nil otherwise.
	ValMSE []float64
	// Model holds Config.KeepSamples parameter samples (nil when 0).
	Model *Model
	// Sweeps is the number of sweeps the chain ran, burn-in included:
	// Config.Samples, or fewer when Config.StopWindow ended it.
	Sweeps int
	// Elapsed is Fit's wall time.
	Elapsed time.Duration
}

// Model is a thinned set of posterior samples of the factorization
// machine's parameters. It predicts any cell within Dims by averaging the
// kept samples' predictions, clamped by the rule Clamp; with all
// post-burn-in samples kept this equals Result.Pred. Memory: 8·(1 + Σ_n
// Dims[n]·(Rank+1)) bytes per sample.
type Model struct {
	Dims     []int   // mode sizes of the training tensor
	Rank     int     // K
	Min, Max float64 // clamp range: the training values' extremes
	// Clamp is where predictions meet [Min, Max]: ClampSamples (each
	// sample's, libFM's rule; "" means it) or ClampMean (the average).
	Clamp   ClampRule
	samples []*params
	// hyper[s] are sample s's noise precision and priors (FoldIn's
	// conditionals); nil for a model built without them (NewModel).
	hyper []*hyper
}

// NumSamples returns the number of kept samples.
func (m *Model) NumSamples() int { return len(m.samples) }

// Predict returns, for each cell of cells (indices within m.Dims; values
// ignored), the mean over the kept samples of ŷ clamped to [Min, Max]
// (Clamp ClampSamples), or the mean of ŷ, clamped (ClampMean). It returns
// an error when cells has another order or an index is outside m.Dims,
// or when m.Clamp is not one of the two.
func (m *Model) Predict(cells *tensor.COO) ([]float64, error) {
	return m.moments(cells, nil)
}

// clampRule returns m.Clamp with "" read as ClampSamples, or an error
// for any other value than the two a model may hold.
func (m *Model) clampRule() (ClampRule, error) {
	switch m.Clamp {
	case "", ClampSamples:
		return ClampSamples, nil
	case ClampMean:
		return ClampMean, nil
	}
	return "", fmt.Errorf("bayes: model clamp rule %q: want %s or %s", m.Clamp, ClampSamples, ClampMean)
}

// moments returns Predict's means of cells and, when vari is not nil,
// overwrites vari[c] (len(vari) = cells.NNZ()) with the variance over the
// samples of the values the rule averages (each sample's clamped ŷ under
// ClampSamples, its ŷ under ClampMean).
func (m *Model) moments(cells *tensor.COO, vari []float64) ([]float64, error) {
	if err := checkQuery(cells, m.Dims, "cells"); err != nil {
		return nil, err
	}
	rule, err := m.clampRule()
	if err != nil {
		return nil, err
	}
	if len(m.samples) == 0 {
		return nil, errors.New("bayes: model holds no samples")
	}
	lo, hi := m.Min, m.Max
	if rule == ClampMean {
		lo, hi = math.Inf(-1), math.Inf(1)
	}
	n := len(m.Dims)
	out := make([]float64, cells.NNZ())
	sum, sq := make([]float64, m.Rank), make([]float64, m.Rank)
	for _, p := range m.samples {
		for c := range out {
			y := p.predict(cells.Idx[c*n:(c+1)*n], sum, sq)
			out[c] += min(max(y, lo), hi)
		}
	}
	s := float64(len(m.samples))
	for c := range out {
		out[c] /= s
	}
	if vari != nil {
		for c := range vari {
			vari[c] = 0
		}
		for _, p := range m.samples {
			for c := range out {
				d := min(max(p.predict(cells.Idx[c*n:(c+1)*n], sum, sq), lo), hi) - out[c]
				vari[c] += d * d
			}
		}
		for c := range vari {
			vari[c] /= s
		}
	}
	if rule == ClampMean {
		for c := range out {
			out[c] = min(max(out[c], m.Min), m.Max)
		}
	}
	return out, nil
}

// Variance returns, for each cell of cells (as Predict takes them), the
// variance over the kept samples of the predictions Predict averages
// (clamped under ClampSamples, raw under ClampMean): the posterior
// variance of the cell's mean prediction (epistemic; the noise 1/α is not
// added), 0 with one kept sample. Units: value². It returns Predict's
// errors.
func (m *Model) Variance(cells *tensor.COO) ([]float64, error) {
	if err := checkQuery(cells, m.Dims, "cells"); err != nil {
		return nil, err
	}
	out := make([]float64, cells.NNZ())
	if _, err := m.moments(cells, out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkTrain reports the first problem with the training tensor (empty:
// whether it may hold no cells, as one process's share may).
func checkTrain(t *tensor.COO, empty bool) error {
	if t == nil {
		return errors.New("bayes: no training tensor")
	}
	n := len(t.Dims)
	if n == 0 {
		return errors.New("bayes: training tensor of order 0")
	}
	for m, d := range t.Dims {
		if d < 1 || d > tensor.MaxDim {
			return fmt.Errorf("bayes: training mode %d has size %d, want 1..%d", m+1, d, tensor.MaxDim)
		}
	}
	nnz := len(t.Val)
	switch {
	case nnz == 0 && !empty:
		return errors.New("bayes: empty training tensor")
	case nnz > math.MaxInt32:
		return fmt.Errorf("bayes: %d training cells: at most %d", nnz, math.MaxInt32)
	case len(t.Idx) != nnz*n:
		return fmt.Errorf("bayes: training tensor has %d indices for %d cells of order %d", len(t.Idx), nnz, n)
	}
	for c, v := range t.Val {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("bayes: training cell %d has value %v", c, v)
		}
		for m, i := range t.Idx[c*n : (c+1)*n] {
			if i < 0 || int(i) >= t.Dims[m] {
				return fmt.Errorf("bayes: training cell %d: index %d in mode %d outside [0, %d)", c, i, m+1, t.Dims[m])
			}
		}
	}
	return nil
}

// checkQuery reports the first problem with a tensor of cells to predict
// over a model of mode sizes dims.
func checkQuery(t *tensor.COO, dims []int, what string) error {
	if t == nil {
		return fmt.Errorf("bayes: %s: nil tensor", what)
	}
	n := len(dims)
	if len(t.Dims) != n {
		return fmt.Errorf("bayes: %s: order %d, the training tensor's is %d", what, len(t.Dims), n)
	}
	if len(t.Idx) != len(t.Val)*n {
		return fmt.Errorf("bayes: %s: %d indices for %d cells of order %d", what, len(t.Idx), len(t.Val), n)
	}
	for c := range len(t.Val) {
		for m, i := range t.Idx[c*n : (c+1)*n] {
			if i < 0 || int(i) >= dims[m] {
				return fmt.Errorf("bayes: %s: cell %d: index %d in mode %d outside the training tensor's [0, %d)", what, c, i, m+1, dims[m])
			}
		}
	}
	return nil
}

// Fit runs cfg.Samples Gibbs sweeps of the Bayesian factorization machine
// on the training cells train (values in any unit; indices within
// train.Dims; duplicate cells are allowed and count as repeated
// observations) and returns the posterior-mean predictions for the cells
// of each query set (their indices must lie within train.Dims; their
// values are used only for Result.QueryRMSE).
//
// Memory: 4·N + 16 bytes per training cell (per-mode CSR lists of cell
// numbers, residual, factor sum; train itself is not copied and must not
// change during Fit), the parameters (Σ_n dims[n]·(K+1) float64s), 8
// bytes per query cell, and the kept samples (Config.KeepSamples).
//
// Errors: an invalid cfg (Config.Validate), a nil, empty or malformed
// training tensor, more than MaxParams parameters, a query set of another order or with an index outside
// train.Dims, or ctx's error when ctx is cancelled (checked between
// sweeps).
func Fit(ctx context.Context, train *tensor.COO, queries []*tensor.COO, cfg Config) (*Result, error) {
	return FitOn(ctx, cluster.Local{}, train, queries, cfg)
}

// FitOn is Fit spread over the processes of cl, each calling it with its
// own share of the training cells (train, which may be empty on some) and
// of every query set (the same number of sets, the same Dims and cfg on
// every process). Every sum over cells is taken over each process's
// share and added over the processes, and every process makes the same
// draws: the chain is Fit's on all the cells, but for the order in which
// those sums are added (on one process, cluster.Local, it is Fit's bit for
// bit). Each process's Result.Pred holds its own query cells'
// predictions; TrainRMSE, QueryRMSE, Alpha, Min, Max and Model are the
// same on every process. Memory per process: Fit's for its own cells,
// the parameters (replicated) and 16·max(dims) bytes more; each sweep adds
// 8·Σ_n dims[n]·(2K+1) bytes over the processes. It returns the same
// error on every process (naming the process's own problem where it had
// one).
func FitOn(ctx context.Context, cl cluster.Cluster, train *tensor.COO, queries []*tensor.COO, cfg Config) (*Result, error) {
	start := time.Now()
	err := cfg.Validate()
	if err == nil {
		err = checkTrain(train, cl.Size() > 1)
	}
	if err == nil && cfg.NewCells > train.NNZ() {
		err = fmt.Errorf("bayes: %d new cells among %d training cells", cfg.NewCells, train.NNZ())
	}
	for j, q := range queries {
		if err == nil {
			err = checkQuery(q, train.Dims, fmt.Sprintf("query set %d", j))
		}
	}
	if err = agree(cl, err); err != nil {
		return nil, err
	}
	params := 1.0
	for _, d := range train.Dims {
		params += float64(d) * float64(cfg.Rank+1)
	}
	if params > MaxParams {
		return nil, fmt.Errorf("bayes: %.4g parameters (1 + Σ dims·(rank+1), dims %v, rank %d): at most %d", params, train.Dims, cfg.Rank, MaxParams)
	}
	workers := cfg.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	real := train.NNZ() - cfg.NewCells
	lo, hi := valueRange(cl, train.Val[:real])
	if lo > hi {
		return nil, errors.New("bayes: no observed training cells")
	}
	dims := append([]int(nil), train.Dims...)
	s := newSampler(cl, dims, train.Idx, train.Val, real, cfg.Rank, cfg.Seed, cfg.InitStd, workers)
	s.shared = cfg.SharedPriors
	s.newWeight, s.newLearn = cfg.NewWeight, cfg.NewLearn
	s.refresh(lo, hi)

	rule := cfg.Clamp
	if rule == "" {
		rule = ClampSamples
	}
	res := &Result{
		Pred:      make([][]float64, len(queries)),
		TrainRMSE: make([]float64, 0, cfg.Samples),
		QueryRMSE: make([][]float64, len(queries)),
		Min:       lo, Max: hi,
	}
	// raw[j] sums the unclamped ŷ (ClampMean, ClampAuto); rmse[r][j] are
	// the running RMSEs under ClampSamples (r 0) and ClampMean (r 1);
	// last[r] the first query set's sum of squares after the last sweep.
	raw := make([][]float64, len(queries))
	var rmse [2][][]float64
	var last [2]float64
	counts := make([]int64, len(queries))
	for j, q := range queries {
		res.Pred[j] = make([]float64, q.NNZ())
		if rule != ClampSamples {
			raw[j] = make([]float64, q.NNZ())
		}
		counts[j] = int64(q.NNZ())
	}
	for r := range rmse {
		rmse[r] = make([][]float64, len(queries))
		for j := range queries {
			rmse[r][j] = make([]float64, 0, cfg.Samples-cfg.BurnIn)
		}
	}
	cl.SumI64(counts)
	keep := keepSweeps(cfg)
	if cfg.KeepSamples > 0 {
		res.Model = &Model{Dims: dims, Rank: cfg.Rank, Min: lo, Max: hi}
	}
	n := len(dims)
	for sweep := range cfg.Samples {
		if err := agree(cl, ctx.Err()); err != nil {
			return nil, err
		}
		s.sweep(sweep)
		sse := s.sumAll(s.refresh(lo, hi))
		res.TrainRMSE = append(res.TrainRMSE, math.Sqrt(sse/float64(s.all)))
		if sweep < cfg.BurnIn {
			s.progress(cfg, sweep, res, nil)
			continue
		}
		done := float64(sweep - cfg.BurnIn + 1)
		for j, q := range queries {
			sum, rsum := res.Pred[j], raw[j]
			// Each block's squared errors under the two rules.
			var blocks [][2]float64
			if rsum != nil {
				blocks = make([][2]float64, (q.NNZ()+cellBlock-1)/cellBlock)
			}
			se := s.sumBlocks(q.NNZ(), func(w, a, b int) float64 {
				sc := s.scratch[w]
				var se, seRaw float64
				for c := a; c < b; c++ {
					p := s.predict(q.Idx[c*n:(c+1)*n], sc[:s.k], sc[s.k:])
					sum[c] += min(max(p, lo), hi)
					d := sum[c]/done - q.Val[c]
					se += d * d
					if rsum != nil {
						rsum[c] += p
						d = min(max(rsum[c]/done, lo), hi) - q.Val[c]
						seRaw += d * d
					}
				}
				if rsum != nil {
					blocks[a/cellBlock] = [2]float64{se, seRaw}
				}
				return se
			})
			seRaw := 0.0
			for _, b := range blocks {
				seRaw += b[1]
			}
			if rsum != nil {
				both := []float64{se, seRaw}
				s.cl.SumF64(both)
				se, seRaw = both[0], both[1]
			} else {
				se = s.sumAll(se)
			}
			for r, x := range []float64{se, seRaw} {
				rmse[r][j] = append(rmse[r][j], math.Sqrt(x/float64(counts[j])))
			}
			if j == 0 {
				last = [2]float64{se, seRaw}
			}
		}
		if keep[sweep] {
			res.Model.samples = append(res.Model.samples, s.params.clone())
			res.Model.hyper = append(res.Model.hyper, s.hyperClone())
		}
		r := 0
		if rule == ClampMean {
			r = 1
		}
		for j := range queries {
			res.QueryRMSE[j] = rmse[r][j]
		}
		s.progress(cfg, sweep, res, queries)
		if converged(cfg, rule, rmse, counts) {
			if res.Model != nil && !keep[sweep] {
				// The stop's sweep is kept, as the schedule's last is.
				res.Model.samples = append(res.Model.samples, s.params.clone())
				res.Model.hyper = append(res.Model.hyper, s.hyperClone())
			}
			res.Sweeps = sweep + 1
			break
		}
	}
	if res.Sweeps == 0 {
		res.Sweeps = cfg.Samples
	}
	if rule == ClampAuto {
		rule = ClampSamples
		if len(queries) > 0 && counts[0] > 0 {
			res.ValMSE = []float64{last[0] / float64(counts[0]), last[1] / float64(counts[0])}
			if res.ValMSE[1] < res.ValMSE[0] {
				rule = ClampMean
			}
		}
	}
	r := 0
	if rule == ClampMean {
		r = 1
	}
	for j := range queries {
		res.QueryRMSE[j] = rmse[r][j]
	}
	res.Clamp = rule
	if res.Model != nil {
		res.Model.Clamp = rule
	}
	total := float64(res.Sweeps - cfg.BurnIn)
	for j, p := range res.Pred {
		for c := range p {
			if raw[j] != nil {
				p[c] = rule.apply(p[c], raw[j][c], total, lo, hi)
			} else {
				p[c] /= total
			}
		}
	}
	res.Alpha = s.alpha
	if s.allNew > 0 {
		res.AlphaNew = s.alphaN
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// converged reports whether cfg.StopWindow ends the chain now: the first
// query set's RMSE of the running average (under rule; the lower of the
// two rules' with ClampAuto) is above (1 − StopTol) times its value
// StopWindow sweeps before. The RMSEs are over every process, so every
// process decides alike.
func converged(cfg Config, rule ClampRule, rmse [2][][]float64, counts []int64) bool {
	w := cfg.StopWindow
	if w <= 0 || len(counts) == 0 || counts[0] == 0 {
		return false
	}
	at := func(k int) float64 {
		a := rmse[0][0][k]
		switch rule {
		case ClampMean:
			a = rmse[1][0][k]
		case ClampAuto:
			a = min(a, rmse[1][0][k])
		}
		return a
	}
	n := len(rmse[0][0])
	if n <= w {
		return false
	}
	return at(n-1) > (1-cfg.StopTol)*at(n-1-w)
}

// errOther is the error of a process whose own input and context were
// fine when another process's were not.
var errOther = errors.New("bayes: another process stopped the fit (its error is its own)")

// agree returns err, or errOther when err is nil but another process of
// cl had one, so that every process leaves the collectives together. On
// one process it returns err.
func agree(cl cluster.Cluster, err error) error {
	if cl.Size() == 1 {
		return err
	}
	bad := []int64{0}
	if err != nil {
		bad[0] = 1
	}
	cl.SumI64(bad)
	if err == nil && bad[0] > 0 {
		return errOther
	}
	return err
}

// valueRange returns the smallest and largest of the values y over every
// process of cl (lo > hi when there are none).
func valueRange(cl cluster.Cluster, y []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range y {
		lo, hi = min(lo, v), max(hi, v)
	}
	if cl.Size() == 1 {
		return lo, hi
	}
	all := cl.GatherF64([]float64{lo, hi})
	for r := 0; r < len(all); r += 2 {
		lo, hi = min(lo, all[r]), max(hi, all[r+1])
	}
	return lo, hi
}

// keepSweeps returns which sweeps' samples go into Result.Model:
// KeepSamples sweeps evenly spaced over BurnIn..Samples−1, the last
// included.
func keepSweeps(cfg Config) map[int]bool {
	keep := map[int]bool{}
	after := cfg.Samples - cfg.BurnIn
	for j := range cfg.KeepSamples {
		keep[cfg.BurnIn+(j+1)*after/cfg.KeepSamples-1] = true
	}
	return keep
}

// progress writes sweep's line to cfg.Progress.
func (s *sampler) progress(cfg Config, sweep int, res *Result, queries []*tensor.COO) {
	if cfg.Progress == nil {
		return
	}
	line := fmt.Sprintf("bayes-fm: sweep %d/%d: train RMSE %.5f, alpha %.4g", sweep+1, cfg.Samples, res.TrainRMSE[sweep], s.alpha)
	if sweep < cfg.BurnIn {
		line += " (burn-in)"
	}
	for j := range queries {
		q := res.QueryRMSE[j]
		line += fmt.Sprintf(", query %d RMSE %.5f", j, q[len(q)-1])
	}
	fmt.Fprintln(cfg.Progress, line)
}
