package cuda_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
)

// sparseStep holds the fixed buffers of one sparse embedding update:
// DistinctRows of cells, CompactRows of dx, SparseAdam of the table.
type sparseStep struct {
	be                        compute.Backend
	order, width, k           int
	cells, rows, starts, perm compute.I32
	count                     compute.I32
	dx, grad, p, m, v         compute.F32
}

func newSparseStep(be compute.Backend, k, order, width, tableRows int) *sparseStep {
	s := &sparseStep{be: be, order: order, width: width, k: k}
	s.cells, s.rows, s.starts, s.perm, s.count = be.AllocI32(k), be.AllocI32(k), be.AllocI32(k+1), be.AllocI32(k), be.AllocI32(1)
	s.dx, s.grad = be.Alloc(k*width), be.Alloc(k*width)
	s.p, s.m, s.v = be.Alloc(tableRows*width), be.Alloc(tableRows*width), be.Alloc(tableRows*width)
	return s
}

// fill uploads cells drawn from tableRows rows, dx and the table state, all
// from seed.
func (s *sparseStep) fill(seed uint64, tableRows int) {
	r := rand.New(rand.NewPCG(seed, 9))
	cells := make([]int32, s.k)
	for i := range cells {
		cells[i] = int32(r.IntN(tableRows))
	}
	s.be.UploadI32(s.cells, cells)
	uni := func(b compute.F32, pos bool) {
		v := make([]float32, b.Len())
		for i := range v {
			v[i] = float32(r.Float64()*2 - 1)
			if pos {
				v[i] = float32(r.Float64())
			}
		}
		s.be.Upload(b, v)
	}
	uni(s.dx, false)
	uni(s.p, false)
	uni(s.m, false)
	uni(s.v, true)
}

func (s *sparseStep) run() {
	be := s.be
	be.DistinctRows(s.rows, s.starts, s.perm, s.count, s.cells)
	be.CompactRows(s.grad, s.dx, s.starts, s.perm, s.count, s.order, s.width, compute.RankMajor)
	be.SparseAdam(s.p, s.grad, s.m, s.v, s.rows, s.count, s.width, compute.AdamStep{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: 2})
}

func downloadI32(t *testing.T, be compute.Backend, b compute.I32) []int32 {
	t.Helper()
	v := make([]int32, b.Len())
	if err := be.DownloadI32(v, b); err != nil {
		t.Fatal(err)
	}
	return v
}

// equalBits compares two steps' outputs bit for bit: count, perm, the
// table state, and the first U rows, U+1 starts and U·E gradient elements
// (the rest keeps what earlier steps left).
func equalBits(t *testing.T, what string, a, b *sparseStep) {
	t.Helper()
	ua, ub := downloadI32(t, a.be, a.count)[0], downloadI32(t, b.be, b.count)[0]
	if ua != ub {
		t.Fatalf("%s: count %d, want %d", what, ua, ub)
	}
	u := int(ua)
	for i, p := range [][2]compute.I32{{a.rows, b.rows}, {a.starts, b.starts}, {a.perm, b.perm}} {
		n := []int{u, u + 1, a.k}[i]
		if x, y := downloadI32(t, a.be, p[0]), downloadI32(t, b.be, p[1]); !slices.Equal(x[:n], y[:n]) {
			t.Fatalf("%s: %s differ", what, []string{"rows", "starts", "perm"}[i])
		}
	}
	for i, p := range [][2]compute.F32{{a.grad, b.grad}, {a.p, b.p}, {a.m, b.m}, {a.v, b.v}} {
		x, y := download(t, a.be, p[0]), download(t, b.be, p[1])
		if i == 0 {
			x, y = x[:u*a.width], y[:u*a.width]
		}
		for j := range x {
			if math.Float32bits(x[j]) != math.Float32bits(y[j]) {
				t.Fatalf("%s: %s[%d] = %v, want %v", what, []string{"grad", "p", "m", "v"}[i], j, x[j], y[j])
			}
		}
	}
}

// TestSparseCapture records DistinctRows, CompactRows and SparseAdam in a
// CUDA graph (nothing in them may wait for U = count[0], which stays on the
// device) and replays it on new cells: the results are bit for bit those of
// the same operations run eagerly, with K in shared memory (3072) and
// beyond it, through the scratch memory sized by a first eager run (6144).
// The integer outputs and CompactRows are also the CPU backend's, bit for
// bit.
func TestSparseCapture(t *testing.T) {
	be := newBackend(t)
	for _, k := range []int{3072, 6144} {
		const order, width, tableRows = 3, 24, 5000
		eager, graphed := newSparseStep(be, k, order, width, tableRows), newSparseStep(be, k, order, width, tableRows)
		graphed.fill(1, tableRows)
		graphed.run() // sizes the scratch memory
		g, err := be.Capture(graphed.run)
		if err != nil {
			t.Fatalf("K=%d: Capture: %v", k, err)
		}
		for seed := uint64(2); seed < 5; seed++ {
			eager.fill(seed, tableRows)
			graphed.fill(seed, tableRows)
			eager.run()
			g.Launch()
			equalBits(t, "graph replay", graphed, eager)
		}
		g.Free()

		c := cpu.New()
		host := newSparseStep(c, k, order, width, tableRows)
		host.fill(4, tableRows)
		eager.fill(4, tableRows)
		for _, s := range []*sparseStep{host, eager} {
			s.be.DistinctRows(s.rows, s.starts, s.perm, s.count, s.cells)
			s.be.CompactRows(s.grad, s.dx, s.starts, s.perm, s.count, order, width, compute.ModeMajor)
		}
		equalBits(t, "CPU", eager, host)
	}
}

// TestDistinctRowsSizes checks DistinctRows against the CPU backend around
// the shared-memory limit (4096 keys) and well beyond it (the tiled merge
// through scratch memory), on few and on many distinct rows.
func TestDistinctRowsSizes(t *testing.T) {
	be := newBackend(t)
	c := cpu.New()
	r := rand.New(rand.NewPCG(7, 7))
	for _, k := range []int{4095, 4096, 4097, 8192, 8193, 50000, 65537, 300000} {
		for _, span := range []int{2, 1000, 1 << 30} {
			cells := make([]int32, k)
			for i := range cells {
				cells[i] = int32(r.IntN(span))
			}
			var got, want [4][]int32
			for bi, b := range []compute.Backend{be, c} {
				bufs := [5]compute.I32{b.AllocI32(k), b.AllocI32(k + 1), b.AllocI32(k), b.AllocI32(1), b.AllocI32(k)}
				b.UploadI32(bufs[4], cells)
				b.DistinctRows(bufs[0], bufs[1], bufs[2], bufs[3], bufs[4])
				for i := range 4 {
					v := downloadI32(t, b, bufs[i])
					if bi == 0 {
						got[i] = v
					} else {
						want[i] = v
					}
				}
			}
			for i, name := range []string{"rows", "starts", "perm", "count"} {
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("K=%d rows < %d: %s differs from the CPU backend's", k, span, name)
				}
			}
		}
	}
}
