package cuda_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
)

// trainStep queues one training step of a two-layer MLP on fixed buffers:
// forward, MSE gradient, backward and Adam, the operations a captured graph
// of nn's training step holds.
type trainStep struct {
	be                          compute.Backend
	x, y, w1, b1, w2, b2, h, p  compute.F32
	dh, dp, gw1, gb1, gw2, gb2  compute.F32
	params, grads, m, v, sq, dx compute.F32
}

const (
	stepB, stepIn, stepHid = 300, 40, 70
)

func newTrainStep(be compute.Backend, seed int) *trainStep {
	t := &trainStep{be: be}
	n1, n2 := stepHid*stepIn+stepHid, stepHid+1
	t.params, t.grads = be.Alloc(n1+n2), be.Alloc(n1+n2)
	t.m, t.v = be.Alloc(n1+n2), be.Alloc(n1+n2)
	t.w1, t.b1 = t.params.Slice(0, stepHid*stepIn), t.params.Slice(stepHid*stepIn, stepHid)
	t.w2, t.b2 = t.params.Slice(n1, stepHid), t.params.Slice(n1+stepHid, 1)
	t.gw1, t.gb1 = t.grads.Slice(0, stepHid*stepIn), t.grads.Slice(stepHid*stepIn, stepHid)
	t.gw2, t.gb2 = t.grads.Slice(n1, stepHid), t.grads.Slice(n1+stepHid, 1)
	t.x, t.y = be.Alloc(stepB*stepIn), be.Alloc(stepB)
	t.h, t.p = be.Alloc(stepB*stepHid), be.Alloc(stepB)
	t.dh, t.dp, t.dx = be.Alloc(stepB*stepHid), be.Alloc(stepB), be.Alloc(stepB*stepIn)
	t.sq = be.Alloc(1)
	fill := func(b compute.F32, k int) {
		v := make([]float32, b.Len())
		for i := range v {
			v[i] = float32(math.Sin(float64(i*7+k*13+seed))) / 4
		}
		be.Upload(b, v)
	}
	fill(t.params, 1)
	fill(t.x, 2)
	fill(t.y, 3)
	return t
}

func (t *trainStep) run(step int) {
	be := t.be
	be.LinearForward(t.h, t.x, t.w1, t.b1, stepIn, stepHid, true)
	be.LinearForward(t.p, t.h, t.w2, t.b2, stepHid, 1, false)
	be.MSEGrad(t.dp, t.sq, t.p, t.y, 2/float32(stepB))
	be.LinearBackward(t.dh, t.gw2, t.gb2, t.dp, t.h, t.w2, stepHid, 1, true, false)
	be.LinearBackward(t.dx, t.gw1, t.gb1, t.dh, t.x, t.w1, stepIn, stepHid, false, false)
	be.Adam(t.params, t.grads, t.m, t.v, compute.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: step})
}

func download(t *testing.T, be compute.Backend, b compute.F32) []float32 {
	t.Helper()
	v := make([]float32, b.Len())
	if err := be.Download(v, b); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCapture checks that a captured training step, launched three times,
// leaves the parameters bit for bit where three eager steps leave them (the
// graph's Adam step count is frozen at 1, so the eager steps use 1 too), and
// that a synchronous operation during Capture panics without leaving the
// backend unusable.
func TestCapture(t *testing.T) {
	be := newBackend(t)
	eager, graphed := newTrainStep(be, 0), newTrainStep(be, 0)
	for range 3 {
		eager.run(1)
	}
	warm := newTrainStep(be, 5)
	warm.run(1) // sizes the scratch memory
	g, err := be.Capture(func() { graphed.run(1) })
	if err != nil {
		t.Fatalf("Capture: %v", err)
	}
	if got := download(t, be, graphed.params); got[0] != download(t, be, newTrainStep(be, 0).params)[0] {
		t.Fatal("Capture ran the operations instead of recording them")
	}
	for range 3 {
		g.Launch()
	}
	want, got := download(t, be, eager.params), download(t, be, graphed.params)
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("params[%d] after 3 launches = %v, after 3 eager steps %v", i, got[i], want[i])
		}
	}
	g.Free()
	g.Free()

	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "during Capture") {
				t.Errorf("Alloc during Capture: recover() = %v", r)
			}
		}()
		_, _ = be.Capture(func() { be.Alloc(4) })
	}()
	if err := be.Sync(); err != nil {
		t.Fatalf("Sync after an abandoned Capture: %v", err)
	}
	g2, err := be.Capture(func() { graphed.run(1) })
	if err != nil {
		t.Fatalf("Capture after an abandoned one: %v", err)
	}
	g2.Launch()
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestTrainGraphs trains the same MLP and CoSTCo on CUDA with graph replay
// (TrainConfig.Eager false, the default; Adam, dense or sparse, inside the graph) and eagerly,
// with both embedding optimisers: the histories and the final parameters must be
// bit-identical, with a partial last step, and with the backend's scratch
// memory (which the steps' dW split over the batch of 500 uses) growing after
// every epoch (as TracIn's passes make it), which must not invalidate the
// captured graphs. Every mode's index occurs once among
// the training cells, so that ScatterRows' float atomics never add to one
// row twice in a step and training is deterministic.
func TestTrainGraphs(t *testing.T) {
	be := newBackend(t)
	const T, V = 1400, 200
	dims := []int{T + 20, T + 10, T + 30}
	rng := rand.New(rand.NewPCG(3, 4))
	cells := make([]int32, (T+V)*3)
	vals := make([]float64, T+V)
	for n, d := range dims {
		perm := rng.Perm(d)
		for i := range vals {
			if i < T {
				cells[i*3+n] = int32(perm[i])
			} else {
				cells[i*3+n] = int32(rng.IntN(d))
			}
		}
	}
	for i := range vals {
		vals[i] = rng.NormFloat64()
	}
	for _, c := range []struct {
		costco bool
		opt    string
	}{{false, nn.Adam}, {true, nn.Adam}, {false, nn.SparseAdam}, {true, nn.SparseAdam}} {
		costco := c.costco
		run := func(eager bool) (nn.Result, []float32) {
			r := rand.New(rand.NewPCG(1, 2))
			var m *nn.Net
			var err error
			if costco {
				m, err = nn.NewCoSTCo(be, nn.CoSTCoConfig{Dims: dims, Rank: 5, Channels: 6, Capacity: 512}, r)
			} else {
				m, err = nn.NewMLP(be, nn.Config{Dims: dims, Layers: []int{12, 64, 16}, Capacity: 512}, r)
			}
			if err != nil {
				t.Fatal(err)
			}
			train, val := m.NewSet(cells[:T*3], vals[:T]), m.NewSet(cells[T*3:], vals[T:])
			// After each epoch, a dW over a tall batch, which the backend
			// splits over k into scratch memory larger than before.
			grow := 1 << 14
			res, err := nn.Train(context.Background(), m, train, val, nn.TrainConfig{
				Epochs: 4, Batch: 500, Patience: 4, LR: 1e-2, Shuffle: rand.New(rand.NewPCG(5, 6)), Eager: eager, EmbeddingOptimizer: c.opt,
				AfterEpoch: func(nn.Epoch) error {
					grow *= 2
					x, dy, dw := be.Alloc(grow*8), be.Alloc(grow*64), be.Alloc(64*8)
					be.LinearBackward(nil, dw, nil, dy, x, be.Alloc(64*8), 8, 64, false, false)
					return be.Sync()
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			return res, download(t, be, m.Params())
		}
		gr, gp := run(false)
		er, ep := run(true)
		for k := range er.Epochs {
			g, e := gr.Epochs[k], er.Epochs[k]
			if g.TrainMSE != e.TrainMSE || g.ValMSE != e.ValMSE {
				t.Errorf("costco=%v %s epoch %d: graphs train/val MSE %v/%v, eager %v/%v", costco, c.opt, k+1, g.TrainMSE, g.ValMSE, e.TrainMSE, e.ValMSE)
			}
		}
		for i := range ep {
			if math.Float32bits(ep[i]) != math.Float32bits(gp[i]) {
				t.Fatalf("costco=%v %s: params[%d] %v with graphs, %v eager", costco, c.opt, i, gp[i], ep[i])
			}
		}
	}
}
