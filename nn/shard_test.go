package nn

import (
	"context"
	"fmt"
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/cluster/clustertest"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
)

// shardRun is what one process of a sharded or replicated data-parallel
// Train leaves: the Linear layers, the table rows it holds (keyed by global
// row), its predictions of its validation cells, the result and the
// saved states.
type shardRun struct {
	layers []float32
	rows   map[int][]float32
	pred   []float32
	mse    float64
	res    Result
	states []*TrainState
	err    error
}

// collect records the trained m of rank rank of p: its layers, its
// table's rows by global row (a sharded table's rows l·p+rank), its
// predictions of val and their MSE.
func (o *shardRun) collect(m *Net, val *Set, sharded bool, p, rank int) {
	be := m.Backend()
	lp, _ := m.DenseParams()
	o.layers = make([]float32, lp.Len())
	be.Download(o.layers, lp)
	o.rows = map[int][]float32{}
	w := m.Width()
	if sharded {
		own := make([]float32, m.ShardRows().Len())
		be.Download(own, m.ShardRows())
		for l := 0; l < len(own)/w; l++ {
			o.rows[l*p+rank] = own[l*w : (l+1)*w]
		}
	} else {
		tab, _ := m.Table()
		all := make([]float32, tab.Len())
		be.Download(all, tab)
		for g := 0; g < len(all)/w; g++ {
			o.rows[g] = all[g*w : (g+1)*w]
		}
	}
	if o.pred, o.err = m.Predict(val); o.err != nil {
		return
	}
	o.mse, o.err = m.Evaluate(val)
}

// TestShardedTable: Train on a cluster with the table sharded by row over
// 1, 2 and 3 processes (uneven shares, so some processes have steps and
// validation batches without cells) leaves, bit for bit, the parameters,
// result, validation MSE and predictions of the same run with the table
// replicated; the processes' rows together are the replicated table;
// stopped after epoch 2 and resumed from every process's saved state it
// ends as the uninterrupted run; and a sharded table refuses dense Adam,
// Train on one process, a training over another number of processes and
// the export of its Adam state.
func TestShardedTable(t *testing.T) {
	dims := []int{20, 15, 10}
	cells, vals := lowRank(rand.New(rand.NewPCG(3, 4)), dims, 1500)
	const T, V = 1200, 300
	// The first run's last epoch is its best; the second's best is epoch 2
	// of 3, so the best rows are kept aside before epoch 3 and restored at
	// the end, and the state saved after epoch 2 holds them as the rows.
	for _, c := range []struct {
		lr     float64
		epochs int
	}{{1e-2, 4}, {1e-1, 3}} {
		for _, p := range []int{1, 2, 3} {
			// Shares: most cells on process 0.
			cut := func(n int) []int {
				b := []int{0}
				for r := 1; r < p; r++ {
					b = append(b, n-(p-r)*n/(8*p))
				}
				return append(b, n)
			}
			tb, vb := cut(T), cut(V)
			run := func(sharded bool, resume []*TrainState, stopAt int) []shardRun {
				out := make([]shardRun, p)
				clustertest.Run(p, func(r clustertest.Rank) {
					o := &out[r.Rank()]
					be := cpu.New()
					cfg := Config{Dims: dims, Layers: []int{24, 32, 16}, Capacity: 64}
					if sharded {
						cfg.Shard = &Sharding{Comm: r}
					}
					m, err := NewMLP(be, cfg, rand.New(rand.NewPCG(1, 2)))
					if err != nil {
						o.err = err
						return
					}
					defer m.Free()
					lo, hi, vlo, vhi := tb[r.Rank()], tb[r.Rank()+1], vb[r.Rank()], vb[r.Rank()+1]
					train := m.NewSet(cells[lo*3:hi*3], vals[lo:hi])
					val := m.NewSet(cells[(T+vlo)*3:(T+vhi)*3], vals[T+vlo:T+vhi])
					tc := TrainConfig{Epochs: c.epochs, Batch: 50, Patience: 4, LR: c.lr, EmbeddingOptimizer: SparseAdam, Order: KeyedOrder(T, 5, 0),
						Save: func(st *TrainState) error {
							o.states = append(o.states, st)
							if st.Epoch == stopAt {
								return context.Canceled
							}
							return nil
						}}
					if resume != nil {
						tc.Resume = resume[r.Rank()]
					}
					tc.Dist = &DistConfig{Cluster: r, Global: T, Owned: []Span{{lo, 0, hi - lo}}, ValGlobal: V}
					o.res, o.err = Train(context.Background(), m, train, val, tc)
					if o.err != nil {
						return
					}
					o.collect(m, val, sharded, p, r.Rank())
				})
				return out
			}
			want, got := run(false, nil, -1), run(true, nil, -1)
			if best := want[0].res.BestEpoch; (best == c.epochs) != (c.epochs == 4) {
				t.Fatalf("lr %g: the best epoch is %d of %d", c.lr, best, c.epochs)
			}
			check := func(what string, got []shardRun) {
				t.Helper()
				rows := map[int][]float32{}
				for r := range got {
					if got[r].err != nil {
						t.Fatalf("P=%d, %s: process %d: %v", p, what, r, got[r].err)
					}
					g, w := got[r], want[r]
					if !slices.Equal(g.layers, w.layers) || !slices.Equal(g.pred, w.pred) || fmt.Sprint(g.mse) != fmt.Sprint(w.mse) ||
						g.res.BestEpoch != w.res.BestEpoch || g.res.BestValMSE != w.res.BestValMSE || len(g.res.Epochs) != len(w.res.Epochs) {
						t.Errorf("P=%d, %s: process %d: layers, predictions, MSE or result differ from the replicated table's (best epoch %d/%d, MSE %v/%v)", p, what, r, g.res.BestEpoch, w.res.BestEpoch, g.mse, w.mse)
					}
					for k, v := range g.rows {
						if _, dup := rows[k]; dup {
							t.Errorf("P=%d, %s: row %d held twice", p, what, k)
						}
						rows[k] = v
					}
				}
				if len(rows) != 45 {
					t.Errorf("P=%d, %s: the processes hold %d rows, want 45", p, what, len(rows))
				}
				for k, v := range rows {
					if !slices.Equal(v, want[0].rows[k]) {
						t.Errorf("P=%d, %s: row %d differs from the replicated table's", p, what, k)
						break
					}
				}
			}
			check(fmt.Sprintf("lr %g, sharded", c.lr), got)
			part := run(true, nil, 2)
			states := make([]*TrainState, p)
			for r := range part {
				if part[r].err != context.Canceled || len(part[r].states) != 2 || part[r].states[1].Shard == nil {
					t.Fatalf("P=%d: stopped run: process %d: %v after %d states", p, r, part[r].err, len(part[r].states))
				}
				states[r] = part[r].states[1]
			}
			check(fmt.Sprintf("lr %g, resumed after epoch 2", c.lr), run(true, states, -1))
		}
	}

	// Refusals.
	clustertest.Run(2, func(r clustertest.Rank) {
		be := cpu.New()
		m, err := NewMLP(be, Config{Dims: dims, Layers: []int{24, 32, 16}, Capacity: 64, Shard: &Sharding{Comm: r}}, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Error(err)
			return
		}
		train, val := m.NewSet(cells[:30], vals[:10]), m.NewSet(cells[30:60], vals[10:20])
		dc := &DistConfig{Cluster: r, Global: 20, Owned: []Span{{r.Rank() * 10, 0, 10}}, ValGlobal: 20}
		tc := TrainConfig{Epochs: 1, Batch: 5, Patience: 1, LR: 1e-2, EmbeddingOptimizer: Adam, Dist: dc}
		if _, err := Train(context.Background(), m, train, val, tc); err == nil {
			t.Error("a sharded table trained with dense Adam")
		}
		tc.EmbeddingOptimizer = SparseAdam
		tc.Adam = &AdamState{}
		if _, err := Train(context.Background(), m, train, val, tc); err == nil {
			t.Error("a sharded table's training exported its Adam state")
		}
		tc.Adam, tc.Dist = nil, nil
		if _, err := Train(context.Background(), m, train, val, tc); err == nil {
			t.Error("Train on one process trained a sharded table")
		}
		if r.Rank() == 0 {
			tc.Dist = &DistConfig{Cluster: cluster.Local{}, Global: 10, Owned: []Span{{0, 0, 10}}, ValGlobal: 10}
			if _, err := Train(context.Background(), m, train, val, tc); err == nil {
				t.Error("a table sharded over 2 processes trained on 1")
			}
		}
	})
}
