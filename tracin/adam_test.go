package tracin_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tracin"
)

// Tests of the Adam-aware estimators (issue 35): tracin-adam against a
// float64 reference formed from the saved checkpoints and Adam states,
// in-run against the explicit sum of per-step dot products, and both
// resumed from a saved state.

// Adam's constants in nn.Train.
const (
	beta2 = 0.999
	eps   = 1e-8
)

// newWideFixture is newFixture with modes large enough (40, 30, 20
// entities, 120 cells) that a batch of 16 cells leaves most table rows
// untouched, so that sparse Adam's per-row state differs from dense Adam's.
func newWideFixture(t *testing.T, seed uint64) *fixture {
	return fixtureOf(t, rand.New(rand.NewPCG(seed, 7)), []int{40, 30, 20}, 120, 80)
}

// grad returns the explicit per-cell gradient of cell z over the output
// layer (all false) or every parameter.
func (f *fixture) grad(z int, all bool) []float64 {
	if all {
		return f.perCellAll(z)
	}
	return f.perCell(z)
}

// preconditioned returns η·Σ_i G_i·g_z,i/(√(v_i/(1−β₂ᵀ)) + ε) for every
// training cell z in cells (all when nil), in float64, at the model's
// current parameters, with G the explicit sum of the validation cells'
// gradients, v the second moments of the same parameters (the last len(g)
// of v when only the output layer's), T Adam's step.
func (f *fixture) preconditioned(eta float64, v []float32, T int, all bool, cells []int32) map[int]float64 {
	var G []float64
	for z := f.nTrain; z < len(f.vals); z++ {
		g := f.grad(z, all)
		if G == nil {
			G = make([]float64, len(g))
		}
		for i, x := range g {
			G[i] += x
		}
	}
	v = v[len(v)-len(G):]
	c2 := 1 - math.Pow(beta2, float64(T))
	for i := range G {
		G[i] /= math.Sqrt(float64(v[i])/c2) + eps
	}
	if cells == nil {
		for z := 0; z < f.nTrain; z++ {
			cells = append(cells, int32(z))
		}
	}
	out := map[int]float64{}
	for _, z := range cells {
		var s float64
		for i, x := range f.grad(int(z), all) {
			s += x * G[i]
		}
		out[int(z)] += eta * s
	}
	return out
}

// TestAdamEqualsReference trains a small MLP with a tracin-adam
// accumulator riding on it, saving every epoch's state as a checkpoint
// does (parameters, Adam's moments and step), and checks the scores
// against η·Σ_{k≤K} G_kᵀP_k g_z formed in float64 from those saved
// states with explicit per-cell gradients: over the output layer and
// over every parameter, with the table trained by dense and by sparse
// Adam.
func TestAdamEqualsReference(t *testing.T) {
	for _, layers := range []string{"last", "all"} {
		for _, opt := range []string{nn.Adam, nn.SparseAdam} {
			t.Run(layers+"/"+opt, func(t *testing.T) {
				f := newWideFixture(t, 41)
				const eta = 1e-2
				var st nn.AdamState
				var acc tracin.Accumulator
				if layers == "last" {
					acc = tracin.NewLastLayerAdam(f.m, f.train, eta, &st)
				} else {
					acc = tracin.NewAllLayersAdam(f.m, f.train, f.val, eta, &st)
				}
				defer acc.Free()
				tc := nn.TrainConfig{Epochs: 6, Batch: 16, Patience: 6, LR: eta, EmbeddingOptimizer: opt,
					Shuffle: rand.New(rand.NewPCG(1, 2)), Adam: &st,
					AfterEpoch: func(e nn.Epoch) error { return acc.Checkpoint(e.Best) }}
				if last, ok := acc.(*tracin.LastLayer); ok {
					tc.ValGradSum = last.ValGradSum()
				}
				var saved []*nn.TrainState
				tc.Save = func(s *nn.TrainState) error { saved = append(saved, s); return nil }
				res, err := nn.Train(context.Background(), f.m, f.train, f.val, tc)
				if err != nil {
					t.Fatal(err)
				}
				if res.BestEpoch < 2 {
					t.Fatalf("best epoch %d: the test wants several checkpoints", res.BestEpoch)
				}
				want := make([]float64, f.nTrain)
				var spread float64 // how far P is from a multiple of the identity
				for k := 0; k < res.BestEpoch; k++ {
					s := saved[k]
					f.be.Upload(f.m.Params(), s.Params)
					for z, x := range f.preconditioned(eta, s.AdamV, s.Step, layers == "all", nil) {
						want[z] += x
					}
					lo, hi := slices.Min(s.AdamV[len(s.AdamV)-9:]), slices.Max(s.AdamV[len(s.AdamV)-9:])
					spread = max(spread, float64(hi/lo))
				}
				if spread < 2 {
					t.Fatalf("the output layer's second moments vary by %.3g×: P ∝ I would not test the preconditioner", spread)
				}
				f.checkScores(t, acc, want)
			})
		}
	}
}

// TestAdamDiffersFromTracIn: on the same training, tracin-adam's scores
// are not a multiple of TracIn-CP's (the preconditioner changes the
// ranking), so a tracin-adam that ignored P would fail the reference test
// only through its scale.
func TestAdamDiffersFromTracIn(t *testing.T) {
	var scores [2][]float32
	for i := range scores {
		f := newWideFixture(t, 42)
		var st nn.AdamState
		var acc *tracin.LastLayer
		if i == 0 {
			acc = tracin.NewLastLayer(f.m, f.train, 1e-2)
		} else {
			acc = tracin.NewLastLayerAdam(f.m, f.train, 1e-2, &st)
		}
		defer acc.Free()
		if _, err := nn.Train(context.Background(), f.m, f.train, f.val, nn.TrainConfig{Epochs: 4, Batch: 16, Patience: 4, LR: 1e-2,
			Shuffle: rand.New(rand.NewPCG(1, 2)), Adam: &st, ValGradSum: acc.ValGradSum(),
			AfterEpoch: func(e nn.Epoch) error { return acc.Checkpoint(e.Best) }}); err != nil {
			t.Fatal(err)
		}
		scores[i] = make([]float32, f.nTrain)
		f.be.Download(scores[i], acc.Scores())
	}
	if r := pearson(scores[0], scores[1]); math.Abs(r) > 0.999 {
		t.Errorf("tracin-adam's scores correlate with TracIn-CP's at r = %.5f: the preconditioner changed nothing", r)
	}
}

func pearson(a, b []float32) float64 {
	var ma, mb float64
	for i := range a {
		ma += float64(a[i])
		mb += float64(b[i])
	}
	ma /= float64(len(a))
	mb /= float64(len(b))
	var sab, saa, sbb float64
	for i := range a {
		x, y := float64(a[i])-ma, float64(b[i])-mb
		sab += x * y
		saa += x * x
		sbb += y * y
	}
	return sab / math.Sqrt(saa*sbb)
}

// stepRecord is what recorder saw of one step.
type stepRecord struct {
	t             int
	before, after []float32 // the parameters at the step's Before and After
	v             []float32 // Adam's second moments after the step
	T             int       // Adam's step in the AdamState at After
	cells         []int32
}

// recorder is a step hook that records every step's parameters, Adam
// state and cells, for the explicit in-run sum.
type recorder struct {
	be    compute.Backend
	m     *nn.Net
	st    *nn.AdamState
	steps []stepRecord
}

func (r *recorder) Every() int { return 1 }

func (r *recorder) Before(t int) {
	p := make([]float32, r.m.NumParams())
	r.be.Download(p, r.m.Params())
	r.steps = append(r.steps, stepRecord{t: t, before: p})
}

func (r *recorder) After(t int, b nn.StepBatch) {
	s := &r.steps[len(r.steps)-1]
	s.after, s.v, s.cells = make([]float32, r.m.NumParams()), make([]float32, r.m.NumParams()), make([]int32, b.N)
	r.be.Download(s.after, r.m.Params())
	r.be.Download(s.v, r.st.V)
	r.be.DownloadI32(s.cells, b.Cells)
	s.T = r.st.Step.T
}

// TestInRunEqualsExplicit runs the in-run estimator with k = 1 and the
// whole validation set through nn.Train and checks its scores against the
// sum over the steps of epochs 1…K of η·G_tᵀP_t g_z for the step's batch
// cells, formed in float64 from the recorded θ_t (before the step's
// update) and v_t (after it) with explicit per-cell gradients; and that
// the hooks saw the right moments: the first Before sees the initial
// parameters, each After the updated ones with Adam's step t, and each
// Before the parameters the previous After saw.
func TestInRunEqualsExplicit(t *testing.T) {
	for _, layers := range []string{"last", "all"} {
		for _, opt := range []string{nn.Adam, nn.SparseAdam} {
			t.Run(layers+"/"+opt, func(t *testing.T) {
				f := newWideFixture(t, 43)
				const eta, batch = 1e-2, 16
				var st nn.AdamState
				acc := tracin.NewInRun(f.m, f.train, f.val, tracin.InRunConfig{Eta: eta, Every: 1, ValScale: 1, AllLayers: layers == "all", Adam: &st})
				defer acc.Free()
				rec := &recorder{be: f.be, m: f.m, st: &st}
				initial := make([]float32, f.m.NumParams())
				f.be.Download(initial, f.m.Params())
				res, err := nn.Train(context.Background(), f.m, f.train, f.val, nn.TrainConfig{Epochs: 5, Batch: batch, Patience: 5, LR: eta,
					EmbeddingOptimizer: opt, Shuffle: rand.New(rand.NewPCG(3, 4)), Adam: &st, Steps: []nn.StepHook{rec, acc},
					AfterEpoch: func(e nn.Epoch) error { return acc.Checkpoint(e.Best) }})
				if err != nil {
					t.Fatal(err)
				}
				perEpoch := (f.nTrain + batch - 1) / batch
				if len(rec.steps) != perEpoch*len(res.Epochs) {
					t.Fatalf("%d steps hooked, want %d", len(rec.steps), perEpoch*len(res.Epochs))
				}
				if res.BestEpoch < 2 {
					t.Fatalf("best epoch %d: the test wants several epochs", res.BestEpoch)
				}
				if !slices.Equal(rec.steps[0].before, initial) {
					t.Error("the first Before did not see the initial parameters")
				}
				want := make([]float64, f.nTrain)
				for i, s := range rec.steps {
					if s.t != i+1 || s.T != s.t {
						t.Fatalf("step %d: hooked as step %d, Adam's state at step %d", i+1, s.t, s.T)
					}
					if slices.Equal(s.before, s.after) {
						t.Fatalf("step %d: After saw the parameters of Before: not after the update", s.t)
					}
					if i > 0 && !slices.Equal(s.before, rec.steps[i-1].after) {
						t.Fatalf("step %d: Before did not see the previous step's updated parameters", s.t)
					}
					if i >= res.BestEpoch*perEpoch {
						continue
					}
					f.be.Upload(f.m.Params(), s.before)
					for z, x := range f.preconditioned(eta, s.v, s.T, layers == "all", s.cells) {
						want[z] += x
					}
				}
				f.checkScores(t, acc, want)
			})
		}
	}
}

// TestInRunSampleAndEvery: with k = 3 and half the validation set as the
// sample (scale 2), the scores are k·2 times the explicit sum over the
// hooked steps (t = 1, 4, 7, …) against the sample's gradient.
func TestInRunSampleAndEvery(t *testing.T) {
	f := newWideFixture(t, 44)
	const eta, batch, every = 1e-2, 16, 3
	nVal := len(f.vals) - f.nTrain
	half := f.m.NewSet(f.cells[f.nTrain*3:(f.nTrain+nVal/2)*3], f.vals[f.nTrain:f.nTrain+nVal/2])
	var st nn.AdamState
	acc := tracin.NewInRun(f.m, f.train, half, tracin.InRunConfig{Eta: eta, Every: every, ValScale: 2, Adam: &st})
	defer acc.Free()
	rec := &recorder{be: f.be, m: f.m, st: &st}
	every1 := &everyK{rec, every}
	res, err := nn.Train(context.Background(), f.m, f.train, f.val, nn.TrainConfig{Epochs: 4, Batch: batch, Patience: 4, LR: eta,
		Shuffle: rand.New(rand.NewPCG(3, 4)), Adam: &st, Steps: []nn.StepHook{every1, acc},
		AfterEpoch: func(e nn.Epoch) error { return acc.Checkpoint(e.Best) }})
	if err != nil {
		t.Fatal(err)
	}
	perEpoch := (f.nTrain + batch - 1) / batch
	want := make([]float64, f.nTrain)
	// The explicit sum against the sample: shrink the fixture's
	// validation part to it.
	vals := f.vals
	f.vals = vals[:f.nTrain+nVal/2]
	defer func() { f.vals = vals }()
	for _, s := range rec.steps {
		if (s.t-1)%every != 0 {
			t.Fatalf("step %d hooked with k = %d", s.t, every)
		}
		if s.t > res.BestEpoch*perEpoch {
			continue
		}
		f.be.Upload(f.m.Params(), s.before)
		for z, x := range f.preconditioned(eta*every*2, s.v, s.T, false, s.cells) {
			want[z] += x
		}
	}
	if len(rec.steps) < 4 {
		t.Fatalf("%d hooked steps", len(rec.steps))
	}
	f.checkScores(t, acc, want)
}

// everyK is a recorder hooked every k steps.
type everyK struct {
	*recorder
	k int
}

func (e *everyK) Every() int { return e.k }

// TestResumeSameScores: a training stopped after epoch 3 and resumed from
// its saved state (nn.TrainState and the accumulator's State, as a
// checkpoint holds them) gives the uninterrupted run's scores bit for
// bit, for tracin-adam and in-run, over the output layer and every
// parameter.
func TestResumeSameScores(t *testing.T) {
	for _, est := range []string{"tracin-adam", "in-run"} {
		for _, layers := range []string{"last", "all"} {
			t.Run(est+"/"+layers, func(t *testing.T) {
				run := func(resume *nn.TrainState, from *tracin.State, stopAfter int) ([]float32, *nn.TrainState, tracin.State, nn.Result) {
					f := newWideFixture(t, 46)
					var st nn.AdamState
					var acc tracin.Accumulator
					tc := nn.TrainConfig{Epochs: 10, Batch: 16, Patience: 10, LR: 5e-3, EmbeddingOptimizer: nn.SparseAdam,
						Order: nn.KeyedOrder(f.nTrain, 9, 0), Adam: &st, Resume: resume}
					switch {
					case est == "in-run":
						ir := tracin.NewInRun(f.m, f.train, f.val, tracin.InRunConfig{Eta: 5e-3, Every: 2, ValScale: 1, AllLayers: layers == "all", Adam: &st})
						tc.Steps, acc = []nn.StepHook{ir}, ir
					case layers == "last":
						last := tracin.NewLastLayerAdam(f.m, f.train, 5e-3, &st)
						tc.ValGradSum, acc = last.ValGradSum(), last
					default:
						acc = tracin.NewAllLayersAdam(f.m, f.train, f.val, 5e-3, &st)
					}
					defer acc.Free()
					if from != nil {
						if err := acc.Restore(*from); err != nil {
							t.Fatal(err)
						}
					}
					var savedTrain *nn.TrainState
					var savedAcc tracin.State
					tc.AfterEpoch = func(e nn.Epoch) error { return acc.Checkpoint(e.Best) }
					tc.Save = func(s *nn.TrainState) error {
						if s.Epoch == stopAfter {
							savedTrain = s
							var err error
							savedAcc, err = acc.State()
							return err
						}
						return nil
					}
					res, err := nn.Train(context.Background(), f.m, f.train, f.val, tc)
					if err != nil {
						t.Fatal(err)
					}
					out := make([]float32, f.nTrain)
					f.be.Download(out, acc.Scores())
					return out, savedTrain, savedAcc, res
				}
				// Stop after an epoch that is not the best so far (so
				// that the running and best sums differ there) and is
				// followed by a better one (so that both matter).
				_, _, _, res := run(nil, nil, -1)
				stop := -1
				for _, e := range res.Epochs[1:] {
					if !e.Best && res.BestEpoch > e.N {
						stop = e.N
						break
					}
				}
				if stop < 0 {
					t.Fatalf("no epoch to stop after that is not the best and is followed by the best (best epoch %d of %d)", res.BestEpoch, len(res.Epochs))
				}
				whole, st, accSt, _ := run(nil, nil, stop)
				resumed, _, _, _ := run(st, &accSt, -1)
				if !slices.Equal(whole, resumed) {
					t.Errorf("resumed scores differ from the uninterrupted run's:\n%v\n%v", whole[:6], resumed[:6])
				}
			})
		}
	}
}
