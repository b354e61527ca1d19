// Package nn holds DAIN's neural tensor completion model and its training:
// the MLP of paper eq. 4 over per-mode entity embeddings, the MSE loss of
// eq. 5, Adam, shuffled mini-batches and early stopping. Everything runs on a
// compute.Backend passed in by the caller.
//
// # Parameters
//
// A model's parameters live in one flat F32 vector with named views, laid
// out as
//
//	[ table (R×E) | W₁ (H₁×N·E) b₁ (H₁) | … | W_out (1×H_M) b_out (1) ]
//
// where R = Σₙ Iₙ (one embedding table holds every mode; cells are addressed
// by global rows, see compute) and H₁…H_M are the hidden widths. The
// gradient vector has the same layout, so one fused Adam step updates all of
// it, and the last layer's gradient (W_out, b_out) is one contiguous slice of
// H_M+1 elements, which is what TracIn needs.
//
// # Errors
//
// Constructors return errors for impossible configurations (a layer width
// that does not divide by the order, too many embedding rows for int32);
// training returns the backend's sticky error. A panic means a caller bug.
package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dainx/dainx/compute"
)

// MLP is DAIN's embedding model (paper eq. 4):
//
//	Z₁ = ReLU(W₁[E¹_{i₁},…,E^N_{i_N}] + b₁), …, Z_M = ReLU(W_M Z_{M−1} + b_M)
//	x̂ = W_out Z_M + b_out
//
// It owns its parameters, gradients and activation buffers on one backend.
type MLP struct {
	be      compute.Backend
	dims    []int
	widths  []int // widths[0] = N·E, then hidden widths, then 1
	width   int   // E
	offsets []int32

	params, grads compute.F32
	table, dtable compute.F32
	w, b, dw, db  []compute.F32 // per Linear layer, the last is the output

	capacity int
	acts     []compute.F32 // acts[l]: B×widths[l]; acts[0] = gathered input, last = prediction
	dacts    []compute.F32 // dacts[l]: gradient at acts[l] (pre-activation of layer l when l ≥ 1)
}

// Config describes an MLP.
type Config struct {
	// Dims are the mode sizes I₁…I_N.
	Dims []int
	// Layers are N·E followed by the hidden widths (the reference's
	// "layers", e.g. 150,1024,1024,128 for N = 3); the output layer of
	// width 1 is added.
	Layers []int
	// Capacity is the largest batch the model will see (training or
	// evaluation).
	Capacity int
}

// DefaultLayers returns the paper's layers for a tensor of the given order:
// N·50, 1024, 1024, 128.
func DefaultLayers(order int) []int {
	return []int{order * 50, 1024, 1024, 128}
}

// NewMLP allocates an MLP on be and initialises it like PyTorch's defaults
// (Embedding ~ N(0,1); Linear weights and biases ~ U(−1/√fan_in, 1/√fan_in)),
// drawing from rng in a fixed order: table, then W₁, b₁, W₂, b₂, ….
//
// It returns an error if Layers is empty, a width is not positive, Layers[0]
// is not a multiple of the order, a mode is empty, or Σₙ Iₙ does not fit
// int32.
func NewMLP(be compute.Backend, cfg Config, rng *rand.Rand) (*MLP, error) {
	order := len(cfg.Dims)
	if order == 0 {
		return nil, fmt.Errorf("nn: tensor has no modes")
	}
	if len(cfg.Layers) == 0 {
		return nil, fmt.Errorf("nn: no layers given")
	}
	for _, l := range cfg.Layers {
		if l <= 0 {
			return nil, fmt.Errorf("nn: layer width %d; widths must be positive (layers %v)", l, cfg.Layers)
		}
	}
	if cfg.Layers[0]%order != 0 {
		return nil, fmt.Errorf("nn: layers[0] = %d is not a multiple of the tensor order %d (it is order × embedding width)", cfg.Layers[0], order)
	}
	if cfg.Capacity <= 0 {
		return nil, fmt.Errorf("nn: capacity %d", cfg.Capacity)
	}
	m := &MLP{be: be, dims: append([]int(nil), cfg.Dims...), width: cfg.Layers[0] / order}
	m.widths = append(append([]int(nil), cfg.Layers...), 1)
	rows := 0
	for n, d := range cfg.Dims {
		if d <= 0 {
			return nil, fmt.Errorf("nn: mode %d has size %d", n+1, d)
		}
		m.offsets = append(m.offsets, int32(rows))
		rows += d
		if rows > math.MaxInt32 {
			return nil, fmt.Errorf("nn: %d embedding rows over all modes do not fit int32", rows)
		}
	}
	// Lay out parameters and initialise them on the host.
	total := rows * m.width
	for l := 1; l < len(m.widths); l++ {
		total += m.widths[l-1]*m.widths[l] + m.widths[l]
	}
	host := make([]float32, total)
	off := 0
	take := func(n int) (int, int) { o := off; off += n; return o, n }
	tOff, tLen := take(rows * m.width)
	for i := tOff; i < tOff+tLen; i++ {
		host[i] = float32(rng.NormFloat64())
	}
	type span struct{ off, n int }
	var ws, bs []span
	for l := 1; l < len(m.widths); l++ {
		in, out := m.widths[l-1], m.widths[l]
		bound := 1 / math.Sqrt(float64(in))
		wo, wn := take(out * in)
		bo, bn := take(out)
		for i := wo; i < wo+wn; i++ {
			host[i] = float32((2*rng.Float64() - 1) * bound)
		}
		for i := bo; i < bo+bn; i++ {
			host[i] = float32((2*rng.Float64() - 1) * bound)
		}
		ws = append(ws, span{wo, wn})
		bs = append(bs, span{bo, bn})
	}
	m.params = be.Alloc(total)
	m.grads = be.Alloc(total)
	be.Upload(m.params, host)
	m.table, m.dtable = m.params.Slice(tOff, tLen), m.grads.Slice(tOff, tLen)
	for l := range ws {
		m.w = append(m.w, m.params.Slice(ws[l].off, ws[l].n))
		m.b = append(m.b, m.params.Slice(bs[l].off, bs[l].n))
		m.dw = append(m.dw, m.grads.Slice(ws[l].off, ws[l].n))
		m.db = append(m.db, m.grads.Slice(bs[l].off, bs[l].n))
	}
	m.capacity = cfg.Capacity
	for _, w := range m.widths {
		m.acts = append(m.acts, be.Alloc(m.capacity*w))
		m.dacts = append(m.dacts, be.Alloc(m.capacity*w))
	}
	return m, nil
}

// Free releases the model's buffers.
func (m *MLP) Free() {
	m.params.Free()
	m.grads.Free()
	for l := range m.acts {
		m.acts[l].Free()
		m.dacts[l].Free()
	}
}

// Backend returns the backend the model lives on.
func (m *MLP) Backend() compute.Backend { return m.be }

// Order returns the tensor order N.
func (m *MLP) Order() int { return len(m.dims) }

// Dims returns the mode sizes (not a copy; do not modify).
func (m *MLP) Dims() []int { return m.dims }

// Capacity returns the largest batch Forward accepts.
func (m *MLP) Capacity() int { return m.capacity }

// NumParams returns the number of parameters, embeddings included.
func (m *MLP) NumParams() int { return m.params.Len() }

// Params returns the flat parameter vector (a view; see the package
// documentation for its layout).
func (m *MLP) Params() compute.F32 { return m.params }

// Grads returns the flat gradient vector, laid out like Params.
func (m *MLP) Grads() compute.F32 { return m.grads }

// LastHidden returns the width D = H_M of the last hidden activation (N·E
// when there is no hidden layer).
func (m *MLP) LastHidden() int { return m.widths[len(m.widths)-2] }

// OutputLayer returns the output layer's weight (1×D) and bias (1).
func (m *MLP) OutputLayer() (w, b compute.F32) { return m.w[len(m.w)-1], m.b[len(m.b)-1] }

// OutputGrad returns the output layer's gradient as one contiguous vector of
// D+1 elements: ∂/∂W_out then ∂/∂b_out.
func (m *MLP) OutputGrad() compute.F32 {
	d := m.LastHidden()
	return m.grads.Slice(m.grads.Len()-d-1, d+1)
}

// Rows converts cells of entity indices (K×N, 0-based per mode) into global
// embedding rows (K×N, = into dst). It panics if an index is outside its
// mode or the lengths differ.
func (m *MLP) Rows(dst, cells []int32) {
	order := len(m.dims)
	if len(dst) != len(cells) || len(cells)%order != 0 {
		panic(fmt.Sprintf("nn: Rows: %d destination and %d cell indices for order %d", len(dst), len(cells), order))
	}
	for k, i := range cells {
		n := k % order
		if i < 0 || int(i) >= m.dims[n] {
			panic(fmt.Sprintf("nn: Rows: index %d outside mode %d of size %d", i, n+1, m.dims[n]))
		}
		dst[k] = m.offsets[n] + i
	}
}

// Forward computes the model's prediction for a batch of B cells given as
// global rows (B×N, see Rows) and returns it as a view of B elements, valid
// until the next Forward. The activations are kept for Backward and Hidden.
// It panics if B exceeds the capacity.
func (m *MLP) Forward(rows compute.I32) compute.F32 {
	order := len(m.dims)
	if rows.Len()%order != 0 {
		panic(fmt.Sprintf("nn: Forward: %d row indices for order %d", rows.Len(), order))
	}
	batch := rows.Len() / order
	if batch > m.capacity {
		panic(fmt.Sprintf("nn: Forward: batch %d exceeds capacity %d", batch, m.capacity))
	}
	x := m.act(0, batch)
	m.be.Gather(x, m.table, rows, order, m.width, compute.ModeMajor)
	last := len(m.widths) - 1
	for l := 1; l <= last; l++ {
		m.be.LinearForward(m.act(l, batch), m.act(l-1, batch), m.w[l-1], m.b[l-1], m.widths[l-1], m.widths[l], l < last)
	}
	return m.act(last, batch)
}

// Hidden returns the last hidden activation Z_M of the latest Forward
// (B×D), the input of the output layer.
func (m *MLP) Hidden(batch int) compute.F32 { return m.act(len(m.widths)-2, batch) }

func (m *MLP) act(l, batch int) compute.F32  { return m.acts[l].Slice(0, batch*m.widths[l]) }
func (m *MLP) dact(l, batch int) compute.F32 { return m.dacts[l].Slice(0, batch*m.widths[l]) }

// Backward computes the gradient of Σ_b delta[b]·x̂_b with respect to every
// parameter (=, into Grads) for the batch of the latest Forward, where delta
// holds B elements (for the batch-mean MSE, delta = 2(x̂−x)/B). rows must be
// the rows given to that Forward.
func (m *MLP) Backward(rows compute.I32, delta compute.F32) {
	order := len(m.dims)
	batch := rows.Len() / order
	if delta.Len() != batch {
		panic(fmt.Sprintf("nn: Backward: delta of %d elements for a batch of %d", delta.Len(), batch))
	}
	last := len(m.widths) - 1
	dy := delta
	for l := last; l >= 1; l-- {
		// dx of layer l is the gradient at acts[l-1]; masked by ReLU'
		// when acts[l-1] is a hidden activation.
		m.be.LinearBackward(m.dact(l-1, batch), m.dw[l-1], m.db[l-1], dy, m.act(l-1, batch), m.w[l-1], m.widths[l-1], m.widths[l], l-1 >= 1, false)
		dy = m.dact(l-1, batch)
	}
	m.be.Fill(m.dtable, 0)
	m.be.ScatterRows(m.dtable, dy, rows, order, m.width, compute.ModeMajor)
}
