package bayes

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/cluster/clustertest"
	"github.com/dainx/dainx/tensor"
)

// fmTensor returns nnz distinct random cells of a dims tensor whose values
// are an order-2 factorization machine of rank k (w0 = 1, biases N(0,
// 0.3²), factors N(0, 0.7²)) plus N(0, sigma²) noise, and the noise-free
// values.
func fmTensor(dims []int, k, nnz int, sigma float64, seed uint64) (*tensor.COO, []float64) {
	r := rand.New(rand.NewPCG(seed, 7))
	n := len(dims)
	p := &params{k: k, w0: 1, w: make([][]float64, n), v: make([][]float64, n)}
	for m, d := range dims {
		p.w[m] = make([]float64, d)
		p.v[m] = make([]float64, d*k)
		for i := range p.w[m] {
			p.w[m][i] = 0.3 * r.NormFloat64()
		}
		for i := range p.v[m] {
			p.v[m][i] = 0.7 * r.NormFloat64()
		}
	}
	t := &tensor.COO{Dims: slices.Clone(dims)}
	seen := map[[8]int32]bool{}
	clean := make([]float64, 0, nnz)
	sum, sq := make([]float64, k), make([]float64, k)
	for len(t.Val) < nnz {
		var key [8]int32
		cell := make([]int32, n)
		for m, d := range dims {
			cell[m] = int32(r.IntN(d))
			key[m] = cell[m]
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		y := p.predict(cell, sum, sq)
		clean = append(clean, y)
		t.Idx = append(t.Idx, cell...)
		t.Val = append(t.Val, y+sigma*r.NormFloat64())
	}
	return t, clean
}

// splitCOO returns the first (1−frac) of t's cells and the rest.
func splitCOO(t *tensor.COO, frac float64) (train, test *tensor.COO) {
	nTest := int(frac * float64(t.NNZ()))
	var tr, te []int
	for c := range t.NNZ() {
		if c < t.NNZ()-nTest {
			tr = append(tr, c)
		} else {
			te = append(te, c)
		}
	}
	return t.Subset(tr), t.Subset(te)
}

func rmse(p, y []float64) float64 {
	var s float64
	for i := range p {
		s += (p[i] - y[i]) * (p[i] - y[i])
	}
	return math.Sqrt(s / float64(len(p)))
}

// TestRecoversSyntheticTensor: the Gibbs sampler completes held-out cells
// of a 60×50×40 tensor drawn from the model class (rank 3, noise σ = 0.1,
// 15,000 cells, 10% held out) to within the noise.
func TestRecoversSyntheticTensor(t *testing.T) {
	const sigma = 0.1
	x, _ := fmTensor([]int{60, 50, 40}, 3, 15000, sigma, 1)
	train, test := splitCOO(x, 0.1)
	cfg := Config{Rank: 3, Samples: 150, BurnIn: 50, Seed: 3, InitStd: 0.1}
	res, err := Fit(context.Background(), train, []*tensor.COO{test}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := rmse(res.Pred[0], test.Val)
	var mean float64
	for _, v := range train.Val {
		mean += v
	}
	mean /= float64(train.NNZ())
	base := rmse(slices.Repeat([]float64{mean}, test.NNZ()), test.Val)
	noise := 1 / math.Sqrt(res.Alpha)
	t.Logf("held-out RMSE %.4f (σ = %.2f, mean predictor %.4f), train RMSE %.4f, sampled noise sd %.4f, %v",
		got, sigma, base, res.TrainRMSE[len(res.TrainRMSE)-1], noise, res.Elapsed)
	if got > 1.15*sigma || got > base/5 {
		t.Errorf("held-out RMSE %.4f: want < %.4f (1.15σ) and < %.4f (mean predictor / 5)", got, 1.15*sigma, base/5)
	}
	if last := res.QueryRMSE[0][len(res.QueryRMSE[0])-1]; math.Abs(last-got) > 1e-12 {
		t.Errorf("last QueryRMSE %v, RMSE of Pred %v", last, got)
	}
	if math.Abs(noise-sigma) > 0.2*sigma {
		t.Errorf("sampled noise sd %.4f, true %.2f", noise, sigma)
	}
}

// TestDeterministic: the same seed gives the same chain bit for bit, for
// any number of workers; another seed gives another chain.
func TestDeterministic(t *testing.T) {
	x, _ := fmTensor([]int{40, 30, 20}, 2, 12000, 0.1, 2)
	train, test := splitCOO(x, 0.1)
	run := func(seed uint64, workers int) *Result {
		cfg := Config{Rank: 4, Samples: 6, BurnIn: 2, Seed: seed, InitStd: 0.1, Workers: workers, KeepSamples: 4}
		res, err := Fit(context.Background(), train, []*tensor.COO{test, train}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, c := run(5, 1), run(5, 3), run(6, 2)
	if !slices.Equal(a.TrainRMSE, b.TrainRMSE) || !slices.Equal(a.Pred[0], b.Pred[0]) || !slices.Equal(a.Pred[1], b.Pred[1]) || a.Alpha != b.Alpha {
		t.Errorf("seed 5 with 1 and 3 workers differ: train RMSE %v vs %v", a.TrainRMSE, b.TrainRMSE)
	}
	if slices.Equal(a.Pred[0], c.Pred[0]) {
		t.Error("seeds 5 and 6 gave the same predictions")
	}
	// All post-burn-in samples kept: Model.Predict equals Result.Pred.
	p, err := a.Model.Predict(test)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p {
		if math.Abs(p[i]-a.Pred[0][i]) > 1e-12 {
			t.Fatalf("Model.Predict cell %d = %v, Result.Pred %v", i, p[i], a.Pred[0][i])
		}
	}
}

// TestBadInputs: invalid configurations and tensors are errors.
func TestBadInputs(t *testing.T) {
	x, _ := fmTensor([]int{5, 4, 3}, 2, 30, 0.1, 3)
	ok := Config{Rank: 2, Samples: 3, BurnIn: 1, Seed: 1, InitStd: 0.1}
	outside := x.Clone()
	outside.Dims[1] = 10
	outside.Idx[1] = 7 // mode 2 of cell 0: outside the training tensor's 4
	order2 := &tensor.COO{Dims: []int{5, 4}, Idx: []int32{0, 0}, Val: []float64{1}}
	nan := x.Clone()
	nan.Val[3] = math.NaN()
	badIdx := x.Clone()
	badIdx.Idx[4] = 9
	short := x.Clone()
	short.Idx = short.Idx[:len(short.Idx)-1]
	cases := []struct {
		name    string
		train   *tensor.COO
		queries []*tensor.COO
		cfg     func(*Config)
		want    string
	}{
		{"rank 0", x, nil, func(c *Config) { c.Rank = 0 }, "rank 0"},
		{"samples 0", x, nil, func(c *Config) { c.Samples, c.BurnIn = 0, 0 }, "samples"},
		{"burn-in = samples", x, nil, func(c *Config) { c.BurnIn = 3 }, "burn-in"},
		{"burn-in > samples", x, nil, func(c *Config) { c.BurnIn = 4 }, "burn-in"},
		{"negative burn-in", x, nil, func(c *Config) { c.BurnIn = -1 }, "burn-in"},
		{"NaN init", x, nil, func(c *Config) { c.InitStd = math.NaN() }, "init std"},
		{"keep too many", x, nil, func(c *Config) { c.KeepSamples = 3 }, "keep"},
		{"negative workers", x, nil, func(c *Config) { c.Workers = -1 }, "workers"},
		{"nil train", nil, nil, nil, "no training"},
		{"empty train", &tensor.COO{Dims: []int{5, 4, 3}}, nil, nil, "empty"},
		{"NaN value", nan, nil, nil, "value NaN"},
		{"train index", badIdx, nil, nil, "outside"},
		{"short Idx", short, nil, nil, "indices"},
		{"query outside dims", x, []*tensor.COO{x, outside}, nil, "query set 1: cell 0: index 7 in mode 2"},
		{"query order", x, []*tensor.COO{order2}, nil, "order 2"},
		{"nil query", x, []*tensor.COO{nil}, nil, "nil"},
		{"too many parameters", &tensor.COO{Dims: []int{1 << 30, 4, 3}, Idx: []int32{0, 0, 0}, Val: []float64{1}}, nil, nil, "parameters"},
	}
	for _, tc := range cases {
		cfg := ok
		if tc.cfg != nil {
			tc.cfg(&cfg)
		}
		res, err := Fit(context.Background(), tc.train, tc.queries, cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, %v; want an error containing %q", tc.name, res, err, tc.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Fit(ctx, x, nil, ok); err != context.Canceled {
		t.Errorf("cancelled context: %v", err)
	}
	res, err := Fit(context.Background(), x, nil, Config{Rank: 2, Samples: 3, BurnIn: 1, KeepSamples: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Model.Predict(outside); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("Model.Predict of a cell outside Dims: %v", err)
	}
}

// TestPredictIsPairwiseSum: params.predict equals the model's definition,
// w0 + Σ_n w_n[i_n] + Σ_{n<m} ⟨V_n[i_n], V_m[i_m]⟩, summed pair by pair.
func TestPredictIsPairwiseSum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dims, k := []int{3, 4, 2, 5}, 3
	p := &params{k: k, w0: r.NormFloat64(), w: make([][]float64, 4), v: make([][]float64, 4)}
	for m, d := range dims {
		p.w[m] = make([]float64, d)
		p.v[m] = make([]float64, d*k)
		for i := range p.w[m] {
			p.w[m][i] = r.NormFloat64()
		}
		for i := range p.v[m] {
			p.v[m][i] = r.NormFloat64()
		}
	}
	for range 50 {
		cell := make([]int32, len(dims))
		for m, d := range dims {
			cell[m] = int32(r.IntN(d))
		}
		want := p.w0
		for n := range dims {
			want += p.w[n][cell[n]]
			for m := n + 1; m < len(dims); m++ {
				for f := range k {
					want += p.v[n][int(cell[n])*k+f] * p.v[m][int(cell[m])*k+f]
				}
			}
		}
		if got := p.predict(cell, make([]float64, k), make([]float64, k)); math.Abs(got-want) > 1e-12 {
			t.Fatalf("cell %v: predict %v, pairwise sum %v", cell, got, want)
		}
	}
}

// checkMoments fails t when draws' mean or variance is off the normal
// N(mean, 1/prec) by more than 5 standard errors.
func checkMoments(t *testing.T, what string, draws []float64, mean, variance float64) {
	t.Helper()
	n := float64(len(draws))
	var m, v float64
	for _, x := range draws {
		m += x
	}
	m /= n
	for _, x := range draws {
		v += (x - m) * (x - m)
	}
	v /= n - 1
	seMean := math.Sqrt(variance / n)
	seVar := variance * math.Sqrt(2/(n-1)) // normal draws
	if math.Abs(m-mean) > 5*seMean || math.Abs(v-variance) > 5*seVar {
		t.Errorf("%s: empirical mean %.6g, variance %.6g; closed form %.6g, %.6g (se %.2g, %.2g)", what, m, v, mean, variance, seMean, seVar)
	}
}

// TestConditionals: with α and the hyperparameters fixed, repeated draws of
// one w or V entry follow the Gaussian full conditional computed here by
// brute force from the model's definition (ŷ_c = g_c + θ·h_c, θ | rest ~
// N((α Σ h(y − g) + λμ)/(α Σ h² + λ), 1/(α Σ h² + λ))), and the residuals
// and factor sums kept by the sampler stay equal to their definitions. The
// hyperparameter and noise-precision draws match their Gamma and Normal
// conditionals too.
func TestConditionals(t *testing.T) {
	x, _ := fmTensor([]int{6, 5, 4}, 2, 60, 0.3, 4)
	s := newSampler(cluster.Local{}, x.Dims, x.Idx, x.Val, x.NNZ(), 2, 9, 0.5, 1)
	s.refresh(math.Inf(-1), math.Inf(1))
	for sweep := range 3 { // a non-trivial state
		s.sweep(sweep)
		s.refresh(math.Inf(-1), math.Inf(1))
	}
	// A small α so that the priors weigh as much as the cells.
	s.alpha = 0.8
	for m := range s.n {
		s.muW[m], s.lamW[m] = 1+0.5*float64(m), 3+float64(m)
		for f := range s.k {
			s.muV[m][f], s.lamV[m][f] = 0.8+0.3*float64(f+m), 2+float64(f)
		}
	}
	// closed returns the conditional mean and variance of the parameter
	// at *theta with prior (mu, lam), from ŷ at θ = 0 and θ = 1.
	closed := func(theta *float64, mu, lam float64) (float64, float64) {
		old := *theta
		defer func() { *theta = old }()
		sum, sq := make([]float64, s.k), make([]float64, s.k)
		var shy, shh float64
		for c := range s.nnz {
			cell := s.idx[c*s.n : (c+1)*s.n]
			*theta = 0
			g := s.predict(cell, sum, sq)
			*theta = 1
			h := s.predict(cell, sum, sq) - g
			shy += h * (s.y[c] - g)
			shh += h * h
		}
		prec := s.alpha*shh + lam
		return (s.alpha*shy + lam*mu) / prec, 1 / prec
	}
	const draws = 20000
	r := rand.New(rand.NewPCG(11, 12))
	m, i := 1, 2
	mean, variance := closed(&s.w[m][i], s.muW[m], s.lamW[m])
	got := make([]float64, draws)
	for d := range got {
		t, tn := s.sumW(m, i)
		s.drawW(m, i, t, tn, r.NormFloat64())
		got[d] = s.w[m][i]
	}
	checkMoments(t, "w[1][2]", got, mean, variance)
	for _, mi := range [][3]int{{0, 3, 1}, {2, 1, 0}} {
		m, i, f := mi[0], mi[1], mi[2]
		s.fillQ(f)
		mean, variance := closed(&s.v[m][i*s.k+f], s.muV[m][f], s.lamV[m][f])
		for d := range got {
			t, hh, tn, hhn := s.sumV(m, i)
			s.drawV(m, i, f, t, hh, tn, hhn, r.NormFloat64())
			got[d] = s.v[m][i*s.k+f]
		}
		checkMoments(t, "V entry", got, mean, variance)
		// The sampler's q and e still match their definitions.
		sum, sq := make([]float64, s.k), make([]float64, s.k)
		for c := range s.nnz {
			cell := s.idx[c*s.n : (c+1)*s.n]
			var q float64
			for n, j := range cell {
				q += s.v[n][int(j)*s.k+f]
			}
			if e := s.y[c] - s.predict(cell, sum, sq); math.Abs(e-s.eq[c].e) > 1e-9 || math.Abs(q-s.eq[c].q) > 1e-9 {
				t.Fatalf("cell %d: residual %v, kept %v; q %v, kept %v", c, e, s.eq[c].e, q, s.eq[c].q)
			}
		}
	}

	// w0 under its flat prior: N(Σ_c (y_c − g_c)/nnz, 1/(α·nnz)), g_c the
	// prediction without w0.
	var w0mean float64
	{
		sum, sq := make([]float64, s.k), make([]float64, s.k)
		for c := range s.nnz {
			w0mean += s.y[c] - s.predict(s.idx[c*s.n:(c+1)*s.n], sum, sq) + s.w0
		}
		w0mean /= float64(s.nnz)
	}
	for d := range got {
		s.drawW0()
		got[d] = s.w0
	}
	checkMoments(t, "w0", got, w0mean, 1/(s.alpha*float64(s.nnz)))

	// Hyperparameters of mode 0's w, with μ = 0.4 going in:
	// λ ~ Gamma((α0+J+1)/2, (γ0 + β0(μ−μ0)² + Σ(θ−μ)²)/2), μ | λ normal.
	theta := s.w[0]
	const muIn = 0.4
	J := float64(len(theta))
	rate := prGamma0 + prBeta0*(muIn-prMu0)*(muIn-prMu0)
	var sumTheta float64
	for _, v := range theta {
		rate += (v - muIn) * (v - muIn)
		sumTheta += v
	}
	shape, rate := (prAlpha0+J+1)/2, rate/2
	lams, zs := make([]float64, draws), make([]float64, draws)
	for d := range lams {
		lam, mu := s.drawHyper([][]float64{theta}, 0, 1, muIn)
		lams[d] = lam
		zs[d] = (mu - (sumTheta+prBeta0*prMu0)/(J+prBeta0)) * math.Sqrt((J+prBeta0)*lam)
	}
	checkGamma(t, "λ_w", lams, shape, rate)
	checkMoments(t, "standardised μ_w", zs, 0, 1)

	// A group over two modes' factor f = 1 (Config.SharedPriors): J is
	// the number of their entities, the sums run over both.
	{
		xs, f := [][]float64{s.v[0], s.v[2]}, 1
		J := float64(s.dims[0] + s.dims[2])
		rate := prGamma0 + prBeta0*(muIn-prMu0)*(muIn-prMu0)
		var sum float64
		for _, x := range xs {
			for i := f; i < len(x); i += s.k {
				rate += (x[i] - muIn) * (x[i] - muIn)
				sum += x[i]
			}
		}
		for d := range lams {
			lam, mu := s.drawHyper(xs, f, s.k, muIn)
			lams[d] = lam
			zs[d] = (mu - (sum+prBeta0*prMu0)/(J+prBeta0)) * math.Sqrt((J+prBeta0)*lam)
		}
		checkGamma(t, "shared λ_v", lams, (prAlpha0+J+1)/2, rate/2)
		checkMoments(t, "shared standardised μ_v", zs, 0, 1)
	}

	// α ~ Gamma((α0 + nnz)/2, (γ0 + Σe²)/2).
	var sse float64
	for _, x := range s.eq {
		sse += x.e * x.e
	}
	alphas := make([]float64, draws)
	for d := range alphas {
		s.drawAlpha()
		alphas[d] = s.alpha
	}
	checkGamma(t, "α", alphas, (prAlpha0+float64(s.nnz))/2, (prGamma0+sse)/2)
	for _, sh := range []float64{0.3, 1, 4.5} {
		g := make([]float64, draws)
		for d := range g {
			g[d] = gammaRate(s.rng, sh, 2)
		}
		checkGamma(t, "gammaRate", g, sh, 2)
	}
}

// checkGamma compares the mean and variance of draws with Gamma(shape,
// rate)'s shape/rate and shape/rate².
func checkGamma(t *testing.T, what string, draws []float64, shape, rate float64) {
	t.Helper()
	n := float64(len(draws))
	var m, v float64
	for _, x := range draws {
		m += x
	}
	m /= n
	for _, x := range draws {
		v += (x - m) * (x - m)
	}
	v /= n - 1
	mean, variance := shape/rate, shape/(rate*rate)
	seMean := math.Sqrt(variance / n)
	// sd of the sample variance: √((μ4 − σ⁴)/n), μ4 = 3σ⁴(1 + 2/shape).
	seVar := variance * math.Sqrt((2+6/shape)/n)
	if math.Abs(m-mean) > 5*seMean || math.Abs(v-variance) > 5*seVar {
		t.Errorf("%s: empirical mean %.6g, variance %.6g; Gamma(%.4g, %.4g) has %.6g, %.6g", what, m, v, shape, rate, mean, variance)
	}
}

// BenchmarkSweep times one Gibbs sweep (with the residual refresh) on a
// MovieLens-sized tensor: 610×9724×8215, 72,600 cells, rank 32.
func BenchmarkSweep(b *testing.B) {
	x, _ := fmTensor([]int{610, 9724, 8215}, 2, 72600, 0.5, 5)
	s := newSampler(cluster.Local{}, x.Dims, x.Idx, x.Val, x.NNZ(), 32, 1, 0.1, 1)
	s.refresh(math.Inf(-1), math.Inf(1))
	b.ResetTimer()
	for i := range b.N {
		s.sweep(i)
		s.refresh(math.Inf(-1), math.Inf(1))
	}
}

// TestForDraws: entity i's variate does not depend on how 0..n−1 is cut
// into ranges, and the variates are standard normal.
func TestForDraws(t *testing.T) {
	const n = 20001
	key := func(p int) uint64 { return drawKey(3, 1, 1, 2, 5, p) }
	whole := make([]float64, n)
	forDraws(0, n, key, func(i int, z float64) { whole[i] = z })
	cut := make([]float64, n)
	for _, r := range [][2]int{{0, 7}, {7, 8}, {8, 1000}, {1000, 1001}, {1001, n}} {
		forDraws(r[0], r[1], key, func(i int, z float64) {
			if cut[i] != 0 {
				t.Fatalf("entity %d drawn twice", i)
			}
			cut[i] = z
		})
	}
	if !slices.Equal(whole, cut) {
		t.Error("the variates depend on the ranges")
	}
	checkMoments(t, "forDraws", whole, 0, 1)
	var c float64 // correlation of the two variates of a pair
	for i := 0; i+1 < n; i += 2 {
		c += whole[i] * whole[i+1]
	}
	if c /= n / 2; math.Abs(c) > 5/math.Sqrt(n/2) {
		t.Errorf("pair correlation %.4f", c)
	}
}

// TestFitOnRanks: FitOn over ranks (goroutines) holding shares of the
// training and query cells — one of them none — gives Fit's chain: on one
// rank bit for bit, on several the same predictions, training RMSEs and α
// up to the order of the sums (far below the chain's own variation), and
// the same kept model on every rank. A rank's bad input stops every rank.
func TestFitOnRanks(t *testing.T) {
	x, _ := fmTensor([]int{30, 20, 10}, 3, 3000, 0.3, 4)
	q := &tensor.COO{Dims: x.Dims, Idx: x.Idx[:600], Val: x.Val[:200]}
	cfg := DefaultConfig()
	cfg.Samples, cfg.Rank, cfg.KeepSamples, cfg.BurnIn = 25, 4, 2, 5
	want, err := Fit(context.Background(), x, []*tensor.COO{q}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	part := func(c *tensor.COO, lo, hi int) *tensor.COO {
		n := len(c.Dims)
		return &tensor.COO{Dims: c.Dims, Idx: c.Idx[lo*n : hi*n], Val: c.Val[lo:hi]}
	}
	for _, cuts := range [][]float64{{0, 1}, {0, 0.4, 1}, {0, 0.3, 0.3, 1}} {
		p := len(cuts) - 1
		res := make([]*Result, p)
		errs := make([]error, p)
		clustertest.Run(p, func(r clustertest.Rank) {
			k := r.Rank()
			tr := part(x, int(cuts[k]*float64(x.NNZ())), int(cuts[k+1]*float64(x.NNZ())))
			qs := part(q, int(cuts[k]*float64(q.NNZ())), int(cuts[k+1]*float64(q.NNZ())))
			res[k], errs[k] = FitOn(context.Background(), r, tr, []*tensor.COO{qs}, cfg)
		})
		var pred []float64
		for k, r := range res {
			if errs[k] != nil {
				t.Fatalf("%d ranks: rank %d: %v", p, k, errs[k])
			}
			pred = append(pred, r.Pred[0]...)
			if !slices.Equal(r.TrainRMSE, res[0].TrainRMSE) || r.Alpha != res[0].Alpha || !slices.Equal(r.Model.samples[1].v[2], res[0].Model.samples[1].v[2]) {
				t.Fatalf("%d ranks: rank %d's chain differs from rank 0's", p, k)
			}
		}
		got := res[0]
		if p == 1 && (!slices.Equal(pred, want.Pred[0]) || !slices.Equal(got.TrainRMSE, want.TrainRMSE) || got.Alpha != want.Alpha) {
			t.Fatalf("one rank: not Fit's chain bit for bit")
		}
		close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }
		for c := range pred {
			if !close(pred[c], want.Pred[0][c]) {
				t.Fatalf("%d ranks: query cell %d predicted %v, Fit's %v", p, c, pred[c], want.Pred[0][c])
			}
		}
		for s := range want.TrainRMSE {
			if !close(got.TrainRMSE[s], want.TrainRMSE[s]) {
				t.Fatalf("%d ranks: sweep %d training RMSE %v, Fit's %v", p, s, got.TrainRMSE[s], want.TrainRMSE[s])
			}
		}
		if last := len(want.QueryRMSE[0]) - 1; !close(got.QueryRMSE[0][last], want.QueryRMSE[0][last]) || !close(got.Alpha, want.Alpha) || got.Min != want.Min || got.Max != want.Max {
			t.Fatalf("%d ranks: query RMSE %v, α %v, range [%v, %v]; Fit's %v, %v, [%v, %v]", p, got.QueryRMSE[0][last], got.Alpha, got.Min, got.Max, want.QueryRMSE[0][last], want.Alpha, want.Min, want.Max)
		}
	}
	errs := make([]error, 2)
	clustertest.Run(2, func(r clustertest.Rank) {
		tr := part(x, r.Rank()*100, r.Rank()*100+100)
		if r.Rank() == 1 {
			tr = &tensor.COO{Dims: x.Dims, Idx: []int32{0, 0, 99}, Val: []float64{1}} // index outside mode 3
		}
		_, errs[r.Rank()] = FitOn(context.Background(), r, tr, nil, cfg)
	})
	if !errors.Is(errs[0], errOther) || errs[1] == nil || !strings.Contains(errs[1].Error(), "outside") {
		t.Fatalf("a bad share on rank 1: errors %v", errs)
	}
}

// withNew returns obs's cells followed by aug's, as one training tensor
// whose last aug.NNZ() cells are new (Config.NewCells).
func withNew(obs, aug *tensor.COO) *tensor.COO {
	return &tensor.COO{Dims: obs.Dims, Idx: slices.Concat(obs.Idx, aug.Idx), Val: slices.Concat(obs.Val, aug.Val)}
}

// TestNewCellsNoiseRecovery: with NewLearn the chain recovers both noise
// levels of a tensor from the model class whose observed cells have noise
// σ = 0.1 and whose new cells have σ_new = 0.4 (the sampled 1/√α and
// 1/√α_new within 20%); with NewWeight it holds α_new = NewWeight·α; and
// weighting the noisy new cells down completes the held-out cells better
// than counting them as observations.
func TestNewCellsNoiseRecovery(t *testing.T) {
	const sigma, sigmaNew = 0.1, 0.4
	x, clean := fmTensor([]int{60, 50, 40}, 3, 20000, sigma, 11)
	obs, rest := splitCOO(x, 0.4) // 12000 observed cells
	aug, test := splitCOO(rest, 0.25)
	// The new cells' values: the clean value plus noise of sd σ_new.
	r := rand.New(rand.NewPCG(12, 1))
	aug = &tensor.COO{Dims: aug.Dims, Idx: aug.Idx, Val: slices.Clone(aug.Val)}
	for c := range aug.Val {
		aug.Val[c] = clean[obs.NNZ()+c] + sigmaNew*r.NormFloat64()
	}
	train := withNew(obs, aug)
	fit := func(c Config) *Result {
		c.Rank, c.Samples, c.BurnIn, c.Seed, c.InitStd = 3, 150, 50, 3, 0.1
		res, err := Fit(context.Background(), train, []*tensor.COO{test}, c)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	learn := fit(Config{NewCells: aug.NNZ(), NewLearn: true})
	sd, sdNew := 1/math.Sqrt(learn.Alpha), 1/math.Sqrt(learn.AlphaNew)
	t.Logf("learned: noise sd %.4f (true %.2f), new cells' %.4f (true %.2f), held-out RMSE %.4f", sd, sigma, sdNew, sigmaNew, rmse(learn.Pred[0], test.Val))
	if math.Abs(sd-sigma) > 0.2*sigma || math.Abs(sdNew-sigmaNew) > 0.2*sigmaNew {
		t.Errorf("sampled noise sd %.4f and %.4f; true %.2f and %.2f", sd, sdNew, sigma, sigmaNew)
	}
	weighted := fit(Config{NewCells: aug.NNZ(), NewWeight: 0.25})
	if got := weighted.AlphaNew / weighted.Alpha; math.Abs(got-0.25) > 1e-12 {
		t.Errorf("NewWeight 0.25: α_new/α = %v", got)
	}
	plain := fit(Config{})
	if plain.AlphaNew != 0 {
		t.Errorf("no new cells: AlphaNew %v, want 0", plain.AlphaNew)
	}
	a, b := rmse(learn.Pred[0], test.Val), rmse(plain.Pred[0], test.Val)
	t.Logf("held-out RMSE: new cells learned %.4f, as observations %.4f", a, b)
	if !(a < b) {
		t.Errorf("held-out RMSE %.4f with α_new learned, %.4f with the noisy cells as observations: want lower", a, b)
	}
}

// TestNewCellsNone: NewCells 0 is the chain without new cells bit for bit
// (the default path), and a chain whose last cells are new differs from
// one that counts them as observations; new cells are refused where they
// cannot be.
func TestNewCellsNone(t *testing.T) {
	x, _ := fmTensor([]int{30, 20, 10}, 3, 3000, 0.3, 4)
	cfg := Config{Rank: 4, Samples: 10, Seed: 2, InitStd: 0.1}
	a, err := Fit(context.Background(), x, []*tensor.COO{x}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.NewWeight, cfg.NewLearn = 0.5, true // ignored without NewCells
	b, err := Fit(context.Background(), x, []*tensor.COO{x}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Pred[0], b.Pred[0]) || a.Alpha != b.Alpha {
		t.Error("NewWeight and NewLearn without NewCells changed the chain")
	}
	cfg.NewCells, cfg.NewLearn = 1000, false
	c, err := Fit(context.Background(), x, []*tensor.COO{x}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a.Pred[0], c.Pred[0]) {
		t.Error("1000 new cells of weight 0.5 gave the chain without new cells")
	}
	for _, bad := range []Config{{NewCells: -1}, {NewCells: 10}, {NewCells: 10, NewWeight: -1}, {NewCells: 10, NewWeight: 2 * MaxNewWeight}, {NewCells: 3001, NewWeight: 1}} {
		bad.Rank, bad.Samples = 2, 2
		if _, err := Fit(context.Background(), x, nil, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestNewCellsOnRanks: with new cells on some ranks (none on one), FitOn
// over ranks gives Fit's chain up to the order of the sums.
func TestNewCellsOnRanks(t *testing.T) {
	x, _ := fmTensor([]int{30, 20, 10}, 3, 3000, 0.3, 5)
	obs, aug := splitCOO(x, 0.3)
	q := &tensor.COO{Dims: x.Dims, Idx: x.Idx[:600], Val: x.Val[:200]}
	cfg := Config{Rank: 4, Samples: 20, Seed: 3, InitStd: 0.1, NewCells: aug.NNZ(), NewLearn: true}
	want, err := Fit(context.Background(), withNew(obs, aug), []*tensor.COO{q}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	part := func(c *tensor.COO, lo, hi int) *tensor.COO {
		n := len(c.Dims)
		return &tensor.COO{Dims: c.Dims, Idx: c.Idx[lo*n : hi*n], Val: c.Val[lo:hi]}
	}
	// Rank 0: half the observed cells and every new cell; rank 1: the
	// other half, no new cell.
	res := make([]*Result, 2)
	errs := make([]error, 2)
	clustertest.Run(2, func(r clustertest.Rank) {
		h := obs.NNZ() / 2
		c := cfg
		var tr *tensor.COO
		if r.Rank() == 0 {
			tr = withNew(part(obs, 0, h), aug)
		} else {
			tr, c.NewCells = part(obs, h, obs.NNZ()), 0
		}
		qs := part(q, r.Rank()*100, r.Rank()*100+100)
		res[r.Rank()], errs[r.Rank()] = FitOn(context.Background(), r, tr, []*tensor.COO{qs}, c)
	})
	for k, e := range errs {
		if e != nil {
			t.Fatalf("rank %d: %v", k, e)
		}
	}
	pred := append(slices.Clone(res[0].Pred[0]), res[1].Pred[0]...)
	for c := range pred {
		if math.Abs(pred[c]-want.Pred[0][c]) > 1e-9*max(1, math.Abs(want.Pred[0][c])) {
			t.Fatalf("query cell %d predicted %v over 2 ranks, Fit's %v", c, pred[c], want.Pred[0][c])
		}
	}
	if math.Abs(res[0].AlphaNew-want.AlphaNew) > 1e-9*want.AlphaNew || res[1].AlphaNew != res[0].AlphaNew {
		t.Fatalf("α_new %v and %v over 2 ranks, Fit's %v", res[0].AlphaNew, res[1].AlphaNew, want.AlphaNew)
	}
}

// TestVariance: Model.Variance is the variance over the kept samples of
// each one's clamped prediction (computed here one sample at a time), 0
// with one kept sample.
func TestVariance(t *testing.T) {
	x, _ := fmTensor([]int{20, 15, 10}, 2, 1500, 0.3, 8)
	q := &tensor.COO{Dims: x.Dims, Idx: x.Idx[:300], Val: x.Val[:100]}
	for _, keep := range []int{1, 5} {
		res, err := Fit(context.Background(), x, nil, Config{Rank: 3, Samples: 10, Seed: 4, InitStd: 0.1, KeepSamples: keep})
		if err != nil {
			t.Fatal(err)
		}
		got, err := res.Model.Variance(q)
		if err != nil {
			t.Fatal(err)
		}
		sum, sq := make([]float64, 3), make([]float64, 3)
		for c := range q.NNZ() {
			var ys []float64
			for _, p := range res.Model.samples {
				ys = append(ys, min(max(p.predict(q.Idx[c*3:c*3+3], sum, sq), res.Min), res.Max))
			}
			var m, v float64
			for _, y := range ys {
				m += y / float64(len(ys))
			}
			for _, y := range ys {
				v += (y - m) * (y - m) / float64(len(ys))
			}
			if math.Abs(got[c]-v) > 1e-12*max(1, v) || (keep == 1 && got[c] != 0) {
				t.Fatalf("%d kept: cell %d variance %v, want %v", keep, c, got[c], v)
			}
			if keep == 5 && c == 0 && !(v > 0) {
				t.Fatalf("5 kept samples: variance %v", v)
			}
		}
	}
}
