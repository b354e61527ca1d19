package nn

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
)

// TestNewNetFromParams: a Net rebuilt from another's HostParams has the
// same parameters and predicts the same values, bit for bit, for an MLP
// and a CoSTCo; HostTensors names and cuts the parameters as ParamLayout
// says, the embedding of mode n being the table's rows from Offsets()[n].
func TestNewNetFromParams(t *testing.T) {
	be := cpu.New()
	dims := []int{5, 7, 3}
	for _, tc := range []struct {
		name  string
		build func(rng *rand.Rand) (*Net, error)
	}{
		{"mlp", func(rng *rand.Rand) (*Net, error) {
			return NewMLP(be, Config{Dims: dims, Layers: []int{12, 9, 6}, Capacity: 4}, rng)
		}},
		{"costco", func(rng *rand.Rand) (*Net, error) {
			return NewCoSTCo(be, CoSTCoConfig{Dims: dims, Rank: 4, Channels: 5, Capacity: 4}, rng)
		}},
		{"fm", func(rng *rand.Rand) (*Net, error) {
			return NewFM(be, FMConfig{Dims: dims, Rank: 3, Capacity: 4}, rng)
		}},
		{"hybrid", func(rng *rand.Rand) (*Net, error) {
			return NewHybrid(be, Config{Dims: dims, Layers: []int{12, 9, 6}, Capacity: 4}, rng)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := tc.build(rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Free()
			if a.Kind() == "fm" {
				// The FM's layer starts at zero: give it values.
				p, _ := a.HostParams()
				for i := a.TableRows() * a.Width(); i < len(p); i++ {
					p[i] = float32(i%7) / 10
				}
				a.SetParams(p)
			}
			host, err := a.HostParams()
			if err != nil {
				t.Fatal(err)
			}
			ts, err := a.HostTensors()
			if err != nil {
				t.Fatal(err)
			}
			layout := ParamLayout(a.Dims(), a.Width(), a.Layers())
			if len(ts) != len(dims)+2*a.NumLayers() || len(layout) != len(ts) {
				t.Fatalf("%d tensors, layout %d, want %d", len(ts), len(layout), len(dims)+2*a.NumLayers())
			}
			var flat []float32
			for i, x := range ts {
				if x.Name != layout[i].Name || !slices.Equal(x.Shape, layout[i].Shape) || len(x.Data) != x.Len() {
					t.Errorf("tensor %d: %s %v (%d values), layout %s %v", i, x.Name, x.Shape, len(x.Data), layout[i].Name, layout[i].Shape)
				}
				flat = append(flat, x.Data...)
			}
			if !equalBits32(flat, host) {
				t.Errorf("HostTensors do not concatenate to HostParams")
			}
			for n := range dims {
				off := int(a.Offsets()[n]) * a.Width()
				if !equalBits32(ts[n].Data, host[off:off+dims[n]*a.Width()]) || !slices.Equal(ts[n].Shape, []int{dims[n], a.Width()}) {
					t.Errorf("embedding.%d is not the table's rows of mode %d", n, n)
				}
			}
			for l := 1; l <= a.NumLayers(); l++ {
				shape, _, _, _, _ := a.Layer(l)
				if w := ts[len(dims)+2*(l-1)]; !slices.Equal(w.Shape, []int{shape.Out, shape.In}) {
					t.Errorf("%s has shape %v, want [out in] = [%d %d]", w.Name, w.Shape, shape.Out, shape.In)
				}
			}

			b, err := NewNetFromParams(be, a.Kind(), a.Dims(), a.Width(), a.Layout(), a.Layers(), 3, host)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Free()
			if got, _ := b.HostParams(); !equalBits32(got, host) {
				t.Errorf("rebuilt parameters differ")
			}
			if b.Kind() != a.Kind() || b.Layout() != a.Layout() || b.Width() != a.Width() || b.Capacity() != 3 || b.Pairwise() != a.Pairwise() || a.Pairwise() != (tc.name == "fm" || tc.name == "hybrid") {
				t.Errorf("rebuilt net %s/%v/%d/%d", b.Kind(), b.Layout(), b.Width(), b.Capacity())
			}
			rng := rand.New(rand.NewPCG(3, 4))
			var cells []int32
			for k := 0; k < 10; k++ {
				for _, d := range dims {
					cells = append(cells, int32(rng.IntN(d)))
				}
			}
			sa, sb := a.NewSet(cells, make([]float64, 10)), b.NewSet(cells, make([]float64, 10))
			defer sa.Free()
			defer sb.Free()
			pa, err := a.Predict(sa)
			if err != nil {
				t.Fatal(err)
			}
			pb, err := b.Predict(sb)
			if err != nil {
				t.Fatal(err)
			}
			if !equalBits32(pa, pb) {
				t.Errorf("predictions differ: %v vs %v", pa, pb)
			}
			host[0] = 0 // the net holds its own copy
			if got, _ := b.HostParams(); got[0] == 0 && ts[0].Data[0] != 0 {
				t.Errorf("the net shares the caller's slice")
			}
		})
	}
}

// TestNewNetFromParamsErrors: impossible configurations are errors that
// say what is wrong, not panics.
func TestNewNetFromParamsErrors(t *testing.T) {
	be := cpu.New()
	dims := []int{4, 3}
	good := MLPLayers([]int{6, 5})
	n := (4+3)*3 + 6*5 + 5 + 5 + 1
	for _, tc := range []struct {
		name   string
		kind   string
		dims   []int
		width  int
		layout compute.Layout
		layers []Layer
		params int
		want   string
	}{
		{"kind", "cnn", dims, 3, compute.ModeMajor, good, n, `kind "cnn"`},
		{"layout", "mlp", dims, 3, compute.Layout(7), good, n, "layout 7"},
		{"no modes", "mlp", nil, 3, compute.ModeMajor, good, n, "no modes"},
		{"empty mode", "mlp", []int{4, 0}, 3, compute.ModeMajor, good, n, "mode 2 has size 0"},
		{"width", "mlp", dims, 0, compute.ModeMajor, good, n, "embedding width 0"},
		{"no layers", "mlp", dims, 3, compute.ModeMajor, nil, n, "no layers"},
		{"chain", "mlp", dims, 3, compute.ModeMajor, MLPLayers([]int{8, 5}), n, "layers.0 reads 1×8 values per cell, the previous stage gives 6"},
		{"output", "mlp", dims, 3, compute.ModeMajor, []Layer{{In: 6, Out: 2, Rows: 1}}, n, "must be linear with one output"},
		{"count", "mlp", dims, 3, compute.ModeMajor, good, n - 1, "parameters given, the configuration has"},
		{"fm layout", "fm", dims, 3, compute.RankMajor, good, n, "kind fm needs the mode-major layout"},
		{"hybrid width", "hybrid", []int{4, 3, 2, 1, 1, 1}, 1, compute.ModeMajor, good, n, "an embedding width ≥ 2"},
	} {
		_, err := NewNetFromParams(be, tc.kind, tc.dims, tc.width, tc.layout, tc.layers, 2, make([]float32, tc.params))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error with %q", tc.name, err, tc.want)
		}
	}
	if m, err := NewNetFromParams(be, "mlp", dims, 3, compute.ModeMajor, good, 2, make([]float32, n)); err != nil {
		t.Errorf("good configuration: %v", err)
	} else {
		m.Free()
	}
}

func equalBits32(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}
