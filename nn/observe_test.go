package nn

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

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
	if b.Scale != float32(2/float64(b.N)) {
		h.bad = append(h.bad, "scale")
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
