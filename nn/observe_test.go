package nn

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dainx/dainx/cluster/clustertest"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
)

// hookLog records what a step hook sees of each step.
type hookLog struct {
	be     compute.Backend
	m      *Net
	train  *Set
	st     *AdamState
	every  int
	t      []int
	cells  [][]int32
	rows   [][]int32
	delta  [][]float32
	steps  []int // Adam's step in the state at After
	before int   // Before calls not yet followed by After
	bad    []string
	dist   bool      // a process of a cluster: B is the global batch, not N
	scale  []float32 // each After's Scale
}

func (h *hookLog) Every() int { return h.every }

func (h *hookLog) Before(t int) {
	h.before++
	h.t = append(h.t, t)
}

func (h *hookLog) After(t int, b StepBatch) {
	h.before--
	c, r, d := make([]int32, b.N), make([]int32, b.Rows.Len()), make([]float32, b.N)
	h.be.DownloadI32(c, b.Cells)
	h.be.DownloadI32(r, b.Rows)
	h.be.Download(d, b.Delta)
	h.cells, h.rows, h.delta, h.steps = append(h.cells, c), append(h.rows, r), append(h.delta, d), append(h.steps, h.st.Step.T)
	if b.Scale != float32(2/float64(b.N)) && !h.dist {
		h.bad = append(h.bad, "scale")
	}
	h.scale = append(h.scale, b.Scale)
}

// TestDistStepHooks: on a cluster of 2 processes, each holding half of the
// training cells, every process's hook runs Before at the steps one
// process's does, and After, for the steps in which it has cells, with
// those cells of the step's global batch (numbered in its own Set), the
// global batch's scale; together the processes' cells of each step are
// the one process's.
func TestDistStepHooks(t *testing.T) {
	dims := []int{30, 20, 10}
	cells, vals := lowRank(rand.New(rand.NewPCG(7, 8)), dims, 700)
	const T, half = 500, 250
	tc := func(h *hookLog, st *AdamState) TrainConfig {
		return TrainConfig{Epochs: 2, Batch: 64, Patience: 3, LR: 1e-2, Order: KeyedOrder(T, 5, 0), Adam: st, Steps: []StepHook{h}}
	}
	newNet := func() *Net {
		m, err := NewMLP(cpu.New(), Config{Dims: dims, Layers: []int{12, 16, 8}, Capacity: 128}, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := newNet()
	var st AdamState
	one := &hookLog{be: m.Backend(), m: m, st: &st, every: 3}
	train, val := m.NewSet(cells[:T*3], vals[:T]), m.NewSet(cells[T*3:], vals[T:])
	if _, err := Train(context.Background(), m, train, val, tc(one, &st)); err != nil {
		t.Fatal(err)
	}
	logs := make([]*hookLog, 2)
	clustertest.Run(2, func(r clustertest.Rank) {
		m := newNet()
		var st AdamState
		h := &hookLog{be: m.Backend(), m: m, st: &st, every: 3, dist: true}
		lo := r.Rank() * half
		train := m.NewSet(cells[lo*3:(lo+half)*3], vals[lo:lo+half])
		val := m.NewSet(cells[(T+r.Rank()*100)*3:(T+(r.Rank()+1)*100)*3], vals[T+r.Rank()*100:T+(r.Rank()+1)*100])
		c := tc(h, &st)
		c.Dist = &DistConfig{Cluster: r, Global: T, Owned: []Span{{lo, 0, half}}, ValGlobal: 200}
		if _, err := Train(context.Background(), m, train, val, c); err != nil {
			t.Error(err)
		}
		logs[r.Rank()] = h
	})
	for p, h := range logs {
		if !slices.Equal(h.t, one.t) {
			t.Fatalf("process %d: Before at steps %v, one process at %v", p, h.t, one.t)
		}
	}
	// Each hooked step's cells, as global numbers, by step.
	byStep := func(h *hookLog, first int) map[int][]int32 {
		out := map[int][]int32{}
		for i, s := range h.steps {
			for _, c := range h.cells[i] {
				out[s] = append(out[s], c+int32(first))
			}
		}
		return out
	}
	want, got0, got1 := byStep(one, 0), byStep(logs[0], 0), byStep(logs[1], half)
	for i, s := range one.steps {
		got := append(slices.Clone(got0[s]), got1[s]...)
		slices.Sort(got)
		w := slices.Sorted(slices.Values(want[s]))
		if !slices.Equal(got, w) {
			t.Fatalf("step %d: the processes' cells %v, one process's %v", s, got, w)
		}
		for _, h := range logs {
			for j, hs := range h.steps {
				if hs == s && h.scale[j] != one.scale[i] {
					t.Fatalf("step %d: scale %v, one process's %v", s, h.scale[j], one.scale[i])
				}
			}
		}
	}
}

// TestStepHooks: Train calls a step hook around every k-th step (t with
// (t−1) mod k = 0, t Adam's global step) with the batch's cells, rows
// (the training set's rows of those cells) and MSE gradient, the Adam
// state at that step, and the same on a backend whose buffers are not
// host memory (the staged upload and the device copy of each epoch's
// order).
func TestStepHooks(t *testing.T) {
	dims := []int{30, 20, 10}
	cells, vals := lowRank(rand.New(rand.NewPCG(7, 8)), dims, 700)
	run := func(be compute.Backend) *hookLog {
		m, err := NewMLP(be, Config{Dims: dims, Layers: []int{12, 16, 8}, Capacity: 128}, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		train, val := m.NewSet(cells[:500*3], vals[:500]), m.NewSet(cells[500*3:], vals[500:])
		var st AdamState
		h := &hookLog{be: be, m: m, train: train, st: &st, every: 3}
		if _, err := Train(context.Background(), m, train, val, TrainConfig{Epochs: 3, Batch: 64, Patience: 3, LR: 1e-2,
			Shuffle: rand.New(rand.NewPCG(5, 6)), Adam: &st, Steps: []StepHook{h}}); err != nil {
			t.Fatal(err)
		}
		if h.before != 0 || len(h.bad) > 0 {
			t.Fatalf("unbalanced Before/After (%d) or %v", h.before, h.bad)
		}
		// Every hooked step and only those: 8 steps an epoch, 24 in all.
		var want []int
		for s := 1; s <= 24; s++ {
			if (s-1)%3 == 0 {
				want = append(want, s)
			}
		}
		if !slices.Equal(h.t, want) || !slices.Equal(h.steps, want) {
			t.Fatalf("hooked steps %v, Adam's steps %v; want %v", h.t, h.steps, want)
		}
		hostRows := make([]int32, train.Rows.Len())
		be.DownloadI32(hostRows, train.Rows)
		for i, c := range h.cells {
			seen := map[int32]bool{}
			for b, z := range c {
				if seen[z] {
					t.Fatalf("step %d: cell %d twice", h.t[i], z)
				}
				seen[z] = true
				if !slices.Equal(h.rows[i][b*3:b*3+3], hostRows[z*3:z*3+3]) {
					t.Fatalf("step %d: position %d holds cell %d's rows %v, the batch's rows are %v", h.t[i], b, z, hostRows[z*3:z*3+3], h.rows[i][b*3:b*3+3])
				}
			}
		}
		return h
	}
	h, d := run(cpu.New()), run(deviceOnly{cpu.New()})
	for i := range h.cells {
		if !slices.Equal(h.cells[i], d.cells[i]) || !slices.Equal(h.rows[i], d.rows[i]) || !slices.Equal(h.delta[i], d.delta[i]) {
			t.Fatalf("step %d: the host-buffer run and the staged run's hooks saw different batches", h.t[i])
		}
	}
}
