package nn

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/compute/ref"
)

// refLoss computes the batch-mean MSE of the model in float64 with
// parameters p laid out as the package documentation says, using compute/ref
// loops for the gather and the layers and pairwise64 for a pairwise net's
// interaction term.
func refLoss(m *Net, p []float64, rows []int32, y []float64) float64 {
	x := refPredict(m, p, rows)
	var s float64
	for i, v := range x {
		s += (v - y[i]) * (v - y[i])
	}
	return s / float64(len(y))
}

// pairwise64 is the interaction term of one cell's gathered ModeMajor input
// xb (N rows of width E), written out as the package documentation states
// it, in float64: Σₙ xₙ[E−1] + Σ_{n<n'} Σ_{k<E−1} xₙ[k]·x_{n'}[k].
func pairwise64(xb []float64, order, width int) float64 {
	var s float64
	for n := 0; n < order; n++ {
		s += xb[n*width+width-1]
		for n2 := n + 1; n2 < order; n2++ {
			for k := 0; k < width-1; k++ {
				s += xb[n*width+k] * xb[n2*width+k]
			}
		}
	}
	return s
}

// refPredict computes the model's predictions of the cells rows (B×N
// global rows) in float64 with parameters p (see refLoss).
func refPredict(m *Net, p []float64, rows []int32) []float64 {
	order, batch := m.Order(), len(rows)/m.Order()
	rowsTotal := 0
	for _, d := range m.dims {
		rowsTotal += d
	}
	off := rowsTotal * m.width
	x := make([]float64, batch*order*m.width)
	ref.Gather(x, p[:off], rows, order, m.width, m.layout)
	x0 := x
	for _, ly := range m.layers {
		w := p[off : off+ly.In*ly.Out]
		b := p[off+ly.In*ly.Out : off+ly.In*ly.Out+ly.Out]
		off += ly.In*ly.Out + ly.Out
		next := make([]float64, batch*ly.Rows*ly.Out)
		ref.LinearForward(next, x, w, b, ly.In, ly.Out, ly.ReLU)
		x = next
	}
	if m.pairwise {
		ow := order * m.width
		for b := range x {
			x[b] += pairwise64(x0[b*ow:(b+1)*ow], order, m.width)
		}
	}
	return x
}

// TestGradientCheck compares the backend's gradient of the batch-mean MSE
// with respect to every parameter, embeddings included, against float64
// central differences of the reference forward pass, for the MLP, CoSTCo,
// the factorization machine and the hybrid. The pairwise nets' parameters
// are perturbed first (N(0, 0.3²) added), so that the FM's Linear layer,
// zero at initialisation, passes a gradient to the embeddings too and the
// interaction term is not small beside the MLP's.
func TestGradientCheck(t *testing.T) {
	mlp := func(layers ...int) func([]int, *rand.Rand) (*Net, error) {
		return func(dims []int, rng *rand.Rand) (*Net, error) {
			return NewMLP(cpu.New(), Config{Dims: dims, Layers: layers, Capacity: 6}, rng)
		}
	}
	costco := func(r, c int) func([]int, *rand.Rand) (*Net, error) {
		return func(dims []int, rng *rand.Rand) (*Net, error) {
			return NewCoSTCo(cpu.New(), CoSTCoConfig{Dims: dims, Rank: r, Channels: c, Capacity: 6}, rng)
		}
	}
	fm := func(rank int) func([]int, *rand.Rand) (*Net, error) {
		return func(dims []int, rng *rand.Rand) (*Net, error) {
			return NewFM(cpu.New(), FMConfig{Dims: dims, Rank: rank, Capacity: 6}, rng)
		}
	}
	hybrid := func(layers ...int) func([]int, *rand.Rand) (*Net, error) {
		return func(dims []int, rng *rand.Rand) (*Net, error) {
			return NewHybrid(cpu.New(), Config{Dims: dims, Layers: layers, Capacity: 6}, rng)
		}
	}
	for _, tc := range []struct {
		name  string
		dims  []int
		build func([]int, *rand.Rand) (*Net, error)
	}{
		{"fm", []int{5, 4, 3}, fm(3)},
		{"fm-order2", []int{6, 5}, fm(4)},
		{"fm-order4-rank1", []int{3, 2, 4, 2}, fm(1)},
		{"hybrid", []int{5, 4, 3}, hybrid(9, 8, 6)},
		{"hybrid-order4-no-hidden", []int{3, 2, 4, 2}, hybrid(12)},
		{"mlp-paper-shaped", []int{5, 4, 3}, mlp(9, 8, 6)},
		{"mlp-one-hidden", []int{7, 2}, mlp(8, 5)},
		{"mlp-no-hidden", []int{3, 3, 3, 2}, mlp(8)},
		{"costco", []int{5, 4, 3}, costco(4, 3)},
		{"costco-order4", []int{3, 2, 4, 2}, costco(3, 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 7))
			const batch = 6
			m, err := tc.build(tc.dims, rng)
			if err != nil {
				t.Fatal(err)
			}
			be := m.Backend()
			if m.Pairwise() {
				p := make([]float32, m.NumParams())
				be.Download(p, m.Params())
				for i := range p {
					p[i] += float32(0.3 * rng.NormFloat64())
				}
				be.Upload(m.Params(), p)
			}
			// Cells with repeated entities, so the scatter must accumulate.
			cells := make([]int32, batch*len(tc.dims))
			for k := range cells {
				cells[k] = int32(rng.IntN(tc.dims[k%len(tc.dims)]))
			}
			copy(cells[len(tc.dims):2*len(tc.dims)], cells[:len(tc.dims)])
			y := make([]float64, batch)
			for i := range y {
				y[i] = float64(float32(rng.NormFloat64()))
			}
			s := m.NewSet(cells, y)
			pred := m.Forward(s.Rows)
			delta := be.Alloc(batch)
			be.MSEGrad(delta, nil, pred, s.Vals, 2/float32(batch))
			m.Backward(s.Rows, delta, false)
			g32 := make([]float32, m.NumParams())
			p32 := make([]float32, m.NumParams())
			be.Download(g32, m.Grads())
			be.Download(p32, m.Params())
			p := make([]float64, len(p32))
			for i, v := range p32 {
				p[i] = float64(v)
			}
			rows := make([]int32, len(cells))
			m.Rows(rows, cells)
			const h = 1e-6
			fd := make([]float64, len(p))
			var rms float64
			for i := range p {
				save := p[i]
				p[i] = save + h
				lp := refLoss(m, p, rows, y)
				p[i] = save - h
				lm := refLoss(m, p, rows, y)
				p[i] = save
				fd[i] = (lp - lm) / (2 * h)
				rms += fd[i] * fd[i]
			}
			rms = math.Sqrt(rms / float64(len(p)))
			bad := 0
			for i := range p {
				// float32 gradient against float64 differences: a relative
				// error of a few float32 ulps per reduction step.
				tol := 1e-4 * (math.Abs(fd[i]) + rms)
				if d := math.Abs(float64(g32[i]) - fd[i]); d > tol {
					if bad++; bad <= 5 {
						t.Errorf("parameter %d: gradient %g, central difference %g (|Δ| %g > %g)", i, g32[i], fd[i], d, tol)
					}
				}
			}
			if rms == 0 {
				t.Fatal("all central differences are zero: the check cannot fail")
			}
		})
	}
}

// TestInit checks PyTorch's default initialisation: embeddings N(0,1),
// Linear weights and biases U(−1/√fan_in, 1/√fan_in).
func TestInit(t *testing.T) {
	be := cpu.New()
	m, err := NewMLP(be, Config{Dims: []int{300, 200, 100}, Layers: []int{150, 64, 16}, Capacity: 1}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	down := func(b compute.F32) []float32 {
		h := make([]float32, b.Len())
		be.Download(h, b)
		return h
	}
	tab := down(m.table)
	var mean, sq float64
	for _, v := range tab {
		mean += float64(v)
		sq += float64(v) * float64(v)
	}
	n := float64(len(tab))
	mean /= n
	vr := sq/n - mean*mean
	// 30000 N(0,1) draws: the mean's standard error is 0.0058.
	if math.Abs(mean) > 0.03 || math.Abs(vr-1) > 0.05 {
		t.Errorf("embedding mean %.4f, variance %.4f; want ≈ 0 and 1", mean, vr)
	}
	for l := range m.w {
		bound := 1 / math.Sqrt(float64(m.layers[l].In))
		for _, b := range []compute.F32{m.w[l], m.b[l]} {
			vals := down(b)
			lo, hi := 0.0, 0.0
			for _, v := range vals {
				lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
			}
			if lo < -bound || hi > bound {
				t.Errorf("layer %d: values in [%g, %g] outside ±%g", l+1, lo, hi, bound)
			}
			if len(vals) > 100 && (hi < 0.9*bound || lo > -0.9*bound) {
				t.Errorf("layer %d: values in [%g, %g] do not fill ±%g", l+1, lo, hi, bound)
			}
		}
	}
}

func TestNewMLPErrors(t *testing.T) {
	be := cpu.New()
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []Config{
		{Dims: []int{3, 3}, Layers: []int{5, 4}, Capacity: 1},          // 5 % 2 ≠ 0
		{Dims: []int{3, 3}, Layers: nil, Capacity: 1},                  // no layers
		{Dims: []int{3, 0}, Layers: []int{4}, Capacity: 1},             // empty mode
		{Dims: []int{3, 3}, Layers: []int{4, 0}, Capacity: 1},          // zero width
		{Dims: []int{math.MaxInt32, 5}, Layers: []int{2}, Capacity: 1}, // rows overflow int32
		{Dims: nil, Layers: []int{4}, Capacity: 1},                     // order 0
		{Dims: []int{3, 3}, Layers: []int{4}, Capacity: 0},             // capacity
	} {
		if _, err := NewMLP(be, c, rng); err == nil {
			t.Errorf("NewMLP(%+v) succeeded; want an error", c)
		}
	}
}

// lowRank returns cells of a random rank-2 tensor with values Σ_r Πₙ Aₙ[iₙ,r].
func lowRank(rng *rand.Rand, dims []int, n int) ([]int32, []float64) {
	const rank = 2
	f := make([][]float64, len(dims))
	for m, d := range dims {
		f[m] = make([]float64, d*rank)
		for i := range f[m] {
			f[m][i] = rng.Float64()
		}
	}
	cells := make([]int32, 0, n*len(dims))
	vals := make([]float64, 0, n)
	for len(vals) < n {
		v := 0.0
		cell := make([]int32, len(dims))
		for m, d := range dims {
			cell[m] = int32(rng.IntN(d))
		}
		for r := 0; r < rank; r++ {
			p := 1.0
			for m := range dims {
				p *= f[m][int(cell[m])*rank+r]
			}
			v += p
		}
		cells = append(cells, cell...)
		vals = append(vals, v)
	}
	return cells, vals
}

// lowRankModel returns a CPU backend, an MLP (24, 32, 16) on it and the
// 1200 training and 300 validation cells of a rank-2 20×15×10 tensor, the
// same on every call (data and initialisation from one seeded stream).
func lowRankModel(t *testing.T) (*cpu.Backend, *Net, *Set, *Set) {
	t.Helper()
	be := cpu.New()
	rng := rand.New(rand.NewPCG(3, 4))
	dims := []int{20, 15, 10}
	cells, vals := lowRank(rng, dims, 1500)
	m, err := NewMLP(be, Config{Dims: dims, Layers: []int{24, 32, 16}, Capacity: 256}, rng)
	if err != nil {
		t.Fatal(err)
	}
	return be, m, m.NewSet(cells[:1200*3], vals[:1200]), m.NewSet(cells[1200*3:], vals[1200:])
}

// TestTrainRestoresBest checks that training lowers the validation MSE and
// leaves the best checkpoint in the model: evaluating after Train gives
// exactly the best epoch's validation MSE.
func TestTrainRestoresBest(t *testing.T) {
	_, m, train, val := lowRankModel(t)
	before, err := m.Evaluate(val)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	res, err := Train(context.Background(), m, train, val, TrainConfig{
		Epochs: 40, Batch: 64, Patience: 3, LR: 1e-2, Shuffle: rand.New(rand.NewPCG(5, 6)),
		AfterEpoch: func(Epoch) error { calls++; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != len(res.Epochs) {
		t.Errorf("AfterEpoch ran %d times for %d epochs", calls, len(res.Epochs))
	}
	after, err := m.Evaluate(val)
	if err != nil {
		t.Fatal(err)
	}
	if after != res.BestValMSE {
		t.Errorf("validation MSE after Train %v, best epoch's %v: the best checkpoint was not restored", after, res.BestValMSE)
	}
	if !(after < before/4) {
		t.Errorf("validation MSE %v → %v: training did not learn a rank-2 tensor", before, after)
	}
	last := res.Epochs[len(res.Epochs)-1].N
	if last != 40 && last-res.BestEpoch != 3 {
		t.Errorf("stopped at epoch %d with best %d and patience 3", last, res.BestEpoch)
	}
	for _, e := range res.Epochs {
		if e.Best != (e.ValMSE <= res.BestValMSE && e.N == res.BestEpoch) && e.N == res.BestEpoch {
			t.Errorf("epoch %d: Best flag %v", e.N, e.Best)
		}
	}
}

// TestTrainBestState checks the best checkpoint that Train keeps (lazily,
// as the parameters themselves while the best epoch is the last one): the
// Best of every saved state equals the Params saved after the best epoch so
// far, and after Train the model holds the overall best epoch's parameters,
// whether that epoch is the last one or an earlier one.
func TestTrainBestState(t *testing.T) {
	cases := []struct {
		epochs     int
		lr         float64
		lastIsBest bool
	}{{3, 1e-2, true}, {8, 1e-2, false}}
	for _, c := range cases {
		lr := c.lr
		be, m, train, val := lowRankModel(t)
		var states []*TrainState
		res, err := Train(context.Background(), m, train, val, TrainConfig{
			Epochs: c.epochs, Batch: 64, Patience: c.epochs, LR: lr, Shuffle: rand.New(rand.NewPCG(5, 6)),
			Save: func(st *TrainState) error { states = append(states, st); return nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		bestSoFar := 0
		for i, st := range states {
			if st.Result.BestEpoch == st.Epoch {
				bestSoFar = i
			}
			if !slices.Equal(st.Best, states[bestSoFar].Params) {
				t.Errorf("lr %g: the state after epoch %d holds as Best other parameters than epoch %d's", lr, st.Epoch, states[bestSoFar].Epoch)
			}
		}
		got := make([]float32, m.Params().Len())
		if err := be.Download(got, m.Params()); err != nil {
			t.Fatal(err)
		}
		if want := states[res.BestEpoch-1].Params; !slices.Equal(got, want) {
			t.Errorf("lr %g: after Train the model does not hold epoch %d's parameters (of %d epochs)", lr, res.BestEpoch, len(res.Epochs))
		}
		if (res.BestEpoch == len(res.Epochs)) != c.lastIsBest {
			t.Errorf("%d epochs: best epoch %d of %d; the case is meant to have its best epoch last: %v", c.epochs, res.BestEpoch, len(res.Epochs), c.lastIsBest)
		}
	}
}

// TestEvaluateGrad checks the validation gradient sum against per-cell
// gradients from Backward with batch 1 and delta 2e.
func TestEvaluateGrad(t *testing.T) {
	be := cpu.New()
	rng := rand.New(rand.NewPCG(8, 9))
	dims := []int{6, 5, 4}
	cells, vals := lowRank(rng, dims, 40)
	m, err := NewMLP(be, Config{Dims: dims, Layers: []int{12, 10, 7}, Capacity: 16}, rng)
	if err != nil {
		t.Fatal(err)
	}
	s := m.NewSet(cells, vals)
	d := m.LastHidden()
	g := be.Alloc(d + 1)
	mse, err := m.EvaluateGrad(s, g)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, d+1)
	be.Download(got, g)
	want := make([]float64, d+1)
	var sq float64
	for z := 0; z < s.Len(); z++ {
		one := m.NewSet(cells[z*3:z*3+3], vals[z:z+1])
		pred := m.Forward(one.Rows)
		delta := be.Alloc(1)
		be.MSEGrad(delta, nil, pred, one.Vals, 2)
		p := make([]float32, 1)
		be.Download(p, pred)
		sq += (float64(p[0]) - float64(float32(vals[z]))) * (float64(p[0]) - float64(float32(vals[z])))
		m.Backward(one.Rows, delta, false)
		gz := make([]float32, d+1)
		be.Download(gz, m.OutputGrad())
		for i, v := range gz {
			want[i] += float64(v)
		}
	}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 1e-5*(1+math.Abs(want[i])) {
			t.Errorf("G[%d] = %g, Σ per-cell gradients %g", i, got[i], want[i])
		}
	}
	if math.Abs(mse-sq/40) > 1e-6*sq {
		t.Errorf("MSE %g, per-cell %g", mse, sq/40)
	}
}

// TestBytes: Bytes without training is exactly the float32s a net holds
// (parameters, gradients, activations and their gradients), for an MLP,
// CoSTCo and an FM, and a product of settings that overflows int stays a
// finite float.
func TestBytes(t *testing.T) {
	dims := []int{7, 5, 3}
	be := cpu.New()
	for _, tc := range []struct {
		name  string
		build func() (*Net, error)
		width int
		ls    []Layer
	}{
		{"mlp", func() (*Net, error) {
			return NewMLP(be, Config{Dims: dims, Layers: []int{12, 16, 8}, Capacity: 33}, rand.New(rand.NewPCG(1, 2)))
		}, 4, MLPLayers([]int{12, 16, 8})},
		{"costco", func() (*Net, error) {
			return NewCoSTCo(be, CoSTCoConfig{Dims: dims, Rank: 6, Channels: 5, Capacity: 33}, rand.New(rand.NewPCG(1, 2)))
		}, 6, CoSTCoLayers(3, 6, 5)},
		{"fm", func() (*Net, error) {
			return NewFM(be, FMConfig{Dims: dims, Rank: 4, Capacity: 33}, rand.New(rand.NewPCG(1, 2)))
		}, 5, FMLayers(3, 4)},
	} {
		m, err := tc.build()
		if err != nil {
			t.Fatal(err)
		}
		n := m.params.Len() + m.grads.Len()
		for l := range m.acts {
			n += m.acts[l].Len() + m.dacts[l].Len()
		}
		if got := Bytes(dims, tc.width, tc.ls, 33, 1, false); got != float64(4*n) {
			t.Errorf("%s: Bytes %v, the net holds %d bytes", tc.name, got, 4*n)
		}
		if got, want := Bytes(dims, tc.width, tc.ls, 33, 1, true)-Bytes(dims, tc.width, tc.ls, 33, 1, false), float64(8*m.params.Len()); got != want {
			t.Errorf("%s: Adam's moments %v bytes, want %v", tc.name, got, want)
		}
	}
	if b := Bytes(dims, 1<<20, CoSTCoLayers(3, 1<<20, 1<<20), 1<<24, 1, true); math.IsInf(b, 0) || b < 1<<62 {
		t.Errorf("CoSTCo of rank and channels 2²⁰: %v bytes", b)
	}
}
