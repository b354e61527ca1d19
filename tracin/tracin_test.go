package tracin_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tracin"
)

type fixture struct {
	be         compute.Backend
	m          *nn.Net
	train, val *nn.Set
	cells      []int32 // train cells then val cells
	vals       []float64
	nTrain     int
}

func newFixture(t *testing.T, seed uint64) *fixture {
	return fixtureOf(t, rand.New(rand.NewPCG(seed, 1)), []int{7, 6, 5}, 90, 60)
}

// fixtureOf draws n random cells over dims (values 1 + N(0,1)) and an MLP
// (layers 12,16,8) from rng, the first nTrain cells training, the rest
// validation.
func fixtureOf(t *testing.T, rng *rand.Rand, dims []int, n, nTrain int) *fixture {
	be := cpu.New()
	cells := make([]int32, n*3)
	vals := make([]float64, n)
	for k := range vals {
		for m, d := range dims {
			cells[k*3+m] = int32(rng.IntN(d))
		}
		vals[k] = 1 + rng.NormFloat64()
	}
	m, err := nn.NewMLP(be, nn.Config{Dims: dims, Layers: []int{12, 16, 8}, Capacity: 32}, rng)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{be: be, m: m, cells: cells, vals: vals, nTrain: nTrain,
		train: m.NewSet(cells[:nTrain*3], vals[:nTrain]),
		val:   m.NewSet(cells[nTrain*3:], vals[nTrain:])}
}

// use replaces the fixture's MLP by a fresh net of the given kind ("mlp"
// keeps it; "costco", "fm", "hybrid") over the same cells. The pairwise
// nets' parameters are perturbed (N(0, 0.3²) added) so that the FM's
// Linear layer, zero at initialisation, and the interaction term weigh in
// every gradient.
func (f *fixture) use(t *testing.T, kind string) {
	t.Helper()
	dims := []int{7, 6, 5}
	rng := rand.New(rand.NewPCG(1, 1))
	var m *nn.Net
	var err error
	switch kind {
	case "mlp":
		return
	case "costco":
		m, err = nn.NewCoSTCo(f.be, nn.CoSTCoConfig{Dims: dims, Rank: 4, Channels: 3, Capacity: 32}, rng)
	case "fm":
		m, err = nn.NewFM(f.be, nn.FMConfig{Dims: dims, Rank: 3, Capacity: 32}, rng)
	case "hybrid":
		m, err = nn.NewHybrid(f.be, nn.Config{Dims: dims, Layers: []int{12, 16, 8}, Capacity: 32}, rng)
	default:
		t.Fatalf("kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	if m.Pairwise() {
		p := make([]float32, m.NumParams())
		f.be.Download(p, m.Params())
		for i := range p {
			p[i] += float32(0.3 * rng.NormFloat64())
		}
		f.be.Upload(m.Params(), p)
	}
	f.m = m
	f.train = m.NewSet(f.cells[:f.nTrain*3], f.vals[:f.nTrain])
	f.val = m.NewSet(f.cells[f.nTrain*3:], f.vals[f.nTrain:])
}

// perCell returns the explicit per-cell gradient of ℓ_z = (x̂_z − x_z)² with
// respect to the output layer (W_out then b_out) at the model's current
// parameters, computed by a full backward pass with batch 1.
func (f *fixture) perCell(z int) []float64 {
	one := f.m.NewSet(f.cells[z*3:z*3+3], f.vals[z:z+1])
	defer one.Free()
	pred := f.m.Forward(one.Rows)
	delta := f.be.Alloc(1)
	f.be.MSEGrad(delta, nil, pred, one.Vals, 2)
	f.m.Backward(one.Rows, delta, false)
	g := make([]float32, f.m.LastHidden()+1)
	f.be.Download(g, f.m.OutputGrad())
	out := make([]float64, len(g))
	for i, v := range g {
		out[i] = float64(v)
	}
	return out
}

// explicitTerm returns η·∇ℓ(Θ, z)·Σ_{z'∈val} ∇ℓ(Θ, z') for every training
// cell z, from explicit per-cell gradients (the quadratic-memory way).
func (f *fixture) explicitTerm(eta float64) []float64 {
	n := len(f.vals)
	G := make([]float64, f.m.LastHidden()+1)
	for z := f.nTrain; z < n; z++ {
		for i, v := range f.perCell(z) {
			G[i] += v
		}
	}
	out := make([]float64, f.nTrain)
	for z := 0; z < f.nTrain; z++ {
		for i, v := range f.perCell(z) {
			out[z] += eta * v * G[i]
		}
	}
	return out
}

func (f *fixture) checkScores(t *testing.T, acc tracin.Accumulator, want []float64) {
	t.Helper()
	got := make([]float32, f.nTrain)
	if err := f.be.Download(got, acc.Scores()); err != nil {
		t.Fatal(err)
	}
	var rms float64
	for _, w := range want {
		rms += w * w
	}
	rms = math.Sqrt(rms / float64(len(want)))
	if rms == 0 {
		t.Fatal("explicit scores are all zero: the comparison cannot fail")
	}
	for z := range want {
		if d := math.Abs(float64(got[z]) - want[z]); d > 1e-4*(math.Abs(want[z])+rms) {
			t.Errorf("cell %d: fused score %g, explicit %g", z, got[z], want[z])
		}
	}
}

// TestFusedEqualsExplicit drives five checkpoints by hand, the best being
// the 1st and 3rd, and checks that the fused scores equal the explicit sum
// of per-cell gradient dot products over checkpoints 1…3 (K = 3), on the
// MLP, the factorization machine (whose output layer reads the gathered
// embeddings) and the hybrid.
func TestFusedEqualsExplicit(t *testing.T) {
	for _, kind := range []string{"mlp", "fm", "hybrid"} {
		t.Run(kind, func(t *testing.T) { fusedEqualsExplicit(t, kind) })
	}
}

func fusedEqualsExplicit(t *testing.T, kind string) {
	f := newFixture(t, 11)
	f.use(t, kind)
	const eta = 0.01
	acc := tracin.NewLastLayer(f.m, f.train, eta)
	rng := rand.New(rand.NewPCG(2, 3))
	want := make([]float64, f.nTrain)
	params := make([]float32, f.m.NumParams())
	for k, best := range []bool{true, false, true, false, false} {
		// A new checkpoint Θ_k: perturb every parameter.
		f.be.Download(params, f.m.Params())
		for i := range params {
			params[i] += float32(0.05 * rng.NormFloat64())
		}
		f.be.Upload(f.m.Params(), params)
		if _, err := f.m.EvaluateGrad(f.val, acc.ValGradSum()); err != nil {
			t.Fatal(err)
		}
		if k < 3 {
			for z, v := range f.explicitTerm(eta) {
				want[z] += v
			}
		}
		if err := acc.Checkpoint(best); err != nil {
			t.Fatal(err)
		}
	}
	f.checkScores(t, acc, want)
}

// TestThroughTrain wires the accumulator into nn.Train as documented and
// checks the result against explicit gradients at saved checkpoints.
func TestThroughTrain(t *testing.T) {
	f := newFixture(t, 12)
	const eta = 1e-2
	acc := tracin.NewLastLayer(f.m, f.train, eta)
	var saved [][]float32
	res, err := nn.Train(context.Background(), f.m, f.train, f.val, nn.TrainConfig{
		Epochs: 8, Batch: 16, Patience: 8, LR: eta, Shuffle: rand.New(rand.NewPCG(1, 1)),
		ValGradSum: acc.ValGradSum(),
		AfterEpoch: func(e nn.Epoch) error {
			p := make([]float32, f.m.NumParams())
			f.be.Download(p, f.m.Params())
			saved = append(saved, p)
			return acc.Checkpoint(e.Best)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, f.nTrain)
	for k := 0; k < res.BestEpoch; k++ {
		f.be.Upload(f.m.Params(), saved[k])
		for z, v := range f.explicitTerm(eta) {
			want[z] += v
		}
	}
	f.checkScores(t, acc, want)
}

// TestEntityImportance checks eq. 6 with the absolute value of eq. 5 and the
// per-mode normalisation against a direct loop.
func TestEntityImportance(t *testing.T) {
	be := cpu.New()
	dims := []int{3, 2}
	// Global rows: mode 1 entities are rows 0..2, mode 2 rows 3..4.
	rows := []int32{0, 3, 2, 4, 0, 4, 1, 3}
	score := []float32{-1, 2, 0.5, -4}
	rb, sb := be.AllocI32(len(rows)), be.Alloc(len(score))
	be.UploadI32(rb, rows)
	be.Upload(sb, score)
	got, err := tracin.EntityImportance(be, sb, rb, dims)
	if err != nil {
		t.Fatal(err)
	}
	// |score| = 1, 2, .5, 4 (sum 7.5).
	want := [][]float64{{1.5 / 7.5, 4 / 7.5, 2 / 7.5}, {5 / 7.5, 2.5 / 7.5}}
	for n := range want {
		for i := range want[n] {
			if math.Abs(got[n][i]-want[n][i]) > 1e-7 {
				t.Errorf("mode %d entity %d: %v, want %v", n+1, i, got[n][i], want[n][i])
			}
		}
	}
	be.Upload(sb, []float32{0, 0, 0, 0})
	if _, err := tracin.EntityImportance(be, sb, rb, dims); err == nil {
		t.Error("all-zero scores: no error")
	}
}

// perCellAll returns the explicit per-cell gradient of ℓ_z = (x̂_z − x_z)²
// with respect to every parameter.
func (f *fixture) perCellAll(z int) []float64 {
	one := f.m.NewSet(f.cells[z*3:z*3+3], f.vals[z:z+1])
	defer one.Free()
	pred := f.m.Forward(one.Rows)
	delta := f.be.Alloc(1)
	f.be.MSEGrad(delta, nil, pred, one.Vals, 2)
	f.m.Backward(one.Rows, delta, false)
	g := make([]float32, f.m.NumParams())
	f.be.Download(g, f.m.Grads())
	out := make([]float64, len(g))
	for i, v := range g {
		out[i] = float64(v)
	}
	return out
}

// TestAllLayersEqualsExplicit checks the all-layer fused scores (δᵀGa per
// layer, embeddings included) against explicit full per-cell gradients, on
// the MLP, on CoSTCo (whose first layer has several rows per cell), and on
// the factorization machine and the hybrid (whose embedding gradients
// include the interaction term's, which the fused pass takes from
// BackwardInput and the explicit one from Backward).
func TestAllLayersEqualsExplicit(t *testing.T) {
	for _, kind := range []string{"mlp", "costco", "fm", "hybrid"} {
		t.Run(kind, func(t *testing.T) {
			f := newFixture(t, 21)
			f.use(t, kind)
			const eta = 0.01
			acc := tracin.NewAllLayers(f.m, f.train, f.val, eta)
			rng := rand.New(rand.NewPCG(5, 5))
			params := make([]float32, f.m.NumParams())
			want := make([]float64, f.nTrain)
			for k, best := range []bool{true, true, false} {
				f.be.Download(params, f.m.Params())
				for i := range params {
					params[i] += float32(0.05 * rng.NormFloat64())
				}
				f.be.Upload(f.m.Params(), params)
				if k < 2 {
					G := make([]float64, len(params))
					for z := f.nTrain; z < len(f.vals); z++ {
						for i, v := range f.perCellAll(z) {
							G[i] += v
						}
					}
					for z := 0; z < f.nTrain; z++ {
						for i, v := range f.perCellAll(z) {
							want[z] += eta * v * G[i]
						}
					}
				}
				if err := acc.Checkpoint(best); err != nil {
					t.Fatal(err)
				}
			}
			f.checkScores(t, acc, want)
		})
	}
}

// TestRepresenter checks representer scores against explicit output-layer
// weight gradients: score_z = ∇_W ℓ_z · Σ_val ∇_W ℓ_z' (no bias term).
func TestRepresenter(t *testing.T) {
	f := newFixture(t, 31)
	score, err := tracin.Representer(f.m, f.train, f.val)
	if err != nil {
		t.Fatal(err)
	}
	d := f.m.LastHidden()
	G := make([]float64, d)
	for z := f.nTrain; z < len(f.vals); z++ {
		for i, v := range f.perCell(z)[:d] {
			G[i] += v
		}
	}
	got := make([]float32, f.nTrain)
	f.be.Download(got, score)
	var rms float64
	want := make([]float64, f.nTrain)
	for z := range want {
		for i, v := range f.perCell(z)[:d] {
			want[z] += v * G[i]
		}
		rms += want[z] * want[z]
	}
	rms = math.Sqrt(rms / float64(len(want)))
	for z := range want {
		if math.Abs(float64(got[z])-want[z]) > 1e-4*(math.Abs(want[z])+rms) {
			t.Errorf("cell %d: representer %g, explicit %g", z, got[z], want[z])
		}
	}
}

// TestCP1RecoversRankOne: on a dense, exactly rank-1 importance tensor the
// rank-1 CP factors, normalised, are the generating factors normalised.
func TestCP1RecoversRankOne(t *testing.T) {
	be := cpu.New()
	dims := []int{4, 3, 5}
	fac := [][]float64{{1, 2, 3, 4}, {0.5, 1, 2}, {3, 1, 4, 1, 5}}
	var rows []int32
	var score []float32
	for i := 0; i < 4; i++ {
		for j := 0; j < 3; j++ {
			for k := 0; k < 5; k++ {
				rows = append(rows, int32(i), int32(4+j), int32(7+k))
				s := fac[0][i] * fac[1][j] * fac[2][k]
				if (i+j+k)%2 == 1 {
					s = -s // the sign must not matter: CP fits |score|
				}
				score = append(score, float32(s))
			}
		}
	}
	rb, sb := be.AllocI32(len(rows)), be.Alloc(len(score))
	be.UploadI32(rb, rows)
	be.Upload(sb, score)
	got, err := tracin.EntityImportanceCP1(be, sb, rb, dims, 1e-9, 50)
	if err != nil {
		t.Fatal(err)
	}
	for n := range fac {
		var sum float64
		for _, v := range fac[n] {
			sum += v
		}
		for i, v := range fac[n] {
			if math.Abs(got[n][i]-v/sum) > 1e-6 {
				t.Errorf("mode %d entity %d: %v, want %v", n+1, i, got[n][i], v/sum)
			}
		}
	}
}
