package nn

import (
	"fmt"
	"math"

	"github.com/dainx/dainx/compute"
)

// ParamTensor is one named piece of a Net's parameters: a row-major array
// of the given shape.
//
// The pieces of a Net, in the order of its flat parameter vector (see the
// package documentation and ParamLayout), are
//
//	embedding.n       [Iₙ, E]     mode n's entity embeddings (n = 0…N−1),
//	                              row i the entity of 0-based index i
//	layers.l.weight   [Out, In]   Linear layer l (l = 0…L−1, Layer(l+1)),
//	                              w[o,i] multiplies input i of output o
//	                              (compute.Backend.LinearForward); this is
//	                              PyTorch's nn.Linear.weight convention
//	layers.l.bias     [Out]
//
// CoSTCo's layers with Rows > 1 apply the same [Out, In] weight to each
// of a cell's Rows input rows.
type ParamTensor struct {
	Name  string
	Shape []int
	Data  []float32 // nil in ParamLayout's answer
}

// Len returns the number of elements of the shape.
func (t ParamTensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// ParamLayout returns the names and shapes (Data nil) of the parameter
// pieces of a Net with mode sizes dims, embedding width E and the given
// Linear layers, in the order they occupy its flat parameter vector
// (HostParams). It does not check the configuration (NewNetFromParams
// does).
func ParamLayout(dims []int, width int, layers []Layer) []ParamTensor {
	var ts []ParamTensor
	for n, d := range dims {
		ts = append(ts, ParamTensor{Name: fmt.Sprintf("embedding.%d", n), Shape: []int{d, width}})
	}
	for l, ly := range layers {
		ts = append(ts,
			ParamTensor{Name: fmt.Sprintf("layers.%d.weight", l), Shape: []int{ly.Out, ly.In}},
			ParamTensor{Name: fmt.Sprintf("layers.%d.bias", l), Shape: []int{ly.Out}})
	}
	return ts
}

// HostTensors returns a host copy of m's parameters as the named pieces
// of ParamLayout, Data filled (views of one copy, HostParams's). It
// returns the backend's error if the download fails.
func (m *Net) HostTensors() ([]ParamTensor, error) {
	host, err := m.HostParams()
	if err != nil {
		return nil, err
	}
	ts := ParamLayout(m.dims, m.width, m.layers)
	off := 0
	for i := range ts {
		n := ts[i].Len()
		ts[i].Data = host[off : off+n : off+n]
		off += n
	}
	if off != len(host) {
		panic(fmt.Sprintf("nn: HostTensors: the layout names %d parameters, the model has %d", off, len(host)))
	}
	return ts, nil
}

// NewNetFromParams allocates a Net on be like NewMLP, NewCoSTCo, NewFM
// and NewHybrid do, but with the given parameters instead of random ones:
// params is the flat parameter vector (HostParams's layout: the pieces of
// ParamLayout one after the other), copied to the backend. kind is the
// Net's Kind ("mlp", "costco", "fm" or "hybrid"), width its embedding
// width E (CoSTCo's rank R, a pairwise net's K+1), layout the gathered
// input's layout (compute.ModeMajor for the MLP and the pairwise kinds,
// compute.RankMajor for CoSTCo), layers its Linear layers (MLPLayers,
// CoSTCoLayers or FMLayers for the models dainx trains) and capacity its
// largest batch. For the same configuration and parameters the Net computes
// exactly what the Net they were read from computes.
//
// It returns an error, instead of NewMLP's panics, for a configuration
// that cannot work: an unknown kind or layout, no modes, an empty mode, a
// width or capacity ≤ 0, a pairwise kind with another layout than
// compute.ModeMajor or a width below 2, no layers, a layer dimension ≤ 0, a layer that
// does not read what the previous stage gives (Rows·In = N·E for the
// first), an output layer other than linear with one output per cell, or
// len(params) other than the layout's total.
func NewNetFromParams(be compute.Backend, kind string, dims []int, width int, layout compute.Layout, layers []Layer, capacity int, params []float32) (*Net, error) {
	if kind != KindMLP && kind != KindCoSTCo && !PairwiseKind(kind) {
		return nil, fmt.Errorf("nn: kind %q, want mlp, costco, fm or hybrid", kind)
	}
	if layout != compute.ModeMajor && layout != compute.RankMajor {
		return nil, fmt.Errorf("nn: unknown layout %d", layout)
	}
	if len(dims) == 0 {
		return nil, fmt.Errorf("nn: tensor has no modes")
	}
	if width <= 0 {
		return nil, fmt.Errorf("nn: embedding width %d; it must be positive", width)
	}
	if PairwiseKind(kind) && (layout != compute.ModeMajor || width < 2) {
		return nil, fmt.Errorf("nn: kind %s needs the mode-major layout and an embedding width ≥ 2 (K ≥ 1 factor columns and the bias column), not layout %d, width %d", kind, layout, width)
	}
	if capacity <= 0 {
		return nil, fmt.Errorf("nn: capacity %d", capacity)
	}
	if len(layers) == 0 {
		return nil, fmt.Errorf("nn: no layers")
	}
	total, rows := 0, 0
	for n, d := range dims {
		if d <= 0 {
			return nil, fmt.Errorf("nn: mode %d has size %d", n+1, d)
		}
		if rows += d; rows > math.MaxInt32 {
			return nil, fmt.Errorf("nn: %d embedding rows over all modes do not fit int32", rows)
		}
	}
	total = rows * width
	perCell := len(dims) * width
	for l, ly := range layers {
		if ly.In <= 0 || ly.Out <= 0 || ly.Rows <= 0 {
			return nil, fmt.Errorf("nn: layers.%d has in %d, out %d, rows %d; all must be positive", l, ly.In, ly.Out, ly.Rows)
		}
		if ly.In*ly.Rows != perCell {
			return nil, fmt.Errorf("nn: layers.%d reads %d×%d values per cell, the previous stage gives %d", l, ly.Rows, ly.In, perCell)
		}
		perCell = ly.Rows * ly.Out
		total += ly.In*ly.Out + ly.Out
	}
	if last := layers[len(layers)-1]; last.Out != 1 || last.Rows != 1 || last.ReLU {
		return nil, fmt.Errorf("nn: the output layer layers.%d (rows %d, out %d, relu %v) must be linear with one output per cell", len(layers)-1, last.Rows, last.Out, last.ReLU)
	}
	if len(params) != total {
		return nil, fmt.Errorf("nn: %d parameters given, the configuration has %d", len(params), total)
	}
	return newNet(be, kind, dims, width, layout, append([]Layer(nil), layers...), capacity, nil, params, nil)
}
