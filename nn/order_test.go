package nn

import (
	"context"
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/cluster/clustertest"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
)

// TestKeyedOrder: each epoch's keyed order is a permutation whose Cell
// and Position are inverse, epochs differ, and the same seed gives the
// same orders.
func TestKeyedOrder(t *testing.T) {
	n := 1000
	o, again := KeyedOrder(n, 7, 1), KeyedOrder(n, 7, 1)
	first := make([]int, n)
	for k := 1; k <= 3; k++ {
		e, e2 := o(k), again(k)
		seen := make([]bool, n)
		moved := 0
		for p := 0; p < n; p++ {
			c := e.Cell(p)
			if seen[c] || e.Position(c) != p || e2.Cell(p) != c {
				t.Fatalf("epoch %d: position %d holds cell %d: not a fixed permutation", k, p, c)
			}
			seen[c] = true
			if k == 1 {
				first[p] = c
			} else if first[p] != c {
				moved++
			}
		}
		if k > 1 && moved < n*9/10 {
			t.Errorf("epoch %d: only %d of %d positions hold another cell than in epoch 1", k, moved, n)
		}
	}
}

// TestDistKeyedOrder: Train on a cluster of one process (Dist) with a
// keyed order (each process placing its own cells) gives the parameters
// and Adam moments Train without Dist gives with the same order, bit for
// bit, for both embedding optimisers; and the keyed order is not the
// identity (training with it differs from training in file order).
func TestDistKeyedOrder(t *testing.T) {
	dims := []int{20, 15, 10}
	cells, vals := lowRank(rand.New(rand.NewPCG(3, 4)), dims, 1500)
	for _, opt := range []string{Adam, SparseAdam} {
		run := func(dist bool, order func(int) EpochOrder) ([]float32, []float32) {
			be := cpu.New()
			m, err := NewMLP(be, Config{Dims: dims, Layers: []int{24, 32, 16}, Capacity: 256}, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			train, val := m.NewSet(cells[:1200*3], vals[:1200]), m.NewSet(cells[1200*3:], vals[1200:])
			var st AdamState
			cfg := TrainConfig{Epochs: 3, Batch: 100, Patience: 3, LR: 1e-2, EmbeddingOptimizer: opt, Order: order, Adam: &st}
			if dist {
				cfg.Dist = &DistConfig{Cluster: cluster.Local{}, Global: 1200, Owned: []Span{{0, 0, 1200}}, ValGlobal: 300}
			}
			if _, err = Train(context.Background(), m, train, val, cfg); err != nil {
				t.Fatal(err)
			}
			if st.Step.T != 36 {
				t.Errorf("%s, dist %v: Adam's state after step %d, want 36", opt, dist, st.Step.T)
			}
			return download(t, be, m.Params()), download(t, be, st.V)
		}
		keyed := KeyedOrder(1200, 5, 0)
		one, oneV := run(false, keyed)
		dist, distV := run(true, keyed)
		if !slices.Equal(one, dist) || !slices.Equal(oneV, distV) {
			t.Errorf("%s: Train on a cluster of one process differs from Train with the same keyed order", opt)
		}
		if file, _ := run(false, nil); slices.Equal(one, file) {
			t.Errorf("%s: training in the keyed order equals training in file order", opt)
		}
	}
}

// TestDistResume: Train on a cluster (Dist) saving after every epoch,
// stopped after epoch 2 and resumed from that state in a fresh model, ends
// with the uninterrupted run's parameters and result, bit for bit, for
// both embedding optimisers; a run that had stopped resumes to its end at
// once; and checkpointing without a keyed order is refused.
func TestDistResume(t *testing.T) {
	dims := []int{20, 15, 10}
	cells, vals := lowRank(rand.New(rand.NewPCG(3, 4)), dims, 1500)
	dc := DistConfig{Cluster: cluster.Local{}, Global: 1200, Owned: []Span{{0, 0, 1200}}, ValGlobal: 300}
	for _, opt := range []string{Adam, SparseAdam} {
		run := func(resume *TrainState, stopAt int) ([]float32, Result, []*TrainState, error) {
			be := cpu.New()
			m, err := NewMLP(be, Config{Dims: dims, Layers: []int{24, 32, 16}, Capacity: 256}, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			train, val := m.NewSet(cells[:1200*3], vals[:1200]), m.NewSet(cells[1200*3:], vals[1200:])
			var saved []*TrainState
			cfg := TrainConfig{Epochs: 4, Batch: 100, Patience: 4, LR: 1e-2, EmbeddingOptimizer: opt, Order: KeyedOrder(1200, 5, 0), Resume: resume,
				Save: func(st *TrainState) error {
					saved = append(saved, st)
					if st.Epoch == stopAt {
						return context.Canceled
					}
					return nil
				}, Dist: &dc}
			res, err := Train(context.Background(), m, train, val, cfg)
			p := make([]float32, m.Params().Len())
			if derr := be.Download(p, m.Params()); derr != nil {
				t.Fatal(derr)
			}
			return p, res, saved, err
		}
		want, wres, all, err := run(nil, -1)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 4 || len(all[1].Perm) != 0 {
			t.Fatalf("%s: %d states saved (want 4), the second with a %d-cell order (want none)", opt, len(all), len(all[1].Perm))
		}
		_, _, part, err := run(nil, 2)
		if err != context.Canceled || len(part) != 2 {
			t.Fatalf("%s: stopped run: %v after %d states", opt, err, len(part))
		}
		got, gres, _, err := run(part[1], -1)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || gres.BestEpoch != wres.BestEpoch || len(gres.Epochs) != len(wres.Epochs) || gres.BestValMSE != wres.BestValMSE {
			t.Errorf("%s: resumed after epoch 2: parameters or result differ from the uninterrupted run's (best %d/%d, %d/%d epochs)", opt, gres.BestEpoch, wres.BestEpoch, len(gres.Epochs), len(wres.Epochs))
		}
		done, dres, _, err := run(all[3], -1)
		if err != nil || !slices.Equal(done, want) || len(dres.Epochs) != 4 {
			t.Errorf("%s: resumed after the last epoch: err %v, %d epochs, same parameters %v", opt, err, len(dres.Epochs), slices.Equal(done, want))
		}
	}
	be := cpu.New()
	m, _ := NewMLP(be, Config{Dims: dims, Layers: []int{24, 32, 16}, Capacity: 256}, rand.New(rand.NewPCG(1, 2)))
	train, val := m.NewSet(cells[:1200*3], vals[:1200]), m.NewSet(cells[1200*3:], vals[1200:])
	cfg := TrainConfig{Epochs: 1, Batch: 100, Patience: 1, LR: 1e-2, Save: func(*TrainState) error { return nil }, Dist: &dc}
	if _, err := Train(context.Background(), m, train, val, cfg); err == nil {
		t.Error("a data-parallel Train saved its state without a keyed order")
	}
}

// TestDistStaged: Train on a cluster of 2 processes with uneven shares
// leaves the same parameters, bit for bit, on a device backend (each
// process's ordered cells staged and uploaded in chunks smaller than its
// share) as with the CPU's per-step batches, for the legacy shuffle and a
// keyed order and for the dense and sparse exchanges; and both processes
// hold the same replica.
func TestDistStaged(t *testing.T) {
	defer func(n int) { stageCells = n }(stageCells)
	stageCells = 77
	dims := []int{20, 15, 10}
	cells, vals := lowRank(rand.New(rand.NewPCG(3, 4)), dims, 1500)
	const T, V, cut, vcut = 1200, 300, 1000, 200
	for _, keyed := range []bool{false, true} {
		for _, ex := range []string{"dense", "sparse"} {
			run := func(be func() compute.Backend) [2][]float32 {
				var out [2][]float32
				clustertest.Run(2, func(r clustertest.Rank) {
					b := be()
					m, err := NewMLP(b, Config{Dims: dims, Layers: []int{24, 32, 16}, Capacity: 64}, rand.New(rand.NewPCG(1, 2)))
					if err != nil {
						t.Error(err)
						return
					}
					defer m.Free()
					lo, hi, vlo, vhi := 0, cut, 0, vcut
					if r.Rank() == 1 {
						lo, hi, vlo, vhi = cut, T, vcut, V
					}
					train := m.NewSet(cells[lo*3:hi*3], vals[lo:hi])
					val := m.NewSet(cells[(T+vlo)*3:(T+vhi)*3], vals[T+vlo:T+vhi])
					cfg := TrainConfig{Epochs: 3, Batch: 50, Patience: 3, LR: 1e-2, Shuffle: rand.New(rand.NewPCG(5, 6)),
						Dist: &DistConfig{Cluster: r, Global: T, Owned: []Span{{lo, 0, hi - lo}}, ValGlobal: V, Exchange: ex}}
					if keyed {
						cfg.Order = KeyedOrder(T, 5, 0)
					}
					if _, err := Train(context.Background(), m, train, val, cfg); err != nil {
						t.Error(err)
						return
					}
					out[r.Rank()] = download(t, b, m.Params())
				})
				return out
			}
			host := run(func() compute.Backend { return cpu.New() })
			staged := run(func() compute.Backend { return deviceOnly{cpu.New()} })
			if !slices.Equal(host[0], host[1]) || !slices.Equal(staged[0], staged[1]) {
				t.Errorf("keyed %v, %s exchange: the processes' replicas differ", keyed, ex)
			}
			if !slices.Equal(host[0], staged[0]) {
				t.Errorf("keyed %v, %s exchange: the staged upload's parameters differ from the per-step batches'", keyed, ex)
			}
		}
	}
}
