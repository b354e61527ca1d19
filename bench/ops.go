package bench

import (
	"fmt"
	"math/rand/v2"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
)

// Op is one micro-benchmark: Run performs one call (or one batch of calls)
// whose work is Work units of Unit.
type Op struct {
	Name  string  // e.g. "LinearForward 1024→1024 relu"
	Unit  string  // "GFLOP/s", "GB/s", "Mcells/s" or "Msamples/s"
	Work  float64 // per Run, in 1e9 flops, 1e9 bytes, 1e6 cells or 1e6 samples
	Flops bool    // Work is flops: compare with the FMA peak
	Run   func()
	Free  func()
}

// Batch is the batch size of the micro-benchmarks, DAIN's default.
const Batch = 1024

// DefaultLayers are the default MLP's widths for an order-3 tensor, with the
// output layer.
var DefaultLayers = []int{150, 1024, 1024, 128, 1}

func filled(be compute.Backend, n int, rng *rand.Rand, relu bool) compute.F32 {
	h := make([]float32, n)
	for i := range h {
		v := float32(rng.NormFloat64())
		if relu && v < 0 {
			v = 0
		}
		h[i] = v
	}
	b := be.Alloc(n)
	be.Upload(b, h)
	return b
}

// Ops returns the micro-benchmarks of every backend operation at the default
// MLP's shapes (batch 1024). Inputs of layers after the first are ReLU
// outputs (about half zeros), as in training.
func Ops(be compute.Backend) []Op {
	rng := rand.New(rand.NewPCG(1, 1))
	var ops []Op
	var frees []compute.F32
	alloc := func(n int, relu bool) compute.F32 {
		b := filled(be, n, rng, relu)
		frees = append(frees, b)
		return b
	}
	L := DefaultLayers
	for l := 1; l < len(L); l++ {
		in, out := L[l-1], L[l]
		relu := l < len(L)-1
		x, w, bias, y := alloc(Batch*in, l > 1), alloc(out*in, false), alloc(out, false), alloc(Batch*out, false)
		fl := 2 * float64(Batch*in*out) / 1e9
		ops = append(ops, Op{
			Name: fmt.Sprintf("LinearForward %d→%d", in, out), Unit: "GFLOP/s", Work: fl, Flops: true,
			Run: func() { be.LinearForward(y, x, w, bias, in, out, relu) },
		})
		// dy is the gradient at a ReLU layer's pre-activation: zero where
		// the layer's output is, about half.
		dy := alloc(Batch*out, relu)
		dw, db, dx := alloc(out*in, false), alloc(out, false), alloc(Batch*in, false)
		ops = append(ops, Op{
			Name: fmt.Sprintf("LinearBackward dW+db %d→%d", in, out), Unit: "GFLOP/s", Work: fl, Flops: true,
			Run: func() { be.LinearBackward(nil, dw, db, dy, x, w, in, out, false, false) },
		})
		ops = append(ops, Op{
			Name: fmt.Sprintf("LinearBackward dx %d→%d", in, out), Unit: "GFLOP/s", Work: fl, Flops: true,
			Run: func() { be.LinearBackward(dx, nil, nil, dy, x, w, in, out, l > 1, false) },
		})
		// The whole backward of the layer in one call, as training runs it
		// (a backend may overlap dW and dx).
		ops = append(ops, Op{
			Name: fmt.Sprintf("LinearBackward dW+db+dx %d→%d", in, out), Unit: "GFLOP/s", Work: 2 * fl, Flops: true,
			Run: func() { be.LinearBackward(dx, dw, db, dy, x, w, in, out, l > 1, false) },
		})
	}
	// Gather and ScatterRows: 3 modes × 1000 rows, width 50.
	const order, width, rows = 3, 50, 3000
	cells := be.AllocI32(Batch * order)
	hc := make([]int32, Batch*order)
	for i := range hc {
		hc[i] = int32(i%order*1000 + rng.IntN(1000))
	}
	be.UploadI32(cells, hc)
	table, xg := alloc(rows*width, false), alloc(Batch*order*width, false)
	moved := float64(2*4*Batch*order*width) / 1e9
	ops = append(ops,
		Op{Name: "Gather 3×50", Unit: "GB/s", Work: moved, Run: func() { be.Gather(xg, table, cells, order, width, compute.ModeMajor) }},
		Op{Name: "ScatterRows 3×50", Unit: "GB/s", Work: moved * 1.5, Run: func() { be.ScatterRows(table, xg, cells, order, width, compute.ModeMajor) }},
	)
	pred, yv, delta, sq := alloc(Batch, false), alloc(Batch, false), alloc(Batch, false), alloc(1, false)
	ops = append(ops, Op{Name: "MSEGrad", Unit: "GB/s", Work: float64(3*4*Batch) / 1e9,
		Run: func() { be.MSEGrad(delta, sq, pred, yv, 2.0/Batch) }})
	// Adam over the default MLP's parameters with a 3000-row table.
	np := rows*width + 150*1024 + 1024 + 1024*1024 + 1024 + 1024*128 + 128 + 128 + 1
	p, g, m, v := alloc(np, false), alloc(np, false), alloc(np, false), alloc(np, false)
	t := 0
	ops = append(ops, Op{Name: fmt.Sprintf("Adam %.2fM params", float64(np)/1e6), Unit: "GB/s", Work: float64(7*4*np) / 1e9,
		Run: func() {
			t++
			be.Adam(p, g, m, v, compute.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: t})
		}})
	// InfluenceDot of the output layer (out 1, in 128).
	hid, dyo, gw, gb, score := alloc(Batch*128, true), alloc(Batch, false), alloc(128, false), alloc(1, false), alloc(Batch, false)
	ops = append(ops, Op{Name: "InfluenceDot 128→1", Unit: "Mcells/s", Work: Batch / 1e6,
		Run: func() { be.InfluenceDot(score, dyo, hid, gw, gb, 128, 1, 1e-3) }})
	// Alias sampling: one column of 1M draws from a 1000-entity table.
	const draws, entities = 1 << 20, 1000
	th, al := be.AllocI32(entities), be.AllocI32(entities)
	ht, ha := make([]int32, entities), make([]int32, entities)
	for i := range ht {
		ht[i] = int32(rng.Uint32())
		ha[i] = int32(rng.IntN(entities))
	}
	be.UploadI32(th, ht)
	be.UploadI32(al, ha)
	sout := be.AllocI32(draws * order)
	ctr := uint64(0)
	ops = append(ops, Op{Name: "SampleAlias 1M draws", Unit: "Msamples/s", Work: draws / 1e6,
		Run: func() { be.SampleAlias(sout, order, 0, th, al, 7, ctr); ctr += draws }})
	free := func() {
		for _, b := range frees {
			b.Free()
		}
		cells.Free()
		th.Free()
		al.Free()
		sout.Free()
	}
	for i := range ops {
		ops[i].Free = func() {}
	}
	ops[len(ops)-1].Free = free
	return ops
}

// TrainStep is a whole training step of the default MLP at batch 1024 on a
// 1000×1000×1000 tensor: forward, MSE gradient, backward, Adam.
type TrainStep struct {
	be        compute.Backend
	m         *nn.Net
	s         *nn.Set
	delta     compute.F32
	am, av    compute.F32
	t         int
	Flops     float64 // per step, of the Linear layers (forward, dW, dx)
	NumParams int
}

// NewTrainStep builds the model and one batch of random cells.
func NewTrainStep(be compute.Backend, layers []int) (*TrainStep, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	dims := []int{1000, 1000, 1000}
	m, err := nn.NewMLP(be, nn.Config{Dims: dims, Layers: layers, Capacity: Batch}, rng)
	if err != nil {
		return nil, err
	}
	cells := make([]int32, Batch*3)
	vals := make([]float64, Batch)
	for i := range cells {
		cells[i] = int32(rng.IntN(1000))
	}
	for i := range vals {
		vals[i] = rng.NormFloat64()
	}
	ts := &TrainStep{be: be, m: m, s: m.NewSet(cells, vals), delta: be.Alloc(Batch),
		am: be.Alloc(m.NumParams()), av: be.Alloc(m.NumParams()), NumParams: m.NumParams()}
	w := append(append([]int(nil), layers...), 1)
	for l := 1; l < len(w); l++ {
		ts.Flops += 3 * 2 * float64(Batch*w[l-1]*w[l])
	}
	return ts, nil
}

// adamHP are the bench's Adam hyper-parameters.
var adamHP = compute.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}

// Run performs one step.
func (ts *TrainStep) Run() {
	ts.pass()
	ts.t++
	s := adamHP
	s.T = ts.t
	ts.be.Adam(ts.m.Params(), ts.m.Grads(), ts.am, ts.av, s)
}

// pass queues the step's forward pass, MSE gradient and backward pass.
func (ts *TrainStep) pass() {
	pred := ts.m.Forward(ts.s.Rows)
	ts.be.MSEGrad(ts.delta, nil, pred, ts.s.Vals, 2.0/Batch)
	ts.m.Backward(ts.s.Rows, ts.delta, false)
}

// GraphStep is TrainStep replayed as one graph (compute.Capturer: CUDA
// graphs), as nn.Train replays a step by default (TrainConfig.Eager false): the forward
// pass, MSE gradient, backward pass and Adam, which reads the step's two
// constants from a buffer (compute.AdamStep.Scalars); each Run copies them
// in from a table of graphSteps steps and launches the graph. After n Runs
// the parameters are those of n TrainStep.Runs (n ≤ graphSteps; after that
// the table's constants repeat, which a benchmark may ignore).
type GraphStep struct {
	ts        *TrainStep
	g         compute.Graph
	sc, table compute.F32
	i         int
}

// graphSteps is the length of GraphStep's table of Adam constants.
const graphSteps = 4096

// NewGraphStep captures ts's step. It returns an error when the backend
// cannot capture. It runs the step's passes once eagerly first (sizing
// the backend's scratch memory), without Adam.
func NewGraphStep(ts *TrainStep) (*GraphStep, error) {
	c, ok := ts.be.(compute.Capturer)
	if !ok {
		return nil, fmt.Errorf("bench: the %s backend cannot capture graphs", ts.be.Name())
	}
	host := make([]float32, 2*graphSteps)
	for i := range graphSteps {
		s := adamHP
		s.T = ts.t + i + 1
		v := compute.AdamScalars(s)
		copy(host[2*i:], v[:])
	}
	gs := &GraphStep{ts: ts, sc: ts.be.Alloc(2), table: ts.be.Alloc(2 * graphSteps)}
	ts.be.Upload(gs.table, host)
	ts.pass()
	s := adamHP
	s.T, s.Scalars = 1, gs.sc
	g, err := c.Capture(func() {
		ts.pass()
		ts.be.Adam(ts.m.Params(), ts.m.Grads(), ts.am, ts.av, s)
	})
	if err != nil {
		gs.Free()
		return nil, err
	}
	gs.g = g
	return gs, nil
}

// Run performs one step: it copies the step's Adam constants into the
// graph's buffer and launches the graph.
func (gs *GraphStep) Run() {
	gs.ts.be.Copy(gs.sc, gs.table.Slice(2*(gs.i%graphSteps), 2))
	gs.g.Launch()
	gs.i++
	gs.ts.t++
}

// Free releases the graph and its buffers (not the step's).
func (gs *GraphStep) Free() {
	if gs.g != nil {
		gs.g.Free()
	}
	gs.sc.Free()
	gs.table.Free()
}

// Free releases the step's buffers.
func (ts *TrainStep) Free() {
	ts.m.Free()
	ts.s.Free()
	ts.delta.Free()
	ts.am.Free()
	ts.av.Free()
}

// TracInPass is TracIn's scoring of a batch of cells against a checkpoint:
// forward, per-cell gradient 2e, InfluenceDot of the output layer.
type TracInPass struct {
	ts           *TrainStep
	score, gw    compute.F32
	gb, deltaOne compute.F32
}

// NewTracInPass builds a pass over the step's batch.
func NewTracInPass(ts *TrainStep) *TracInPass {
	be := ts.be
	d := ts.m.LastHidden()
	rng := rand.New(rand.NewPCG(3, 3))
	return &TracInPass{ts: ts, score: be.Alloc(Batch), gw: filled(be, d, rng, false), gb: filled(be, 1, rng, false)}
}

// Run scores one batch of 1024 cells.
func (tp *TracInPass) Run() {
	ts, be := tp.ts, tp.ts.be
	pred := ts.m.Forward(ts.s.Rows)
	be.MSEGrad(ts.delta, nil, pred, ts.s.Vals, 2)
	d := ts.m.LastHidden()
	be.InfluenceDot(tp.score, ts.delta, ts.m.Hidden(Batch), tp.gw, tp.gb, d, 1, 1e-3)
}

// Free releases the pass's buffers (not the step's).
func (tp *TracInPass) Free() {
	tp.score.Free()
	tp.gw.Free()
	tp.gb.Free()
}
