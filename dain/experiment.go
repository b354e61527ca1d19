package dain

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tracin"
)

// Random streams derived from the seed, one per consumer, so that changing
// one step never shifts another's numbers.
const (
	streamInit = iota + 1
	streamShuffle
	streamInitAfter
	streamShuffleAfter
	streamSample
	streamInitCoSTCo
	streamShuffleCoSTCo
	streamRandom
	streamDuplicate
	streamReplace
)

func rng(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x5eed0000+stream))
}

// Experiment is one split of a tensor and the models trained on it, shared
// by every augmentation method run on that split: the embedding model Θ of
// each kind with its TracIn scores, the value predictors, entity importance.
// Each is trained once, on first use, and its wall time recorded. Declare
// every configuration with Need before the first Augment or Downstream, so
// that all TracIn accumulators ride on one training of Θ.
type Experiment struct {
	cfg  Config
	be   compute.Backend
	x    *tensor.COO
	logf func(string, ...any)
	// Train, Val and Test are the split of the observed cells (step 0).
	Train, Val, Test *tensor.COO

	need    map[string]map[string]bool // model kind → TracIn layer variants to accumulate
	thetas  map[string]*theta
	imps    map[string]*importance
	nbrs    map[string][][][]int32 // entity replacement's neighbours per Θ kind
	nbrSecs map[string]float64
	start   time.Time
}

// theta is a trained embedding model with its TracIn results.
type theta struct {
	net              *nn.Net
	train, val, test *nn.Set
	res              nn.Result
	rmse             float64 // test RMSE
	seconds          float64 // training without the TracIn passes
	scores           map[string]compute.F32
	scoreSecs        map[string]float64
	accs             []tracin.Accumulator
}

// importance is the per-mode entity importance of one configuration.
type importance struct {
	tables  []*sampling.Alias
	seconds float64 // aggregation and alias tables
}

// NewExperiment splits x (step 0) for cfg on backend be. It returns an
// error if cfg is invalid or a part of the split is empty.
func NewExperiment(x *tensor.COO, cfg Config, be compute.Backend) (*Experiment, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Layers == nil {
		cfg.Layers = nn.DefaultLayers(x.Order())
	}
	if cfg.Layers[0]%x.Order() != 0 {
		return nil, fmt.Errorf("dain: the first layer width %d is not a multiple of the tensor order %d", cfg.Layers[0], x.Order())
	}
	if err := checkMemory(x, cfg); err != nil {
		return nil, err
	}
	e := &Experiment{cfg: cfg, be: be, x: x, start: time.Now(),
		need: map[string]map[string]bool{}, thetas: map[string]*theta{},
		imps: map[string]*importance{},
		nbrs: map[string][][][]int32{}, nbrSecs: map[string]float64{}}
	e.logf = func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", args...)
		}
	}
	tr, va, te := tensor.Split(x.NNZ(), cfg.TestFrac, cfg.ValFrac, cfg.Seed)
	e.Train, e.Val, e.Test = x.Subset(tr), x.Subset(va), x.Subset(te)
	if e.Train.NNZ() == 0 || e.Val.NNZ() == 0 || e.Test.NNZ() == 0 {
		return nil, fmt.Errorf("dain: %d cells split into %d train, %d validation, %d test; every part must be non-empty", x.NNZ(), e.Train.NNZ(), e.Val.NNZ(), e.Test.NNZ())
	}
	for n, k := range distinctPerMode(x) {
		if d := x.Dims[n]; d >= 1000 && k < d/2 {
			e.logf("dainx: mode %d: only %d of its %d entities (largest index + 1) occur; the others still get embeddings and memory — renumbering the indices densely (0…n−1) saves both", n, k, d)
		}
	}
	e.Need(cfg)
	return e, nil
}

// distinctPerMode returns, for each mode of x, how many distinct indices
// its cells use.
func distinctPerMode(x *tensor.COO) []int {
	out := make([]int, x.Order())
	for n := range out {
		seen := make([]bool, x.Dims[n])
		for i := 0; i < x.NNZ(); i++ {
			j := x.Idx[i*x.Order()+n]
			if !seen[j] {
				seen[j] = true
				out[n]++
			}
		}
	}
	return out
}

// Close releases every model and buffer of the experiment.
func (e *Experiment) Close() {
	for _, t := range e.thetas {
		for _, a := range t.accs {
			a.Free()
		}
		for k, s := range t.scores {
			if k == "representer" {
				s.Free()
			}
		}
		t.train.Free()
		t.val.Free()
		t.test.Free()
		t.net.Free()
	}
}

// Need declares that c (the experiment's configuration with other method,
// model, predictor or importance settings) will be run, so that the TracIn
// accumulators it needs ride on Θ's training. It panics if Θ of that kind
// was already trained without them.
func (e *Experiment) Need(c Config) {
	if c.Method != "dain" || c.Influence != "tracin" {
		return
	}
	if e.need[c.Model] == nil {
		e.need[c.Model] = map[string]bool{}
	}
	if t := e.thetas[c.Model]; t != nil && t.scores["tracin-"+c.InfluenceLayers] == nil {
		panic(fmt.Sprintf("dain: Need(%s TracIn %s layers) after Θ was trained", c.Model, c.InfluenceLayers))
	}
	e.need[c.Model][c.InfluenceLayers] = true
}

// mlpConfig is the downstream MLP's configuration.
func (e *Experiment) mlpConfig() nn.Config {
	return nn.Config{Dims: e.x.Dims, Layers: e.cfg.Layers, Capacity: max(e.cfg.Batch, e.cfg.EvalBatch)}
}

// newNet builds a fresh model of the given kind.
func (e *Experiment) newNet(kind string, r *rand.Rand) (*nn.Net, nn.TrainConfig, error) {
	c := e.cfg
	tc := nn.TrainConfig{Epochs: c.Epochs, Batch: c.Batch, Patience: c.Patience, LR: c.LR}
	switch kind {
	case "mlp":
		m, err := nn.NewMLP(e.be, e.mlpConfig(), r)
		return m, tc, err
	case "costco":
		tc.LR, tc.Batch = c.CoSTCoLR, c.CoSTCoBatch
		m, err := nn.NewCoSTCo(e.be, nn.CoSTCoConfig{Dims: e.x.Dims, Rank: c.Rank, Channels: c.Channels, Capacity: max(c.CoSTCoBatch, c.EvalBatch)}, r)
		return m, tc, err
	}
	return nil, tc, fmt.Errorf("dain: unknown model %q", kind)
}

// theta trains (once) the embedding model of the given kind on the training
// cells, with every TracIn accumulator declared for it.
func (e *Experiment) theta(ctx context.Context, kind string) (*theta, error) {
	if t := e.thetas[kind]; t != nil {
		return t, nil
	}
	seedInit, seedShuffle := uint64(streamInit), uint64(streamShuffle)
	if kind == "costco" {
		seedInit, seedShuffle = streamInitCoSTCo, streamShuffleCoSTCo
	}
	net, tc, err := e.newNet(kind, rng(e.cfg.Seed, seedInit))
	if err != nil {
		return nil, fmt.Errorf("dain: %w", err)
	}
	t := &theta{net: net, scores: map[string]compute.F32{}, scoreSecs: map[string]float64{}}
	t.train, t.val, t.test = net.NewSet(e.Train.Idx, e.Train.Val), net.NewSet(e.Val.Idx, e.Val.Val), net.NewSet(e.Test.Idx, e.Test.Val)
	e.thetas[kind] = t
	type named struct {
		name string
		acc  tracin.Accumulator
	}
	var accs []named
	for _, layers := range []string{"last", "all"} {
		if !e.need[kind][layers] {
			continue
		}
		var a tracin.Accumulator
		if layers == "last" {
			last := tracin.NewLastLayer(net, t.train, tc.LR)
			tc.ValGradSum = last.ValGradSum()
			a = last
		} else {
			a = tracin.NewAllLayers(net, t.train, t.val, tc.LR)
		}
		accs = append(accs, named{"tracin-" + layers, a})
		t.accs = append(t.accs, a)
	}
	tc.Shuffle = rng(e.cfg.Seed, seedShuffle)
	label := map[string]string{"mlp": "Θ", "costco": "Θc"}[kind]
	tc.AfterEpoch = func(ep nn.Epoch) error {
		for _, a := range accs {
			t0 := time.Now()
			if err := a.acc.Checkpoint(ep.Best); err != nil {
				return err
			}
			t.scoreSecs[a.name] += time.Since(t0).Seconds()
		}
		logEpoch(e.cfg.Progress, label, ep, tc.Epochs, time.Since(e.start))
		return nil
	}
	if len(accs) > 0 {
		e.logf("training %s (%s, %d parameters) with TracIn at every checkpoint", label, kind, net.NumParams())
	} else {
		e.logf("training %s (%s, %d parameters)", label, kind, net.NumParams())
	}
	t0 := time.Now()
	t.res, err = nn.Train(ctx, net, t.train, t.val, tc)
	if err != nil {
		return nil, fmt.Errorf("dain: training %s: %w", label, err)
	}
	t.seconds = time.Since(t0).Seconds()
	for _, a := range accs {
		t.scores[a.name] = a.acc.Scores()
		t.seconds -= t.scoreSecs[a.name]
	}
	mse, err := net.Evaluate(t.test)
	if err != nil {
		return nil, fmt.Errorf("dain: testing %s: %w", label, err)
	}
	t.rmse = math.Sqrt(mse)
	e.logf("%s: best epoch %d, validation MSE %.6f, test RMSE %.6f", label, t.res.BestEpoch, t.res.BestValMSE, t.rmse)
	return t, nil
}

// scores returns Θ's cell importance scores for c and their wall time.
func (e *Experiment) scores(ctx context.Context, c Config) (compute.F32, *theta, error) {
	t, err := e.theta(ctx, c.Model)
	if err != nil {
		return nil, nil, err
	}
	key := "representer"
	if c.Influence == "tracin" {
		key = "tracin-" + c.InfluenceLayers
	}
	if s := t.scores[key]; s != nil {
		return s, t, nil
	}
	if key != "representer" {
		panic(fmt.Sprintf("dain: %s scores of %s were not declared with Need", key, c.Model))
	}
	t0 := time.Now()
	s, err := tracin.Representer(t.net, t.train, t.val)
	if err != nil {
		return nil, nil, fmt.Errorf("dain: %w", err)
	}
	t.scores[key], t.scoreSecs[key] = s, time.Since(t0).Seconds()
	return s, t, nil
}

// importance returns the alias tables of c's entity importance (steps 2–3).
func (e *Experiment) importance(ctx context.Context, c Config) (*importance, error) {
	key := fmt.Sprint(c.Model, c.Influence, c.InfluenceLayers, c.Entity)
	if imp := e.imps[key]; imp != nil {
		return imp, nil
	}
	s, t, err := e.scores(ctx, c)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	var w [][]float64
	if c.Entity == "cp1" {
		w, err = tracin.EntityImportanceCP1(e.be, s, t.train.Rows, e.x.Dims, c.CPLambda, c.CPSweeps)
	} else {
		w, err = tracin.EntityImportance(e.be, s, t.train.Rows, e.x.Dims)
	}
	if err != nil {
		return nil, fmt.Errorf("dain: %w", err)
	}
	imp := &importance{tables: make([]*sampling.Alias, len(w))}
	for n := range w {
		if imp.tables[n], err = sampling.NewAlias(w[n]); err != nil {
			return nil, fmt.Errorf("dain: mode %d: %w", n+1, err)
		}
	}
	imp.seconds = time.Since(t0).Seconds()
	e.imps[key] = imp
	return imp, nil
}

// predictor returns the trained value predictor Θ_p of the given kind: a
// model of that kind trained on the training cells, which is the embedding
// model Θ of that kind (for "mlp", the paper's Θ itself).
func (e *Experiment) predictor(ctx context.Context, kind string) (*nn.Net, error) {
	t, err := e.theta(ctx, kind)
	if err != nil {
		return nil, err
	}
	return t.net, nil
}

// observed returns the indices of train ∪ validation (K×N).
func (e *Experiment) observed() []int32 {
	return append(append([]int32(nil), e.Train.Idx...), e.Val.Idx...)
}

// Downstream trains a fresh MLP on train ∪ aug with the experiment's
// hyper-parameters and validation set (step 5) and returns its test RMSE,
// its training result and its wall time. Every call starts from the same
// initialisation (the seed's), so runs on one split differ only by aug.
func (e *Experiment) Downstream(ctx context.Context, aug *tensor.COO, label string) (float64, nn.Result, float64, error) {
	t0 := time.Now()
	m, tc, err := e.newNet("mlp", rng(e.cfg.Seed, streamInitAfter))
	if err != nil {
		return 0, nn.Result{}, 0, fmt.Errorf("dain: %w", err)
	}
	defer m.Free()
	both := m.NewSet(append(append([]int32(nil), e.Train.Idx...), aug.Idx...), append(append([]float64(nil), e.Train.Val...), aug.Val...))
	defer both.Free()
	val, test := m.NewSet(e.Val.Idx, e.Val.Val), m.NewSet(e.Test.Idx, e.Test.Val)
	defer val.Free()
	defer test.Free()
	tc.Shuffle = rng(e.cfg.Seed, streamShuffleAfter)
	tc.AfterEpoch = func(ep nn.Epoch) error {
		logEpoch(e.cfg.Progress, label, ep, tc.Epochs, time.Since(e.start))
		return nil
	}
	res, err := nn.Train(ctx, m, both, val, tc)
	if err != nil {
		return 0, res, 0, fmt.Errorf("dain: retraining: %w", err)
	}
	mse, err := m.Evaluate(test)
	if err != nil {
		return 0, res, 0, fmt.Errorf("dain: testing the retrained model: %w", err)
	}
	return math.Sqrt(mse), res, time.Since(t0).Seconds(), nil
}

// Shared is the wall time of the shared work a configuration uses, each
// part measured once however many runs share it.
type Shared struct {
	Train     float64 // training Θ, without the TracIn passes
	Influence float64 // the cell-importance passes this configuration uses
	Entity    float64 // entity importance and alias tables (or neighbours)
	Predictor float64 // training the value predictor Θ_p when it is not Θ
}

// Total returns the sum of the parts.
func (s Shared) Total() float64 { return s.Train + s.Influence + s.Entity + s.Predictor }

// SharedSeconds returns the shared work c used so far (call it after
// Augment).
func (e *Experiment) SharedSeconds(c Config) Shared {
	var s Shared
	switch c.Method {
	case "dain":
		if t := e.thetas[c.Model]; t != nil {
			s.Train = t.seconds
			key := "representer"
			if c.Influence == "tracin" {
				key = "tracin-" + c.InfluenceLayers
			}
			s.Influence = t.scoreSecs[key]
		}
		if imp := e.imps[fmt.Sprint(c.Model, c.Influence, c.InfluenceLayers, c.Entity)]; imp != nil {
			s.Entity = imp.seconds
		}
	case "entity-replacement":
		if t := e.thetas[c.Model]; t != nil {
			s.Train = t.seconds
		}
		s.Entity = e.nbrSecs[c.Model]
	}
	if c.Method == "dain" || c.Method == "random" {
		if t := e.thetas[c.Predictor]; t != nil && (c.Method == "random" || c.Predictor != c.Model) {
			s.Predictor = t.seconds
		}
	}
	return s
}
