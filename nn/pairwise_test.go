package nn

import (
	"context"
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/cluster/clustertest"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
)

// newKind builds a net of the given kind on be with small shapes for dims
// (order 3): an MLP and a hybrid of layers 12, 16, 8 (E = 4), an FM of
// rank 3 (E = 4), a CoSTCo of rank 5 and 4 channels.
func newKind(t *testing.T, be compute.Backend, kind string, dims []int, capacity int, rng *rand.Rand) *Net {
	t.Helper()
	var m *Net
	var err error
	switch kind {
	case KindMLP:
		m, err = NewMLP(be, Config{Dims: dims, Layers: []int{4 * len(dims), 16, 8}, Capacity: capacity}, rng)
	case KindHybrid:
		m, err = NewHybrid(be, Config{Dims: dims, Layers: []int{4 * len(dims), 16, 8}, Capacity: capacity}, rng)
	case KindFM:
		m, err = NewFM(be, FMConfig{Dims: dims, Rank: 3, Capacity: capacity}, rng)
	case KindCoSTCo:
		m, err = NewCoSTCo(be, CoSTCoConfig{Dims: dims, Rank: 5, Channels: 4, Capacity: capacity}, rng)
	default:
		t.Fatalf("kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Free)
	return m
}

// TestPairwiseInit: NewFM draws only the table, N(0, 0.1²), and starts its
// Linear layer at zero; NewHybrid's Linear layers are NewMLP's of the same
// seed and layers, bit for bit, and its table is NewMLP's scaled by 0.1
// (one draw order); both are pairwise, the MLP is not.
func TestPairwiseInit(t *testing.T) {
	be := cpu.New()
	dims := []int{300, 200, 100}
	fm, err := NewFM(be, FMConfig{Dims: dims, Rank: 9, Capacity: 1}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	defer fm.Free()
	if fm.Kind() != "fm" || !fm.Pairwise() || fm.Width() != 10 || fm.NumLayers() != 1 || fm.LastHidden() != 30 || fm.Layout() != compute.ModeMajor {
		t.Errorf("fm: kind %s, pairwise %v, width %d, %d layers, last hidden %d", fm.Kind(), fm.Pairwise(), fm.Width(), fm.NumLayers(), fm.LastHidden())
	}
	p := download(t, be, fm.Params())
	tab := p[:fm.TableRows()*fm.Width()]
	var mean, sq float64
	for _, v := range tab {
		mean += float64(v)
		sq += float64(v) * float64(v)
	}
	n := float64(len(tab))
	mean /= n
	// 6000 N(0, 0.01) draws: the mean's standard error is 0.0013, the
	// variance's 1.8e-4.
	if vr := sq/n - mean*mean; math.Abs(mean) > 0.006 || math.Abs(vr-0.01) > 0.001 {
		t.Errorf("fm table mean %.4f, variance %.5f; want ≈ 0 and 0.01", mean, vr)
	}
	for i, v := range p[len(tab):] {
		if v != 0 {
			t.Fatalf("fm Linear parameter %d is %g, want 0", i, v)
		}
	}
	// The FM draws nothing but the table: an rng drawn as far gives the
	// same next value.
	r1, r2 := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
	if _, err := NewFM(be, FMConfig{Dims: []int{4, 3}, Rank: 2, Capacity: 1}, r1); err != nil {
		t.Fatal(err)
	}
	for range 7 * 3 {
		r2.NormFloat64()
	}
	if r1.Uint64() != r2.Uint64() {
		t.Error("NewFM drew more than the table's R×E normals")
	}

	mlp := newKind(t, be, KindMLP, []int{30, 20, 10}, 1, rand.New(rand.NewPCG(5, 6)))
	hyb := newKind(t, be, KindHybrid, []int{30, 20, 10}, 1, rand.New(rand.NewPCG(5, 6)))
	if hyb.Kind() != "hybrid" || !hyb.Pairwise() || mlp.Pairwise() || !slices.Equal(hyb.Layers(), mlp.Layers()) {
		t.Errorf("hybrid: kind %s, pairwise %v (mlp %v), layers %v, want %v", hyb.Kind(), hyb.Pairwise(), mlp.Pairwise(), hyb.Layers(), mlp.Layers())
	}
	pm, ph := download(t, be, mlp.Params()), download(t, be, hyb.Params())
	tl := mlp.TableRows() * mlp.Width()
	if !equalBits32(pm[tl:], ph[tl:]) {
		t.Error("the hybrid's Linear layers differ from the MLP's of the same seed")
	}
	for i := range tl {
		if d := math.Abs(float64(ph[i]) - 0.1*float64(pm[i])); d > 1e-7*math.Abs(float64(pm[i])) {
			t.Fatalf("hybrid table element %d: %g, want 0.1 × the MLP's %g", i, ph[i], pm[i])
		}
	}
}

// TestPairwiseForward: the pairwise nets' predictions are the float64
// reference's (gather, layers, then Σₙ bias + Σ_{n<n'} ⟨factors⟩, written
// out in pairwise64); ForwardMSE gives Forward's prediction and MSEGrad's
// delta and squared error bit for bit, without the fused output layer
// (whose pred would lack the term); an MLP's ForwardMSE still takes it.
func TestPairwiseForward(t *testing.T) {
	dims := []int{9, 7, 5}
	cells, vals := lowRank(rand.New(rand.NewPCG(3, 4)), dims, 50)
	for _, kind := range []string{KindFM, KindHybrid, KindMLP} {
		be := &countingMSE{Backend: cpu.New()}
		rng := rand.New(rand.NewPCG(1, 2))
		m := newKind(t, be, kind, dims, 50, rng)
		p := download(t, be, m.Params())
		for i := range p {
			p[i] += float32(0.3 * rng.NormFloat64())
		}
		be.Upload(m.Params(), p)
		set := m.NewSet(cells, vals)
		got := download(t, be, m.Forward(set.Rows))
		p64 := make([]float64, len(p))
		for i, v := range p {
			p64[i] = float64(v)
		}
		want := refPredict(m, p64, downloadI32(t, be, set.Rows))
		var rms float64
		for _, w := range want {
			rms += w * w
		}
		rms = math.Sqrt(rms / float64(len(want)))
		for b := range want {
			if d := math.Abs(float64(got[b]) - want[b]); d > 1e-5*(math.Abs(want[b])+rms) {
				t.Errorf("%s: cell %d: prediction %g, reference %g", kind, b, got[b], want[b])
			}
		}
		if m.Pairwise() {
			// The reference without the term is far from it: the check
			// above sees the term.
			m.pairwise = false
			bare := refPredict(m, p64, downloadI32(t, be, set.Rows))
			m.pairwise = true
			var diff float64
			for b := range bare {
				diff += math.Abs(bare[b] - want[b])
			}
			if diff < 0.1*float64(len(bare)) {
				t.Errorf("%s: the interaction term is too small to be tested (%g a cell)", kind, diff/float64(len(bare)))
			}
		}
		d, sq := be.Alloc(50), be.Alloc(1)
		d2, sq2 := be.Alloc(50), be.Alloc(1)
		be.calls = 0
		pred := download(t, be, m.ForwardMSE(set.Rows, set.Vals, d, sq, 2/50.))
		if calls := be.calls; calls != map[bool]int{true: 0, false: 1}[m.Pairwise()] {
			t.Errorf("%s: ForwardMSE called the fused output layer %d times", kind, calls)
		}
		be.Backend.MSEGrad(d2, sq2, m.Forward(set.Rows), set.Vals, 2/50.)
		if !equalBits32(pred, got) || !equalBits32(download(t, be, d), download(t, be, d2)) || !equalBits32(download(t, be, sq), download(t, be, sq2)) {
			t.Errorf("%s: ForwardMSE differs from Forward and MSEGrad", kind)
		}
	}
}

// TestPairwiseErrors: configurations without a factor column are errors.
func TestPairwiseErrors(t *testing.T) {
	be := cpu.New()
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []FMConfig{
		{Dims: []int{3, 3}, Rank: 0, Capacity: 1},
		{Dims: []int{3, 3}, Rank: -2, Capacity: 1},
		{Dims: nil, Rank: 2, Capacity: 1},
		{Dims: []int{3, 0}, Rank: 2, Capacity: 1},
		{Dims: []int{3, 3}, Rank: 2, Capacity: 0},
	} {
		if _, err := NewFM(be, c, rng); err == nil {
			t.Errorf("NewFM(%+v) succeeded; want an error", c)
		}
	}
	for _, c := range []Config{
		{Dims: []int{3, 3}, Layers: []int{2, 4}, Capacity: 1}, // E = 1
		{Dims: []int{3, 3}, Layers: []int{5, 4}, Capacity: 1}, // 5 % 2 ≠ 0
		{Dims: []int{3, 3}, Layers: nil, Capacity: 1},
	} {
		if _, err := NewHybrid(be, c, rng); err == nil {
			t.Errorf("NewHybrid(%+v) succeeded; want an error", c)
		}
	}
	if _, err := NewHybrid(be, Config{Dims: []int{3, 3}, Layers: []int{2, 4}, Capacity: 1}, rng); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Errorf("hybrid of width 1: %v", err)
	}
}

// TestPairwiseTrains: Train fits the FM and the hybrid to a rank-2
// tensor, lowering the validation MSE at least fourfold.
func TestPairwiseTrains(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	dims := []int{20, 15, 10}
	cells, vals := lowRank(rng, dims, 1500)
	for _, kind := range []string{KindFM, KindHybrid} {
		m := newKind(t, cpu.New(), kind, dims, 256, rand.New(rand.NewPCG(1, 2)))
		train, val := m.NewSet(cells[:1200*3], vals[:1200]), m.NewSet(cells[1200*3:], vals[1200:])
		before, err := m.Evaluate(val)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Train(context.Background(), m, train, val, TrainConfig{Epochs: 30, Batch: 64, Patience: 5, LR: 1e-2, L2: 1e-4, Shuffle: rand.New(rand.NewPCG(5, 6))})
		if err != nil {
			t.Fatal(err)
		}
		if !(res.BestValMSE < before/4) {
			t.Errorf("%s: validation MSE %v → %v", kind, before, res.BestValMSE)
		}
	}
}

// TestL2Step: with TrainConfig.L2 = λ, each Adam step (one per epoch
// here) follows Adam on g + λ·p, computed in float64 from the step's
// float32 gradient and the parameters before it: the moments and the
// parameters Train saves equal the formula's, for dense Adam (every
// parameter decayed, rows the batch did not touch included) and for
// SparseAdam (rows the batch did not touch keep their values and moments
// exactly), on the MLP, the FM and the hybrid; λ = 0 is the same formula
// without the decay. Train on a cluster of one process (Dist) gives
// Train's parameters bit for bit with λ > 0, and λ changes them.
func TestL2Step(t *testing.T) {
	dims := []int{8, 6, 5}
	cells, vals := lowRank(rand.New(rand.NewPCG(3, 4)), dims, 60)
	const T, lr = 12, 1e-2
	for _, kind := range []string{KindMLP, KindFM, KindHybrid} {
		for _, opt := range []string{Adam, SparseAdam} {
			for _, l2 := range []float64{0, 0.05} {
				be := cpu.New()
				m := newKind(t, be, kind, dims, T, rand.New(rand.NewPCG(1, 2)))
				ref := newKind(t, be, kind, dims, T, rand.New(rand.NewPCG(1, 2)))
				train, val := m.NewSet(cells[:T*3], vals[:T]), m.NewSet(cells[T*3:], vals[T:])
				p0 := download(t, be, m.Params())
				var states []*TrainState
				_, err := Train(context.Background(), m, train, val, TrainConfig{
					Epochs: 2, Batch: T, Patience: 2, LR: lr, L2: l2, EmbeddingOptimizer: opt,
					Save: func(st *TrainState) error { states = append(states, st); return nil },
				})
				if err != nil {
					t.Fatal(err)
				}
				touched := map[int]bool{}
				for _, r := range downloadI32(t, be, train.Rows) {
					touched[int(r)] = true
				}
				if len(touched) == m.TableRows() {
					t.Fatal("the batch touches every row: SparseAdam's untouched rows are not tested")
				}
				tl, w := m.TableRows()*m.Width(), m.Width()
				p, mom, vel := p0, make([]float32, len(p0)), make([]float32, len(p0))
				bad := 0
				for k := 1; k <= 2; k++ {
					ref.SetParams(p)
					d := be.Alloc(T)
					ref.ForwardMSE(train.Rows, train.Vals, d, nil, float32(2/float64(T))) // as Train's step
					ref.Backward(train.Rows, d, false)
					g := download(t, be, ref.Grads())
					st := states[k-1]
					c1, c2 := 1-math.Pow(0.9, float64(k)), 1-math.Pow(0.999, float64(k))
					for i := range p {
						if opt == SparseAdam && i < tl && !touched[i/w] {
							if st.Params[i] != p[i] || st.AdamM[i] != mom[i] || st.AdamV[i] != vel[i] {
								bad++
								t.Errorf("%s %s λ %g step %d: untouched table element %d moved", kind, opt, l2, k, i)
							}
							continue
						}
						gg := float64(g[i]) + l2*float64(p[i])
						wm := 0.9*float64(mom[i]) + 0.1*gg
						wv := 0.999*float64(vel[i]) + 0.001*gg*gg
						wp := float64(p[i]) - lr/c1*wm/(math.Sqrt(wv)/math.Sqrt(c2)+1e-8)
						// float32 rounding of each term: relative to the
						// terms' magnitudes.
						scale := math.Abs(float64(g[i])) + math.Abs(l2*float64(p[i]))
						tm := 1e-6 * (0.9*math.Abs(float64(mom[i])) + 0.1*scale)
						tv := 1e-5 * (0.999*float64(vel[i]) + 0.001*scale*scale)
						if math.Abs(float64(st.AdamM[i])-wm) > tm+1e-30 ||
							math.Abs(float64(st.AdamV[i])-wv) > tv+1e-30 ||
							math.Abs(float64(st.Params[i])-wp) > 1e-5*lr+1e-6*math.Abs(wp) {
							if bad++; bad <= 5 {
								t.Errorf("%s %s λ %g step %d: parameter %d: p %g m %g v %g, want %g %g %g (g %g)", kind, opt, l2, k, i, st.Params[i], st.AdamM[i], st.AdamV[i], wp, wm, wv, g[i])
							}
						}
					}
					p, mom, vel = st.Params, st.AdamM, st.AdamV
				}
			}
		}
	}

	// Train on a cluster of one process takes the same steps.
	for _, opt := range []string{Adam, SparseAdam} {
		run := func(dist bool, l2 float64) []float32 {
			be := cpu.New()
			m := newKind(t, be, KindHybrid, dims, 16, rand.New(rand.NewPCG(1, 2)))
			train, val := m.NewSet(cells[:48*3], vals[:48]), m.NewSet(cells[48*3:], vals[48:])
			cfg := TrainConfig{Epochs: 3, Batch: 16, Patience: 3, LR: lr, L2: l2, EmbeddingOptimizer: opt, Order: KeyedOrder(48, 5, 0)}
			if dist {
				cfg.Dist = &DistConfig{Cluster: cluster.Local{}, Global: 48, Owned: []Span{{0, 0, 48}}, ValGlobal: 12}
			}
			if _, err := Train(context.Background(), m, train, val, cfg); err != nil {
				t.Fatal(err)
			}
			return download(t, be, m.Params())
		}
		one := run(false, 0.05)
		if !slices.Equal(one, run(true, 0.05)) {
			t.Errorf("%s: Train on a cluster with L2 differs from Train", opt)
		}
		if slices.Equal(one, run(false, 0)) {
			t.Errorf("%s: L2 0.05 trains to the parameters of L2 0", opt)
		}
	}

	// Refusals.
	be := cpu.New()
	m := newKind(t, be, KindFM, dims, 8, rand.New(rand.NewPCG(1, 2)))
	train, val := m.NewSet(cells[:8*3], vals[:8]), m.NewSet(cells[8*3:], vals[8:])
	for _, l2 := range []float64{-1e-3, math.NaN(), math.Inf(1)} {
		cfg := TrainConfig{Epochs: 1, Batch: 8, Patience: 1, LR: lr, L2: l2}
		if _, err := Train(context.Background(), m, train, val, cfg); err == nil || !strings.Contains(err.Error(), "l2") {
			t.Errorf("Train with L2 %g: %v", l2, err)
		}
		cfg.Dist = &DistConfig{Cluster: cluster.Local{}, Global: 8, Owned: []Span{{0, 0, 8}}, ValGlobal: 52}
		if _, err := Train(context.Background(), m, train, val, cfg); err == nil || !strings.Contains(err.Error(), "l2") {
			t.Errorf("Train on a cluster with L2 %g: %v", l2, err)
		}
	}
}

// TestShardedPairwise: the pairwise nets train with their table sharded
// over 2 processes (the interaction term acts on the gathered batch) to
// the parameters, predictions and validation MSE of the replicated table,
// bit for bit, with L2 regularisation (which the owners apply to their
// rows).
func TestShardedPairwise(t *testing.T) {
	dims := []int{20, 15, 10}
	cells, vals := lowRank(rand.New(rand.NewPCG(3, 4)), dims, 500)
	const T, V, P = 400, 100, 2
	for _, kind := range []string{KindFM, KindHybrid} {
		run := func(sharded bool) []shardRun {
			out := make([]shardRun, P)
			clustertest.Run(P, func(r clustertest.Rank) {
				o := &out[r.Rank()]
				be := cpu.New()
				var m *Net
				var sh *Sharding
				if sharded {
					sh = &Sharding{Comm: r}
				}
				rng := rand.New(rand.NewPCG(1, 2))
				if kind == KindFM {
					m, o.err = NewFM(be, FMConfig{Dims: dims, Rank: 3, Capacity: 64, Shard: sh}, rng)
				} else {
					m, o.err = NewHybrid(be, Config{Dims: dims, Layers: []int{12, 16, 8}, Capacity: 64, Shard: sh}, rng)
				}
				if o.err != nil {
					return
				}
				defer m.Free()
				lo, hi := r.Rank()*T/P, (r.Rank()+1)*T/P
				vlo, vhi := r.Rank()*V/P, (r.Rank()+1)*V/P
				train := m.NewSet(cells[lo*3:hi*3], vals[lo:hi])
				val := m.NewSet(cells[(T+vlo)*3:(T+vhi)*3], vals[T+vlo:T+vhi])
				tc := TrainConfig{Epochs: 3, Batch: 50, Patience: 3, LR: 1e-2, L2: 1e-2, EmbeddingOptimizer: SparseAdam, Order: KeyedOrder(T, 5, 0),
					Dist: &DistConfig{Cluster: r, Global: T, Owned: []Span{{lo, 0, hi - lo}}, ValGlobal: V}}
				o.res, o.err = Train(context.Background(), m, train, val, tc)
				if o.err != nil {
					return
				}
				o.collect(m, val, sharded, P, r.Rank())
			})
			return out
		}
		want, got := run(false), run(true)
		rows := map[int][]float32{}
		for r := range got {
			if got[r].err != nil || want[r].err != nil {
				t.Fatalf("%s: process %d: %v, %v", kind, r, got[r].err, want[r].err)
			}
			if !slices.Equal(got[r].layers, want[r].layers) || !slices.Equal(got[r].pred, want[r].pred) || got[r].mse != want[r].mse {
				t.Errorf("%s: process %d: layers, predictions or MSE (%v, %v) differ from the replicated table's", kind, r, got[r].mse, want[r].mse)
			}
			for k, v := range got[r].rows {
				rows[k] = v
			}
		}
		if len(rows) != 45 {
			t.Errorf("%s: %d rows held", kind, len(rows))
		}
		for k, v := range rows {
			if !slices.Equal(v, want[0].rows[k]) {
				t.Errorf("%s: row %d differs from the replicated table's", kind, k)
				break
			}
		}
	}
}
