package nn

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
)

// frozenParts returns m's parameters split into the rows of the first
// dims[n] entities of each mode and the layers.
func frozenParts(t *testing.T, m *Net, dims []int) (rows, layers []float32) {
	t.Helper()
	host, err := m.HostParams()
	if err != nil {
		t.Fatal(err)
	}
	E := m.Width()
	for n, d := range dims {
		lo := int(m.Offsets()[n]) * E
		rows = append(rows, host[lo:lo+d*E]...)
	}
	return rows, host[m.table.Len():]
}

// TestGrowAndTrainRows: for every kind, Grow keeps the known rows and the
// layers bit for bit and draws the new rows as the kind's constructor
// draws its table (N(0,1) or N(0, 0.1²)); TrainRows with the new rows
// trainable changes them, lowers the training loss and leaves the known
// rows and the layers bit for bit; with every row trainable the layers
// are still untouched.
func TestGrowAndTrainRows(t *testing.T) {
	dims := []int{12, 9, 7}
	grown := []int{15, 9, 10}
	for _, kind := range Kinds {
		t.Run(kind, func(t *testing.T) {
			be := cpu.New()
			rng := rand.New(rand.NewPCG(5, 6))
			m := newKind(t, be, kind, dims, 64, rng)
			g, err := m.Grow(grown, 32, rand.New(rand.NewPCG(7, 8)))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Free()
			if !slices.Equal(g.Dims(), grown) || g.Capacity() != 32 || g.Kind() != kind {
				t.Fatalf("grown net: dims %v, capacity %d, kind %s", g.Dims(), g.Capacity(), g.Kind())
			}
			r0, l0 := frozenParts(t, m, dims)
			r1, l1 := frozenParts(t, g, dims)
			if !equalBits32(r0, r1) || !equalBits32(l0, l1) {
				t.Fatal("Grow changed a known row or a layer")
			}
			// The new rows: the draws of rng, mode after mode.
			host, _ := g.HostParams()
			E, std := g.Width(), InitStd(kind)
			want := rand.New(rand.NewPCG(7, 8))
			for n := range grown {
				lo := int(g.Offsets()[n]) * E
				for i := dims[n] * E; i < grown[n]*E; i++ {
					if w := float32(want.NormFloat64() * std); host[lo+i] != w {
						t.Fatalf("mode %d element %d of the new rows: %v, want %v", n+1, i, host[lo+i], w)
					}
				}
			}
			// Cells of the new entities (mode 1's rows 12…14 and mode 3's
			// 7…9) with known ones.
			data := rand.New(rand.NewPCG(9, 10))
			var cells []int32
			var vals []float64
			for len(vals) < 200 {
				c := []int32{int32(data.IntN(grown[0])), int32(data.IntN(grown[1])), int32(data.IntN(grown[2]))}
				if int(c[0]) < dims[0] && int(c[2]) < dims[2] {
					continue
				}
				cells = append(cells, c...)
				vals = append(vals, 1+float64(c[0]%3)+float64(c[2]%2))
			}
			train, val := g.NewSet(cells[:160*3], vals[:160]), g.NewSet(cells[160*3:], vals[160:])
			isNew := func(r int32) bool {
				for n := range grown {
					o := g.Offsets()[n]
					if r >= o && r < o+int32(grown[n]) {
						return int(r-o) >= dims[n]
					}
				}
				t.Fatalf("row %d outside the table", r)
				return false
			}
			before, _ := g.Evaluate(train)
			res, err := TrainRows(context.Background(), g, train, val, isNew, TrainConfig{Epochs: 30, Batch: 32, Patience: 30, LR: 0.05, L2: 1e-3, Shuffle: rand.New(rand.NewPCG(1, 1))})
			if err != nil {
				t.Fatal(err)
			}
			after, _ := g.Evaluate(train)
			t.Logf("%s: train MSE %.4f → %.4f, best epoch %d of %d", kind, before, after, res.BestEpoch, len(res.Epochs))
			if !(after < before) {
				t.Errorf("training MSE %v → %v", before, after)
			}
			r2, l2 := frozenParts(t, g, dims)
			if !equalBits32(r0, r2) || !equalBits32(l0, l2) {
				t.Error("TrainRows (new rows) changed a known row or a layer")
			}
			host2, _ := g.HostParams()
			lo := int(g.Offsets()[0]) * E
			if equalBits32(host[lo+dims[0]*E:lo+grown[0]*E], host2[lo+dims[0]*E:lo+grown[0]*E]) {
				t.Error("the new rows of mode 1 did not change")
			}
			// Every row trainable: the known rows move, the layers do not.
			if _, err := TrainRows(context.Background(), g, train, nil, func(int32) bool { return true }, TrainConfig{Epochs: 2, Batch: 32, Patience: 1, LR: 0.05}); err != nil {
				t.Fatal(err)
			}
			r3, l3 := frozenParts(t, g, dims)
			if !equalBits32(l0, l3) {
				t.Error("TrainRows (every row) changed a layer")
			}
			if equalBits32(r0, r3) {
				t.Error("TrainRows (every row) changed no known row")
			}
		})
	}
}

// TestTrainRowsStep: one step over a batch with every row trainable is
// exactly BackwardSparse's compact gradient and SparseAdam over its rows
// (the host-built compact rows are DistinctRows's), for the MLP (mode-
// major) and CoSTCo (rank-major).
func TestTrainRowsStep(t *testing.T) {
	dims := []int{6, 5, 4}
	cells, vals := lowRank(rand.New(rand.NewPCG(1, 2)), dims, 40)
	for _, kind := range []string{KindMLP, KindCoSTCo, KindHybrid} {
		t.Run(kind, func(t *testing.T) {
			be := cpu.New()
			a := newKind(t, be, kind, dims, 40, rand.New(rand.NewPCG(3, 3)))
			b := newKind(t, be, kind, dims, 40, rand.New(rand.NewPCG(3, 3)))
			train := a.NewSet(cells, vals)
			if _, err := TrainRows(context.Background(), a, train, nil, func(int32) bool { return true }, TrainConfig{Epochs: 1, Batch: 40, Patience: 1, LR: 0.01, L2: 0.1}); err != nil {
				t.Fatal(err)
			}
			// The same step by hand on b.
			set := b.NewSet(cells, vals)
			d, sq := be.Alloc(40), be.Alloc(1)
			b.ForwardMSE(set.Rows, set.Vals, d, sq, 2.0/40)
			b.BackwardSparse(set.Rows, d)
			rows, count, grad := b.SparseGrad()
			tl := b.table.Len()
			mm, vv := be.Alloc(tl), be.Alloc(tl)
			be.SparseAdam(b.params.Slice(0, tl), grad, mm, vv, rows, count, b.Width(), compute.AdamStep{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, L2: 0.1, T: 1})
			pa, _ := a.HostParams()
			pb, _ := b.HostParams()
			if !equalBits32(pa, pb) {
				t.Error("TrainRows' step differs from BackwardSparse + SparseAdam")
			}
		})
	}
}

// TestTrainRowsEarlyStop: the rows of the best epoch are restored, so the
// validation MSE after TrainRows is the best epoch's, bit for bit.
func TestTrainRowsEarlyStop(t *testing.T) {
	be, m, train, val := lowRankModel(t)
	_ = be
	res, err := TrainRows(context.Background(), m, train, val, func(r int32) bool { return r < 20 }, TrainConfig{Epochs: 40, Batch: 64, Patience: 3, LR: 0.3, Shuffle: rand.New(rand.NewPCG(2, 2))})
	if err != nil {
		t.Fatal(err)
	}
	if res.BestEpoch == len(res.Epochs) {
		t.Skipf("the best epoch is the last (%d): nothing restored", res.BestEpoch)
	}
	got, _ := m.Evaluate(val)
	if got != res.BestValMSE {
		t.Errorf("validation MSE after TrainRows %v, best epoch %d had %v", got, res.BestEpoch, res.BestValMSE)
	}
	if math.IsNaN(got) {
		t.Error("NaN")
	}
}
