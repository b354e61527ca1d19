package nn

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
)

// countingMSE is the CPU backend with its compute.OutputMSE counted.
type countingMSE struct {
	*cpu.Backend
	calls int
}

func (c *countingMSE) LinearForwardMSE(pred, delta, sq, x, w, bias, y compute.F32, in int, relu bool, scale float32) {
	c.calls++
	c.Backend.LinearForwardMSE(pred, delta, sq, x, w, bias, y, in, relu, scale)
}

// TestForwardMSE: ForwardMSE takes the backend's fused output layer and
// loss when it has one (once per call), and gives the prediction, delta and
// squared error of Forward followed by MSEGrad, bit for bit, on a backend
// without it.
func TestForwardMSE(t *testing.T) {
	dims := []int{30, 20, 10}
	cells, vals := lowRank(rand.New(rand.NewPCG(3, 4)), dims, 300)
	run := func(be compute.Backend) (pred, delta, sq []float32) {
		m, err := NewMLP(be, Config{Dims: dims, Layers: []int{12, 16, 8}, Capacity: 300}, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		set := m.NewSet(cells, vals)
		d, s := be.Alloc(300), be.Alloc(1)
		p := m.ForwardMSE(set.Rows, set.Vals, d, s, 2/300.)
		pred, delta, sq = make([]float32, 300), make([]float32, 300), make([]float32, 1)
		for _, c := range []struct {
			dst []float32
			src compute.F32
		}{{pred, p}, {delta, d}, {sq, s}} {
			if err := be.Download(c.dst, c.src); err != nil {
				t.Fatal(err)
			}
		}
		return pred, delta, sq
	}
	fused := &countingMSE{Backend: cpu.New()}
	p1, d1, s1 := run(fused)
	if fused.calls != 1 {
		t.Errorf("ForwardMSE called LinearForwardMSE %d times, want 1", fused.calls)
	}
	p2, d2, s2 := run(deviceOnly{cpu.New()})
	if !slices.Equal(p1, p2) || !slices.Equal(d1, d2) || !slices.Equal(s1, s2) {
		t.Errorf("fused and unfused ForwardMSE differ: sq %v vs %v", s1, s2)
	}
	if s1[0] <= 0 {
		t.Errorf("squared error %v, want > 0", s1[0])
	}
}
