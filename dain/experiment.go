package dain

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/checkpoint/rundir"
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/cellmath"
	"github.com/dainx/dainx/dain/config"
	"github.com/dainx/dainx/dain/final"
	"github.com/dainx/dainx/dain/influence"
	"github.com/dainx/dainx/dain/memo"
	"github.com/dainx/dainx/dain/nets"
	"github.com/dainx/dainx/dain/oracle"
	"github.com/dainx/dainx/dain/report"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/dain/streams"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
)

// Experiment is one split of a tensor and the stage results computed on
// it, shared by every method run on that split: each stage (an embedding
// model Θ, a cell-importance estimator, an entity-importance aggregator,
// entity replacement's neighbours) is computed once, on first use, with its
// buffers and wall time, in a memo keyed by the stage's value. Every
// TracIn pass asked for before its Θ is trained rides on Θ's one training:
// those of the methods named at NewExperiment and of the first method run.
// A TracIn pass asked for later still runs, at the cost of training Θ
// once more (the same seeds give the same Θ).
type Experiment struct {
	splitPrint spread.SplitPrint // the split's fingerprint (Report.SplitFingerprint)
	cfg        Config
	be         compute.Backend
	x          *tensor.COO
	logf       func(string, ...any)
	// Train, Val and Test are the split of the observed cells (step 0).
	Train, Val, Test *tensor.COO

	plan       map[Embedding][]TracIn // TracIn passes to ride on each Θ's training
	models     memo.Map[Embedding, *trained]
	cellScores memo.Map[CellImportance, compute.F32]
	entity     memo.Map[EntityImportance, []*sampling.Alias]
	nbrs       memo.Map[Neighbours, [][][]int32]
	retrained  []*trained // Θ trained again for an unplanned TracIn pass
	// onRetrained, if not nil, sees every model Downstream trains (OnRetrained).
	onRetrained func(*nn.Net) error
	// onRetrainedBayes, if not nil, sees a bayes-fm Θ′ (Keep.Bayes).
	onRetrainedBayes func(*bayes.Model) error
	// ensembleSaver, if not nil, sees an ensemble Θ′: each member, then
	// the stack (Keep.Ensemble).
	ensembleSaver *ensembleSaver
	// onTestPred, if not nil, gets the test predictions of every final
	// model that is not a net (bayes-fm; OnRetrained).
	onTestPred func([]float64)
	// finalPreds, while -final-model ensemble trains its members, gets
	// each member's validation and test predictions.
	finalPreds func(val, test []float64)
	// bayesP is the bayes-fm value predictor, fitted once (bayesPredictor).
	bayesP memo.Map[struct{}, *bayes.Model]
	// bfm is the bayes-fm final model between its fits: the fit on the
	// training cells alone, once (downstreamBayes), and the last prior
	// grouping (Report.BayesPriors); auto is -final-model auto's choice,
	// made once (chooseAuto). Both survive release. ens is the ensemble
	// predictor, fitted once (ensemble).
	bfm  final.Bayes
	auto *AutoChoice
	ens  memo.Map[struct{}, *final.Ensemble]
	// lastStage: the next Downstream is the run's last stage (Run's
	// retraining), which may drop the split once its sets hold it.
	lastStage bool
	// keep gathers what Config.Keep asks Run for; nil outside Run.
	keep  *kept
	owned []compute.F32 // score buffers the experiment frees
	start time.Time
	ck    rundir.Store // a nil *rundir.Dir unless the run is checkpointed (RunCheckpointed)
	// sp is how the cells are spread over the processes (spread.go):
	// cluster.Local for one process.
	sp spread.State
	// augFirst is the global number, among the new cells, of this
	// process's first (0 on one process).
	augFirst int
	// single: the experiment runs one configuration (Run), so the
	// buffers of a stage are freed once no later stage of it needs them
	// (shed, release).
	single      bool
	trainMaxAbs float64        // the largest |value| of the training cells (nets.ScaleHint)
	trainMean   float64        // the training cells' mean value (the fm and hybrid global bias at the start)
	oracle      *oracle.Oracle // the tensor's generator, when a configuration asks for -values oracle (oracle.Check)
}

// trained is an embedding model Θ trained on the training cells
// (nets.Trained).
type trained = nets.Trained

// NewExperiment splits x (step 0) for cfg on backend be. methods are the
// configurations (cfg with other method settings) that will run on the
// split besides cfg itself, so that their TracIn passes share one training
// of Θ. It returns an error if a configuration is invalid or a part of the
// split is empty.
func NewExperiment(x *tensor.COO, cfg Config, be compute.Backend, methods ...Config) (*Experiment, error) {
	return newExperimentOn(cluster.Local{}, &tensor.Part{Cells: x, NNZ: x.NNZ()}, cfg, be, methods...)
}

// newExperimentOn is NewExperiment on this process's shard sh of a tensor
// spread over the processes of cl (see spread.go).
func newExperimentOn(cl cluster.Cluster, sh *tensor.Part, cfg Config, be compute.Backend, methods ...Config) (*Experiment, error) {
	x := sh.Cells
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Layers == nil {
		cfg.Layers = nn.DefaultLayers(x.Order())
	}
	if err := nn.CheckLayers(cfg.Layers, x.Order()); err != nil {
		return nil, fmt.Errorf("dain: %w", err)
	}
	shards := cfg.Shards(x.Dims, cl.Size())
	if err := config.CheckSpreadOn(append([]Config{cfg}, methods...), shards); err != nil {
		return nil, cluster.Agreed(err) // every process finds it
	}
	if err := checkMemorySharded(x, cfg, shards); err != nil {
		return nil, err
	}
	for _, c := range append([]Config{cfg}, methods...) {
		if c.Layers == nil {
			c.Layers = cfg.Layers
		}
		if err := cluster.Agree(cl, checkMemoryLimit(x, c, shards), "dain: memory"); err != nil {
			return nil, err
		}
	}
	if err := cellmath.CheckValues(x); err != nil {
		return nil, err
	}
	e := &Experiment{cfg: cfg, be: be, x: x, start: time.Now(), plan: map[Embedding][]TracIn{},
		models: memo.Map[Embedding, *trained]{}, cellScores: memo.Map[CellImportance, compute.F32]{},
		entity: memo.Map[EntityImportance, []*sampling.Alias]{}, nbrs: memo.Map[Neighbours, [][][]int32]{},
		ck: (*rundir.Dir)(nil), sp: spread.State{Cl: cl}}
	var err error
	if e.oracle, err = oracle.Check(cl, sh, append([]Config{cfg}, methods...)); err != nil {
		return nil, err
	}
	e.logf = func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", args...)
		}
	}
	seen := map[stage]bool{}
	for _, c := range append([]Config{cfg}, methods...) {
		if err := c.Validate(); err != nil {
			return nil, err
		}
		e.bfm.KeepAlone = e.bfm.KeepAlone || c.UsesEnsemble() || c.UsesUncertainty()
		walk(PipelineOf(c).Cells, seen, func(s stage) {
			if t, ok := s.(TracIn); ok {
				e.plan[t.Model] = append(e.plan[t.Model], t)
			}
		})
	}
	if cl.Size() == 1 {
		for n, k := range cellmath.DistinctPerMode(x) {
			if d := x.Dims[n]; d >= 1000 && k < d/2 {
				e.logf("dainx: mode %d: only %d of its %d entities (largest index + 1) occur; the others still get embeddings and memory — renumbering the indices densely (0…n−1) saves both", n, k, d)
			}
		}
	}
	e.Train, e.Val, e.Test = e.sp.SplitOn(sh, e.cfg, &e.splitPrint)
	if c := e.sp.Counts; c[0] == 0 || c[1] == 0 || (c[2] == 0 && cfg.TestFrac > 0) {
		return nil, fmt.Errorf("dain: %d cells split into %d train, %d validation, %d test; every part must be non-empty", sh.NNZ, c[0], c[1], c[2])
	}
	// The experiment keeps the split only: x's cells are the caller's to
	// drop, which a large run does (Run does not hold them past the split).
	e.x = &tensor.COO{Dims: x.Dims}
	e.trainMaxAbs, e.trainMean = e.sp.TrainStats(e.Train)
	return e, nil
}

// Close releases every model and buffer of the experiment.
func (e *Experiment) Close() {
	for _, d := range e.models {
		d.Val.Free()
	}
	for _, t := range e.retrained {
		t.Free()
	}
	for _, b := range e.owned {
		b.Free()
	}
}

// shed frees, in a single-configuration experiment, what only choosing the
// new cells' entities needed, once they are chosen: every model's copies of
// the split and every cell score (the models stay, to predict values).
// Another configuration could need them again, so an experiment of several
// keeps them. Wall times stay for SharedSeconds.
func (e *Experiment) shed() {
	if !e.single {
		return
	}
	for _, d := range e.models {
		d.Val.Shed()
	}
	for _, t := range e.retrained {
		t.Free()
	}
	for _, b := range e.owned {
		b.Free()
	}
	e.retrained, e.owned = nil, nil
	for _, d := range e.cellScores {
		d.Val = nil
	}
	runtime.GC() // what was freed is reused by the next allocations rather than added to the heap
}

// release frees every trained model, score and table the stages hold and
// forgets them (a stage asked for later is computed again), for a run
// whose remaining work needs none of them: Run before its retraining,
// which then does not hold Θ's copies of the split beside its own. Their
// wall times are forgotten too; read SharedSeconds first.
func (e *Experiment) release() {
	e.Close()
	e.models, e.cellScores = memo.Map[Embedding, *trained]{}, memo.Map[CellImportance, compute.F32]{}
	e.entity, e.nbrs = memo.Map[EntityImportance, []*sampling.Alias]{}, memo.Map[Neighbours, [][][]int32]{}
	e.retrained, e.owned = nil, nil
	e.bayesP, e.ens = nil, nil
	settle()
}

// settle collects the garbage and returns the freed pages to the operating
// system (debug.FreeOSMemory). It is called where a stage begins that
// allocates large sets right after large structures died (training a
// model after sampling, the retraining after the other models): a
// collection alone keeps the freed pages for the heap, and the new sets'
// large arrays, which need contiguous pages, rarely fit between them, so
// the peak held both. Measured at 40M cells (2026-11-27): one process
// peaked at 2114 MiB instead of 2222–2234, in the same time
// (bench/results/dist-ratio-2026-11-27.md).
func settle() { debug.FreeOSMemory() }

// newNet builds a fresh model of kind (nets.New) initialised from r, its
// embedding table sharded over the processes as e's spread says.
func (e *Experiment) newNet(kind string, r *rand.Rand) (*nn.Net, nn.TrainConfig, error) {
	shard, err := e.sp.Sharding(e.cfg, e.x.Dims, kind, e.logf)
	if err != nil {
		return nil, nn.TrainConfig{}, err
	}
	return nets.New(e.be, e.cfg, e.x.Dims, kind, shard, e.trainMean, r)
}

// model returns the embedding model m trained on the training cells, with
// the TracIn passes planned for it, training it on first use.
func (e *Experiment) model(ctx context.Context, m Embedding) (*trained, error) {
	return e.models.Get(m, func() (*trained, float64, error) {
		return m.train(ctx, e, e.plan[m])
	})
}

// train trains a fresh model of kind m on e's training cells, with its own
// random streams, and the TracIn accumulators passes riding on it; it
// records their scores and wall times in e.cellScores. It returns the model
// and its training's wall time without the TracIn passes.
func (m Embedding) train(ctx context.Context, e *Experiment, passes []TracIn) (*trained, float64, error) {
	seedInit, seedShuffle := uint64(streams.Init), uint64(streams.Shuffle)
	if m.Kind == nn.KindCoSTCo {
		seedInit, seedShuffle = streams.InitCoSTCo, streams.ShuffleCoSTCo
	}
	settle()
	net, tc, err := e.newNet(m.Kind, streams.New(e.cfg.Seed, seedInit))
	if err != nil {
		return nil, 0, fmt.Errorf("dain: %w", err)
	}
	t := &trained{Net: net}
	t.Train, t.Val, t.Test = net.NewSet(e.Train.Idx, e.Train.Val), net.NewSet(e.Val.Idx, e.Val.Val), net.NewSet(e.Test.Idx, e.Test.Val)
	ok := false
	defer func() {
		if !ok {
			t.Free()
		}
	}()
	// The passes run in the order of the InfluenceLayers list, then of
	// their estimators (influence.Pass.Rank).
	passes = append([]TracIn(nil), passes...)
	slices.SortStableFunc(passes, func(a, b TracIn) int { return a.pass().Rank() - b.pass().Rank() })
	secs := make([]float64, len(passes))
	for _, p := range passes {
		t.Accs = append(t.Accs, p.accumulator(e, t, &tc))
	}
	var pcg *rand.PCG
	tc.Shuffle, pcg = streams.NewPCG(e.cfg.Seed, seedShuffle)
	tc.Order = e.cfg.Order(seedShuffle, e.sp.NTrain())
	label := map[string]string{nn.KindMLP: "Θ", nn.KindCoSTCo: "Θc", FinalFM: "Θfm", FinalHybrid: "Θh"}[m.Kind]
	stage := stageName(m.Kind, passes)
	if seconds, s, found, err := e.ck.LoadModel(stage, t.Checkpoint()); err != nil {
		return nil, 0, err
	} else if found {
		for i, p := range passes {
			e.cellScores[p] = &memo.Done[compute.F32]{Val: t.Accs[i].Scores(), Seconds: s[i]}
		}
		e.logf("%s: taken from the checkpoint: best epoch %d, validation MSE %.6f, test RMSE %.6f", label, t.Res.BestEpoch, t.Res.BestValMSE, t.RMSE)
		ok = true
		return t, seconds, nil
	}
	tc.AfterEpoch = func(ep nn.Epoch) error {
		if err := e.ck.At(stage, ep.N, "trained"); err != nil {
			return err
		}
		if err := influence.Checkpoint(t.Accs, secs, ep.Best); err != nil {
			return err
		}
		if len(t.Accs) > 0 {
			if err := e.ck.At(stage, ep.N, "tracin"); err != nil {
				return err
			}
		}
		config.LogEpoch(&e.cfg, label, ep, tc.Epochs, time.Since(e.start))
		return nil
	}
	if len(passes) > 0 {
		e.logf("training %s (%s, %d parameters) with TracIn at every checkpoint", label, m.Kind, net.NumParams())
	} else {
		e.logf("training %s (%s, %d parameters)", label, m.Kind, net.NumParams())
	}
	t0 := time.Now()
	prior, err := e.ck.Fit(&tc, stage, label, pcg, t.Accs, secs, e.logf, func() float64 { return time.Since(t0).Seconds() })
	if err != nil {
		return nil, 0, err
	}
	t.Res, err = e.sp.Fit(ctx, e.cfg, e.x.Dims, net, t.Train, t.Val, tc, e.sp.NTrain(), e.sp.Spans(e.Train.NNZ(), 0, e.augFirst))
	if err != nil {
		return nil, 0, nets.TrainError(e.cfg, e.trainMaxAbs, label, m.Kind, err)
	}
	seconds := prior + time.Since(t0).Seconds()
	for i, p := range passes {
		e.cellScores[p] = &memo.Done[compute.F32]{Val: t.Accs[i].Scores(), Seconds: secs[i]}
		seconds -= secs[i]
	}
	if e.sp.Counts[2] > 0 {
		mse, err := e.sp.EvalMSE(net, t.Test, e.sp.Counts[2])
		if err != nil {
			return nil, 0, fmt.Errorf("dain: testing %s: %w", label, err)
		}
		t.RMSE = math.Sqrt(mse)
		e.logf("%s: best epoch %d, validation MSE %.6f, test RMSE %.6f", label, t.Res.BestEpoch, t.Res.BestValMSE, t.RMSE)
	} else {
		// No test set (TestFrac 0): the validation RMSE stands in.
		t.RMSE = math.Sqrt(t.Res.BestValMSE)
		e.logf("%s: best epoch %d, validation MSE %.6f (no test set)", label, t.Res.BestEpoch, t.Res.BestValMSE)
	}
	if err := e.ck.SaveModel(stage, t.Checkpoint(), seconds, secs); err != nil {
		return nil, 0, err
	}
	ok = true
	return t, seconds, nil
}

// tables returns the alias tables of the entity importance s (steps 2–3).
func (e *Experiment) tables(ctx context.Context, s EntityImportance) ([]*sampling.Alias, error) {
	var v compute.F32
	var t *trained
	if c := s.cells(); c != nil { // nil: an importance without cell scores (FrequencyEntity)
		var err error
		if v, t, err = c.scores(ctx, e); err != nil {
			return nil, err
		}
		if err = e.keepScores(ctx, c, v); err != nil {
			return nil, err
		}
	}
	return e.entity.Get(s, func() ([]*sampling.Alias, float64, error) {
		t0 := time.Now()
		w, err := s.aggregate(e, v, t)
		if err != nil {
			return nil, 0, fmt.Errorf("dain: %w%s", err, nets.ScaleHint(e.trainMaxAbs))
		}
		e.keepImportance(w)
		tables := make([]*sampling.Alias, len(w))
		for n := range w {
			if tables[n], err = sampling.NewAlias(w[n]); err != nil {
				return nil, 0, fmt.Errorf("dain: mode %d: %w", n+1, err)
			}
		}
		return tables, time.Since(t0).Seconds(), nil
	})
}

// neighbours returns the nearest entities s names.
func (e *Experiment) neighbours(ctx context.Context, s Neighbours) ([][][]int32, error) {
	t, err := e.model(ctx, s.Model)
	if err != nil {
		return nil, err
	}
	return e.nbrs.Get(s, func() ([][][]int32, float64, error) {
		t0 := time.Now()
		nbr, err := cellmath.Nearest(t.Net, e.Train)
		return nbr, time.Since(t0).Seconds(), err
	})
}

// sample draws n new cells from per-mode alias tables with Philox key key,
// rejecting observed and repeated cells: this process's share of them
// (e.augFirst onwards) when the experiment is spread over processes.
func (e *Experiment) sample(ctx context.Context, tables []*sampling.Alias, key uint64, n int, st *AugStats) (*tensor.COO, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e.shed() // the entities' tables are made: Θ's copies of the split and its scores are not needed any more
	t0 := time.Now()
	dev := sampling.Upload(e.be, tables)
	var cells []int32
	var s sampling.Stats
	var err error
	if e.sp.Many() {
		cells, e.augFirst, s, err = spread.SampleShared(e.sp.Cl, e.x.Dims, e.Train, e.Val, dev, key, n)
	} else {
		cells, s, err = dev.CellsExcluding([][]int32{e.Train.Idx, e.Val.Idx}, n, sampling.Options{Key: key})
	}
	dev.Free()
	if err != nil {
		if errors.Is(err, sampling.ErrSupport) {
			hint := "use a smaller -ratio"
			if e.cfg.Temperature > 1 {
				hint = fmt.Sprintf("-temperature %v concentrates the importance on few entities: use a smaller τ (1 is the paper's), -mix to spread it, or a smaller -ratio", e.cfg.Temperature)
			}
			return nil, fmt.Errorf("dain: %w; %s", err, hint)
		}
		return nil, fmt.Errorf("dain: %w", err)
	}
	st.Sample = time.Since(t0).Seconds()
	st.Draws, st.RejectObserved, st.RejectRepeat = s.Draws, s.Observed, s.Duplicate
	return &tensor.COO{Dims: append([]int(nil), e.x.Dims...), Idx: cells}, nil
}

// Downstream trains a fresh final model Θ′ (Config.FinalModel: the MLP,
// fm or hybrid by Adam, bayes-fm by Gibbs sampling; auto resolved first,
// see AutoChoice) on train ∪ aug with the experiment's
// hyper-parameters and validation set (step 5) and returns its test RMSE,
// its training result and its wall time. Every call starts from the same
// initialisation (the seed's), so runs on one split differ only by aug.
func (e *Experiment) Downstream(ctx context.Context, aug *tensor.COO, label string) (float64, nn.Result, float64, error) {
	return e.downstreamAt(ctx, aug, label, "retrain")
}

// downstreamAt is Downstream with its checkpoint stage named: "retrain" for
// Θ′ on train ∪ aug, another name for a final model trained beside it (on
// train alone, for rmse_before), so that the two never resume each other's
// state.
func (e *Experiment) downstreamAt(ctx context.Context, aug *tensor.COO, label, stage string) (float64, nn.Result, float64, error) {
	c, err := e.resolve(ctx, e.cfg)
	if err != nil {
		return 0, nn.Result{}, 0, err
	}
	kind := c.FinalModelName()
	switch kind {
	case FinalBayesFM:
		return e.downstreamBayes(ctx, aug, label)
	case FinalEnsemble:
		return e.downstreamEnsemble(ctx, aug, label, stage)
	}
	t0 := time.Now()
	m, tc, err := e.newNet(kind, streams.New(e.cfg.Seed, streams.InitAfter))
	if err != nil {
		return 0, nn.Result{}, 0, fmt.Errorf("dain: %w", err)
	}
	defer m.Free()
	both := m.NewSetConcat([][]int32{e.Train.Idx, aug.Idx}, [][]float64{e.Train.Val, aug.Val})
	defer both.Free()
	naug := aug.NNZ()
	owned := e.sp.Spans(e.Train.NNZ(), naug, e.augFirst)
	val, test := m.NewSet(e.Val.Idx, e.Val.Val), m.NewSet(e.Test.Idx, e.Test.Val)
	defer val.Free()
	defer test.Free()
	if e.single && e.lastStage && e.finalPreds == nil {
		// The retraining is the last stage of a single configuration,
		// and its sets hold the split: the split itself is not held
		// beside them.
		e.Train, e.Val, e.Test = nil, nil, nil
		settle()
	}
	global := e.sp.NTrain() + e.sp.GlobalNNZ(aug) // train ∪ aug over every process
	if w := e.cfg.AugWeight.Resolve(kind); w != 1 {
		// The new cells, this process's last, count w of an observed
		// cell in the loss.
		tc.NewCells, tc.NewWeight = naug, float64(w)
	}
	var pcg *rand.PCG
	tc.Shuffle, pcg = streams.NewPCG(e.cfg.Seed, streams.ShuffleAfter)
	tc.Order = e.cfg.Order(streams.ShuffleAfter, global)
	tc.AfterEpoch = func(ep nn.Epoch) error {
		if err := e.ck.At(stage, ep.N, "trained"); err != nil {
			return err
		}
		config.LogEpoch(&e.cfg, label, ep, tc.Epochs, time.Since(e.start))
		return nil
	}
	prior, err := e.ck.Fit(&tc, stage, label, pcg, nil, nil, e.logf, func() float64 { return time.Since(t0).Seconds() })
	if err != nil {
		return 0, nn.Result{}, 0, err
	}
	res, err := e.sp.Fit(ctx, e.cfg, e.x.Dims, m, both, val, tc, global, owned)
	if err != nil {
		var div *nn.DivergenceError
		if errors.As(err, &div) {
			return 0, res, 0, nets.TrainError(e.cfg, e.trainMaxAbs, label+", the retraining", kind, err)
		}
		return 0, res, 0, fmt.Errorf("dain: retraining: %w", err)
	}
	mse := res.BestValMSE // no test set (TestFrac 0): the validation MSE stands in
	if n := e.sp.Counts[2]; n > 0 {
		if mse, err = e.sp.EvalMSE(m, test, n); err != nil {
			return 0, res, 0, fmt.Errorf("dain: testing the retrained model: %w", err)
		}
	}
	if e.finalPreds != nil {
		pv, err := cellmath.Predict(m, e.Val.Idx)
		if err != nil {
			return 0, res, 0, err
		}
		pt, err := cellmath.Predict(m, e.Test.Idx)
		if err != nil {
			return 0, res, 0, err
		}
		e.finalPreds(pv, pt)
	}
	if e.sp.Dist != nil {
		if err := spread.Replicas(e.sp.Cl, m); err != nil {
			return 0, res, 0, err
		}
	}
	if e.onRetrained != nil {
		if err := e.onRetrained(m); err != nil {
			return 0, res, 0, err
		}
	}
	return math.Sqrt(mse), res, prior + time.Since(t0).Seconds(), nil
}

// Shared is the wall time of the shared work a configuration uses, each
// part measured once however many runs share it, in seconds
// (report.Shared).
type Shared = report.Shared

// SharedSeconds returns the wall time of the shared stages c used so far
// (call it after Augment): the embedding models behind its cells (Train),
// its cell importance (Influence), its entity importance or neighbours
// (Entity), and its value predictor when no stage behind its cells trained
// that model (Predictor).
func (e *Experiment) SharedSeconds(c Config) Shared {
	c = e.applyAuto(c)
	var s Shared
	p := PipelineOf(c)
	seen := map[stage]bool{}
	walk(p.Cells, seen, func(st stage) {
		switch st := st.(type) {
		case Embedding:
			s.Train += e.models.Seconds(st)
		case CellImportance:
			s.Influence += e.cellScores.Seconds(st)
		case EntityImportance:
			s.Entity += e.entity.Seconds(st)
		case Neighbours:
			s.Entity += e.nbrs.Seconds(st)
		}
	})
	if p.Values != nil && p.Values.Model.Kind == FinalBayesFM {
		s.Predictor = e.bayesP.Seconds(struct{}{})
	} else if p.Values != nil && p.Values.Model.Kind == PredictorEnsemble {
		s.Predictor = e.ens.Seconds(struct{}{})
	} else if p.Values != nil && !seen[p.Values.Model] {
		s.Predictor = e.models.Seconds(p.Values.Model)
	}
	return s
}
