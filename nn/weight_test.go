package nn

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
)

// TestNewWeight (TrainConfig.NewCells, NewWeight): each step's gradient
// at the predictions is the unweighted one times the cell's weight, one
// float32 rounding, bit for bit (the first step of both runs starts at
// the same parameters, so its deltas compare exactly; later steps
// diverge); the weighted run trains to other parameters; weight 1, and
// NewCells 0, give the unweighted run bit for bit; a weight that
// downweights cells of wrong values lowers the validation MSE; bad
// settings are errors.
func TestNewWeight(t *testing.T) {
	dims := []int{30, 20, 10}
	r := rand.New(rand.NewPCG(3, 9))
	cells, vals := lowRank(r, dims, 900)
	const T, nNew = 600, 200
	// The new cells (the last nNew of the training set) carry wrong
	// values: noise of the observed values' spread.
	noisy := slices.Clone(vals)
	for c := T - nNew; c < T; c++ {
		noisy[c] = vals[c] + 2*r.NormFloat64()
	}
	run := func(newCells int, w float64, hook *hookLog) (Result, []float32) {
		m, err := NewMLP(cpu.New(), Config{Dims: dims, Layers: []int{12, 16, 8}, Capacity: 128}, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Free()
		train, val := m.NewSet(cells[:T*3], noisy[:T]), m.NewSet(cells[T*3:], vals[T:])
		tc := TrainConfig{Epochs: 8, Batch: 64, Patience: 8, LR: 1e-2, Order: KeyedOrder(T, 5, 0), NewCells: newCells, NewWeight: w}
		if hook != nil {
			hook.be, hook.m = m.Backend(), m
			var st AdamState
			hook.st, tc.Adam, tc.Steps = &st, &st, []StepHook{hook}
		}
		res, err := Train(context.Background(), m, train, val, tc)
		if err != nil {
			t.Fatal(err)
		}
		p := make([]float32, m.Params().Len())
		m.Backend().Download(p, m.Params())
		return res, p
	}
	// The first step's deltas.
	plain, weighted := &hookLog{every: 1}, &hookLog{every: 1}
	run(0, 0, plain)
	run(nNew, 0.3, weighted)
	w := float32(0.3)
	for i, c := range plain.cells[0] {
		if weighted.cells[0][i] != c {
			t.Fatal("the weights changed the cell order")
		}
		want := plain.delta[0][i]
		if int(c) >= T-nNew {
			want *= w
		}
		if weighted.delta[0][i] != want {
			t.Fatalf("step 1, cell %d (new %v): delta %v, want %v", c, int(c) >= T-nNew, weighted.delta[0][i], want)
		}
	}

	base, p0 := run(0, 0, nil)
	for _, off := range [][2]float64{{nNew, 1}, {0, 0.3}, {nNew, 0}} {
		res, p := run(int(off[0]), off[1], nil)
		if !slices.Equal(p, p0) || res.BestValMSE != base.BestValMSE {
			t.Errorf("NewCells %v, NewWeight %v: not the unweighted run bit for bit", off[0], off[1])
		}
	}
	down, p1 := run(nNew, 0.1, nil)
	if slices.Equal(p1, p0) {
		t.Fatal("weight 0.1 trained the same parameters")
	}
	t.Logf("validation MSE: unweighted %.5f, new cells at 0.1 %.5f", base.BestValMSE, down.BestValMSE)
	if !(down.BestValMSE < base.BestValMSE) {
		t.Errorf("weighting the wrong cells down to 0.1: validation MSE %v, unweighted %v", down.BestValMSE, base.BestValMSE)
	}

	m, _ := NewMLP(cpu.New(), Config{Dims: dims, Layers: []int{12, 16, 8}, Capacity: 128}, rand.New(rand.NewPCG(1, 2)))
	train, val := m.NewSet(cells[:T*3], noisy[:T]), m.NewSet(cells[T*3:], vals[T:])
	for _, bad := range []TrainConfig{{NewCells: T + 1, NewWeight: 0.5}, {NewCells: 3, NewWeight: -1}, {NewCells: -1}} {
		bad.Epochs, bad.Batch, bad.Patience, bad.LR = 1, 64, 1, 1e-2
		if _, err := Train(context.Background(), m, train, val, bad); err == nil {
			t.Errorf("NewCells %d, NewWeight %v: no error", bad.NewCells, bad.NewWeight)
		}
	}
}
