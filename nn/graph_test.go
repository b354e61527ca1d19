package nn

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
)

// replayBackend is a CPU backend with a compute.Capturer whose graphs run
// the captured function again at each launch, as a CUDA graph replays the
// operations it recorded: Train's graph path (staging copies, one graph
// per batch size) on the CPU. Like a device backend it has no
// HostBuffers.
type replayBackend struct {
	compute.Backend
	captures int
	// replaying is true while a graph runs; eagerAdam counts the Adam and
	// SparseAdam calls made outside a graph, and adamAt those that read
	// their constants from AdamStep.Scalars.
	replaying         bool
	eagerAdam, adamAt int
}

func (r *replayBackend) Capture(f func()) (compute.Graph, error) {
	r.captures++
	return &replayGraph{r, f}, nil
}

func (r *replayBackend) countAdam(s compute.AdamStep) {
	if !r.replaying {
		r.eagerAdam++
	}
	if s.Scalars != nil {
		r.adamAt++
	}
}

func (r *replayBackend) Adam(p, g, m, v compute.F32, s compute.AdamStep) {
	r.countAdam(s)
	r.Backend.Adam(p, g, m, v, s)
}

func (r *replayBackend) SparseAdam(p, g, m, v compute.F32, rows, count compute.I32, width int, s compute.AdamStep) {
	r.countAdam(s)
	r.Backend.SparseAdam(p, g, m, v, rows, count, width, s)
}

type replayGraph struct {
	r *replayBackend
	f func()
}

func (g *replayGraph) Launch() {
	g.r.replaying = true
	g.f()
	g.r.replaying = false
}
func (*replayGraph) Free() {}

// TestTrainGraphsPerShape: with graph replay, Train records one graph per
// batch size however many steps and epochs it runs (two here: 9 full
// batches and a last one of 48 cells), Adam (dense, or dense and sparse)
// runs inside the graphs with each step's constants read from a buffer,
// and training ends with the parameters of eager training, bit for bit,
// for both embedding optimisers.
func TestTrainGraphsPerShape(t *testing.T) {
	dims := []int{20, 15, 10}
	cells, vals := lowRank(rand.New(rand.NewPCG(3, 4)), dims, 1500)
	for _, opt := range []string{Adam, SparseAdam} {
		run := func(be compute.Backend, graphs bool) []float32 {
			m, err := NewMLP(be, Config{Dims: dims, Layers: []int{24, 32, 16}, Capacity: 256}, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			train, val := m.NewSet(cells[:1200*3], vals[:1200]), m.NewSet(cells[1200*3:], vals[1200:])
			cfg := TrainConfig{Epochs: 3, Batch: 128, Patience: 3, LR: 1e-2, EmbeddingOptimizer: opt, Order: KeyedOrder(1200, 5, 0), Eager: !graphs}
			if _, err := Train(context.Background(), m, train, val, cfg); err != nil {
				t.Fatal(err)
			}
			p := make([]float32, m.Params().Len())
			if err := be.Download(p, m.Params()); err != nil {
				t.Fatal(err)
			}
			return p
		}
		want := run(cpu.New(), false)
		rb := &replayBackend{Backend: cpu.New()}
		got := run(rb, true)
		if rb.captures != 2 {
			t.Errorf("%s: %d graphs captured over 3 epochs of 10 steps, want 2 (one per batch size)", opt, rb.captures)
		}
		perStep := 1
		if opt == SparseAdam {
			perStep = 2
		}
		if rb.eagerAdam != 0 || rb.adamAt != 30*perStep {
			t.Errorf("%s: %d Adam calls outside the graphs and %d reading Scalars over 30 steps; want 0 and %d", opt, rb.eagerAdam, rb.adamAt, 30*perStep)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: training with graph replay differs from eager training", opt)
		}
	}
	// Eager turns the default replay off; the environment does not (nn
	// reads none: DAINX_CUDA_GRAPHS is the default of dainx's -graphs
	// flag, read where the flags are).
	t.Setenv("DAINX_CUDA_GRAPHS", "0")
	for _, eager := range []bool{true, false} {
		rb := &replayBackend{Backend: cpu.New()}
		m, err := NewMLP(rb, Config{Dims: dims, Layers: []int{24, 32, 16}, Capacity: 256}, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		cfg := TrainConfig{Epochs: 1, Batch: 128, Patience: 1, LR: 1e-2, Order: KeyedOrder(1200, 5, 0), Eager: eager}
		if _, err := Train(context.Background(), m, m.NewSet(cells[:1200*3], vals[:1200]), m.NewSet(cells[1200*3:], vals[1200:]), cfg); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 0, false: 2}[eager]; rb.captures != want {
			t.Errorf("Eager %v (DAINX_CUDA_GRAPHS=0 in the environment): %d graphs captured, want %d", eager, rb.captures, want)
		}
	}
}
