package nn

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
)

// fullGrid returns every cell of a tensor with the given dims (T×N) and
// low-rank-ish values.
func fullGrid(dims []int) ([]int32, []float64) {
	var cells []int32
	var vals []float64
	var rec func(prefix []int32)
	rec = func(prefix []int32) {
		if len(prefix) == len(dims) {
			cells = append(cells, prefix...)
			v := 0.0
			for n, i := range prefix {
				v += float64(int(i)*(n+1)%5) / 4
			}
			vals = append(vals, v)
			return
		}
		for i := 0; i < dims[len(prefix)]; i++ {
			rec(append(slices.Clone(prefix), int32(i)))
		}
	}
	rec(nil)
	return cells, vals
}

// TestSparseAdamEqualsAdam: on a tensor small enough that every batch
// touches every row of the table (each batch is the whole grid), Train
// with SparseAdam gives Adam's parameters and history bit for bit, for the
// MLP and for CoSTCo; on a tensor where batches miss rows, they differ
// (the rows left out keep still under SparseAdam).
func TestSparseAdamEqualsAdam(t *testing.T) {
	dims := []int{4, 3, 5}
	cells, vals := fullGrid(dims)
	T := len(vals)
	for _, kind := range []string{"mlp", "costco"} {
		run := func(opt string, batch int) ([]float32, Result) {
			be := cpu.New()
			var m *Net
			var err error
			if kind == "mlp" {
				m, err = NewMLP(be, Config{Dims: dims, Layers: []int{12, 16, 8}, Capacity: T}, rand.New(rand.NewPCG(1, 2)))
			} else {
				m, err = NewCoSTCo(be, CoSTCoConfig{Dims: dims, Rank: 6, Channels: 5, Capacity: T}, rand.New(rand.NewPCG(1, 2)))
			}
			if err != nil {
				t.Fatal(err)
			}
			train, val := m.NewSet(cells, vals), m.NewSet(cells[:10*3], vals[:10])
			res, err := Train(context.Background(), m, train, val, TrainConfig{
				Epochs: 4, Batch: batch, Patience: 4, LR: 1e-2, Shuffle: rand.New(rand.NewPCG(5, 6)), EmbeddingOptimizer: opt,
			})
			if err != nil {
				t.Fatal(err)
			}
			p := make([]float32, m.NumParams())
			if err := be.Download(p, m.Params()); err != nil {
				t.Fatal(err)
			}
			for i := range res.Epochs {
				res.Epochs[i].Seconds = 0
			}
			return p, res
		}
		pd, rd := run(Adam, T)
		ps, rs := run(SparseAdam, T)
		if !slices.Equal(pd, ps) {
			t.Errorf("%s: every batch touches every row, yet SparseAdam's parameters differ from Adam's", kind)
		}
		if !slices.Equal(rd.Epochs, rs.Epochs) {
			t.Errorf("%s: histories differ:\n%v\n%v", kind, rd.Epochs, rs.Epochs)
		}
		pd, _ = run(Adam, 7)
		ps, _ = run(SparseAdam, 7)
		if slices.Equal(pd, ps) {
			t.Errorf("%s: batches of 7 cells miss rows, yet SparseAdam equals Adam", kind)
		}
	}
}

// TestBackwardSparse: the compact rows BackwardSparse leaves are the
// non-zero rows of Backward's dense table gradient, bit for bit, in
// increasing row order, and the Linear layers' gradients are the same;
// for every kind, the pairwise ones included. BackwardInput leaves
// Backward's gradient at the gathered input (DAct(0)), bit for bit.
func TestBackwardSparse(t *testing.T) {
	be := cpu.New()
	dims := []int{30, 20, 10}
	cells, vals := lowRank(rand.New(rand.NewPCG(3, 4)), dims, 200)
	for _, kind := range []string{"mlp", "costco", "fm", "hybrid"} {
		var m *Net
		var err error
		switch kind {
		case "costco":
			m, err = NewCoSTCo(be, CoSTCoConfig{Dims: dims, Rank: 5, Channels: 4, Capacity: 200}, rand.New(rand.NewPCG(1, 2)))
		case "fm":
			m, err = NewFM(be, FMConfig{Dims: dims, Rank: 3, Capacity: 200}, rand.New(rand.NewPCG(1, 2)))
		case "hybrid":
			m, err = NewHybrid(be, Config{Dims: dims, Layers: []int{12, 16, 8}, Capacity: 200}, rand.New(rand.NewPCG(1, 2)))
		default:
			m, err = NewMLP(be, Config{Dims: dims, Layers: []int{12, 16, 8}, Capacity: 200}, rand.New(rand.NewPCG(1, 2)))
		}
		if err != nil {
			t.Fatal(err)
		}
		set := m.NewSet(cells, vals)
		d := be.Alloc(200)
		m.ForwardMSE(set.Rows, set.Vals, d, nil, 2/200.)
		m.Backward(set.Rows, d, false)
		dense := download(t, be, m.Grads())
		dx := download(t, be, m.DAct(0, 200))
		be.Fill(m.DAct(0, 200), 3)
		m.BackwardInput(set.Rows, d)
		if !slices.Equal(download(t, be, m.DAct(0, 200)), dx) {
			t.Errorf("%s: BackwardInput's gradient at the input differs from Backward's", kind)
		}
		be.Fill(m.Grads(), 7) // BackwardSparse must not read or clear it
		m.ForwardMSE(set.Rows, set.Vals, d, nil, 2/200.)
		m.BackwardSparse(set.Rows, d)
		rows, count, grad := m.SparseGrad()
		u := int(downloadI32(t, be, count)[0])
		r, g := downloadI32(t, be, rows)[:u], download(t, be, grad)[:u*m.Width()]
		distinct := map[int32]bool{}
		for _, c := range downloadI32(t, be, set.Rows) {
			distinct[c] = true
		}
		if u != len(distinct) || !slices.IsSorted(r) {
			t.Fatalf("%s: %d compact rows %v, want the %d distinct rows in order", kind, u, r, len(distinct))
		}
		w := m.Width()
		for i, row := range r {
			if !slices.Equal(g[i*w:(i+1)*w], dense[int(row)*w:(int(row)+1)*w]) {
				t.Errorf("%s: compact row %d (table row %d) differs from the dense gradient", kind, i, row)
			}
		}
		after := download(t, be, m.Grads())
		tl := m.table.Len()
		if !slices.Equal(after[tl:], dense[tl:]) {
			t.Errorf("%s: Linear layers' gradients differ between Backward and BackwardSparse", kind)
		}
		for i, v := range after[:tl] {
			if v != 7 {
				t.Fatalf("%s: BackwardSparse wrote the dense table gradient at %d", kind, i)
			}
		}
	}
}

func download(t *testing.T, be compute.Backend, b compute.F32) []float32 {
	t.Helper()
	h := make([]float32, b.Len())
	if err := be.Download(h, b); err != nil {
		t.Fatal(err)
	}
	return h
}

func downloadI32(t *testing.T, be compute.Backend, b compute.I32) []int32 {
	t.Helper()
	h := make([]int32, b.Len())
	if err := be.DownloadI32(h, b); err != nil {
		t.Fatal(err)
	}
	return h
}

// touchCounter is the CPU backend counting the elements each operation
// reads or writes: every element of its plain buffers, but only the rows
// of a table that it indexes (Gather, ScatterRows, SparseAdam: rows × E).
type touchCounter struct {
	*cpu.Backend
	n int
}

func (c *touchCounter) add(bs ...interface{ Len() int }) {
	for _, b := range bs {
		if b != nil {
			c.n += b.Len()
		}
	}
}

func (c *touchCounter) Fill(dst compute.F32, v float32) { c.add(dst); c.Backend.Fill(dst, v) }
func (c *touchCounter) Copy(dst, src compute.F32)       { c.add(dst, src); c.Backend.Copy(dst, src) }
func (c *touchCounter) Gather(x, table compute.F32, cells compute.I32, order, width int, layout compute.Layout) {
	c.add(x, cells, x) // the table rows read: one per element of x
	c.Backend.Gather(x, table, cells, order, width, layout)
}
func (c *touchCounter) ScatterRows(dtable, dx compute.F32, cells compute.I32, order, width int, layout compute.Layout) {
	c.add(dx, cells, dx)
	c.Backend.ScatterRows(dtable, dx, cells, order, width, layout)
}
func (c *touchCounter) LinearForward(y, x, w, bias compute.F32, in, out int, relu bool) {
	c.add(y, x, w, bias)
	c.Backend.LinearForward(y, x, w, bias, in, out, relu)
}
func (c *touchCounter) LinearBackward(dx, dw, db, dy, x, w compute.F32, in, out int, maskX, accumulate bool) {
	c.add(dx, dw, db, dy, x, w)
	c.Backend.LinearBackward(dx, dw, db, dy, x, w, in, out, maskX, accumulate)
}
func (c *touchCounter) LinearForwardMSE(pred, delta, sq, x, w, bias, y compute.F32, in int, relu bool, scale float32) {
	c.add(pred, delta, sq, x, w, bias, y)
	c.Backend.LinearForwardMSE(pred, delta, sq, x, w, bias, y, in, relu, scale)
}
func (c *touchCounter) MSEGrad(delta, sq, pred, y compute.F32, scale float32) {
	c.add(delta, sq, pred, y)
	c.Backend.MSEGrad(delta, sq, pred, y, scale)
}
func (c *touchCounter) Adam(p, g, m, v compute.F32, s compute.AdamStep) {
	c.add(p, g, m, v)
	c.Backend.Adam(p, g, m, v, s)
}
func (c *touchCounter) DistinctRows(rows, starts, perm, count, cells compute.I32) {
	c.add(rows, starts, perm, count, cells)
	c.Backend.DistinctRows(rows, starts, perm, count, cells)
}
func (c *touchCounter) CompactRows(grad, dx compute.F32, starts, perm, count compute.I32, order, width int, layout compute.Layout) {
	c.add(grad, dx, starts, perm, count)
	c.Backend.CompactRows(grad, dx, starts, perm, count, order, width, layout)
}
func (c *touchCounter) SparseAdam(p, g, m, v compute.F32, rows, count compute.I32, width int, s compute.AdamStep) {
	c.add(g, rows, count, g, g, g) // p, m, v: the listed rows only (at most g's elements each)
	c.Backend.SparseAdam(p, g, m, v, rows, count, width, s)
}

// TestStepWorkIndependentOfTable counts the elements a training step's
// operations touch (forward, loss, backward and the optimiser step, what
// Train runs per step) on the same cells in a tensor with small modes and
// in one with modes 1000× larger: with SparseAdam the counts are equal;
// with Adam they grow with the table (so the count can fail).
func TestStepWorkIndependentOfTable(t *testing.T) {
	small := []int{20, 15, 10}
	cells, vals := lowRank(rand.New(rand.NewPCG(3, 4)), small, 256)
	large := []int{20000, 15000, 10000}
	for _, kind := range []string{"mlp", "costco"} {
		count := func(dims []int, opt string) int {
			be := &touchCounter{Backend: cpu.New()}
			var m *Net
			var err error
			if kind == "mlp" {
				m, err = NewMLP(be, Config{Dims: dims, Layers: []int{24, 16, 8}, Capacity: 256}, rand.New(rand.NewPCG(1, 2)))
			} else {
				m, err = NewCoSTCo(be, CoSTCoConfig{Dims: dims, Rank: 8, Channels: 4, Capacity: 256}, rand.New(rand.NewPCG(1, 2)))
			}
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			set := m.NewSet(cells, vals)
			am, av, d, sq := be.Alloc(m.NumParams()), be.Alloc(m.NumParams()), be.Alloc(256), be.Alloc(1)
			sparse := opt == SparseAdam
			step := func(s int) {
				m.ForwardMSE(set.Rows, set.Vals, d, sq, 2/256.)
				if sparse {
					m.BackwardSparse(set.Rows, d)
				} else {
					m.Backward(set.Rows, d, false)
				}
				m.adamStep(sparse, am, av, compute.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: s})
			}
			step(1) // allocates the sparse buffers
			be.n = 0
			step(2)
			return be.n
		}
		s, l := count(small, SparseAdam), count(large, SparseAdam)
		if s != l {
			t.Errorf("%s sparse-adam: a step touches %d elements with %v and %d with %v", kind, s, small, l, large)
		}
		if ds, dl := count(small, Adam), count(large, Adam); dl <= ds {
			t.Errorf("%s adam: a step touches %d elements with %v and %d with %v; the count should see the dense table", kind, ds, small, dl, large)
		}
	}
}

// TestChooseEmbeddingOptimizer: auto keeps the paper's dense Adam for the
// tables of the study's tensors with the paper's layers and switches to
// SparseAdam for a table of millions of rows; explicit settings pass
// through unchanged.
func TestChooseEmbeddingOptimizer(t *testing.T) {
	mlp := MLPLayers([]int{48, 64, 32})
	for _, c := range []struct {
		rows, width int
		layers      []Layer
		batch       int
		want        string
	}{
		{18549, 50, MLPLayers(DefaultLayers(3)), 1024, Adam}, // MovieLens, the paper's layers
		{2100, 16, mlp, 1024, Adam},
		{2001000, 16, mlp, 1024, SparseAdam},
		{2001000, 20, CoSTCoLayers(3, 20, 20), 256, SparseAdam},
	} {
		got, why := ChooseEmbeddingOptimizer(Auto, c.rows, c.width, c.layers, c.batch)
		if got != c.want || why == "" {
			t.Errorf("%d×%d table: auto chose %q (%s), want %s", c.rows, c.width, got, why, c.want)
		}
	}
	for _, s := range []string{Adam, SparseAdam} {
		if got, why := ChooseEmbeddingOptimizer(s, 2001000, 16, mlp, 1024); got != s || why != "" {
			t.Errorf("setting %s gave %s (%q)", s, got, why)
		}
	}
}
