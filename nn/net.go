// Package nn holds the neural tensor completion models DAIN trains and their
// training: the MLP of paper eq. 4, CoSTCo (Liu et al., KDD 2019), an
// order-2 factorization machine (Rendle, ICDM 2010) and the hybrid of the
// MLP and the factorization machine (as NeuMF, He et al., WWW 2017), all an
// embedding gather followed by Linear layers (Net), the last two with a
// pairwise interaction term added at the output; the MSE loss of eq. 1,
// optionally with L2 regularisation; Adam; shuffled mini-batches and early
// stopping. Everything runs on a compute.Backend passed in by the caller.
//
// # Parameters
//
// A model's parameters live in one flat F32 vector with named views, laid
// out as
//
//	[ table (R×E) | W₁ (out₁×in₁) b₁ (out₁) | … | W_L (1×D) b_L (1) ]
//
// where R = Σₙ Iₙ (one embedding table holds every mode; cells are addressed
// by global rows, see compute) and the last layer is the output. The
// gradient vector has the same layout, so one fused Adam step updates all of
// it, and the output layer's gradient (W_L, b_L) is one contiguous slice of
// D+1 elements, which is what TracIn needs.
//
// # Layers as matrices
//
// Layer l maps a (B·rowsₗ)×inₗ matrix to (B·rowsₗ)×outₗ, and each cell's
// output occupies rowsₗ·outₗ consecutive values, which the next layer reads
// as its own rows. The MLP has rows = 1 everywhere. CoSTCo's first
// convolution, a (1,N) kernel with C channels over the R×N embedding matrix
// of a cell (RankMajor gather), is a Linear N→C layer applied to R rows per
// cell; its second, an (R,1) kernel, is a Linear R·C→C layer.
//
// # Pairwise models
//
// A Net of kind "fm" or "hybrid" (Pairwise) adds to the output layer's
// value the order-2 interactions of the cell's embedding rows
// (compute.Backend.PairwiseForward over the ModeMajor gathered input
// x = [e₁,…,e_N], each row of width E = K+1):
//
//	x̂ = W_L z + b_L + Σₙ eₙ[K] + Σ_{n<n'} Σ_{k<K} eₙ[k]·e_{n'}[k]
//
// Column K of every row is the entity's bias wᵢ, columns 0…K−1 its factors
// vᵢ. With one-hot features (one active entity per mode) this is Rendle's
// factorization machine, ICDM 2010, eq. 1: ŷ = w₀ + Σᵢ wᵢxᵢ +
// Σ_{i<j} ⟨vᵢ,vⱼ⟩xᵢxⱼ, with w₀ = b_L. The FM's only Linear layer (N·E→1)
// reads the gathered input, so z = x; NewFM initialises it to zero, which
// makes the model a plain FM at the start. The hybrid's layers are the
// MLP's, z its last hidden layer: the MLP and the multilinear FM part summed
// before the output, sharing the embeddings (the NeuMF idea, He, Liao,
// Zhang, Nie, Hu, Chua, WWW 2017; here with one shared table). The backward
// pass adds the interaction term's gradient to the gradient at the gathered
// input (compute.Backend.PairwiseBackward), so Backward, BackwardInput,
// BackwardSparse and TracIn over the embeddings all include it; TracIn over
// the output layer is unchanged (the interaction term has no parameter of
// its own).
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
	"github.com/dainx/dainx/internal/bigmem"
)

// Net is a feed-forward completion model: per-mode entity embeddings
// gathered into a matrix per cell, then Linear layers with ReLU between
// them and a linear output of width 1, to which a pairwise model adds the
// interactions of the embeddings (see the package documentation). It owns
// its parameters, gradients and activation buffers on one backend.
type Net struct {
	be      compute.Backend
	kind    string
	dims    []int
	width   int // E
	layout  compute.Layout
	offsets []int32
	layers  []Layer
	// pairwise adds the order-2 interaction term of the gathered input to
	// the output (kinds "fm" and "hybrid"; see the package documentation).
	pairwise bool

	params, grads compute.F32
	table, dtable compute.F32
	w, b, dw, db  []compute.F32

	capacity int
	acts     []compute.F32 // acts[0]: gathered input; acts[l]: output of layer l
	dacts    []compute.F32 // dacts[l]: gradient at acts[l] (pre-activation when l ≥ 1)

	sp  *sparseBufs // BackwardSparse's compact gradient, allocated on first use
	spK int         // positions K of the latest BackwardSparse

	// sh is this process's part of a table sharded by row (shard.go); the
	// table is then a cache of one batch's rows.
	sh *tableShard
}

// Layer describes one Linear layer of a Net: Rows×In inputs per cell mapped
// to Rows×Out outputs, followed by ReLU if ReLU is set.
type Layer struct {
	In, Out, Rows int
	ReLU          bool
}

// Config describes an MLP (paper eq. 4).
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
	// Shard, if not nil, shards the embedding table by row over the
	// processes of a data-parallel run (see Sharding).
	Shard *Sharding
}

// DefaultLayers returns the paper's layers for a tensor of the given order:
// N·50, 1024, 1024, 128.
func DefaultLayers(order int) []int {
	return []int{order * 50, 1024, 1024, 128}
}

// NewMLP allocates DAIN's MLP (paper eq. 4) on be,
//
//	Z₁ = ReLU(W₁[E¹_{i₁},…,E^N_{i_N}] + b₁), …, Z_M = ReLU(W_M Z_{M−1} + b_M)
//	x̂ = W_out Z_M + b_out,
//
// initialised like PyTorch's defaults (Embedding ~ N(0,1); Linear weights
// and biases ~ U(−1/√fan_in, 1/√fan_in)), drawing from rng in a fixed
// order: table, then W₁, b₁, W₂, b₂, ….
//
// It returns an error if Layers is empty, a width is not positive, Layers[0]
// is not a multiple of the order, a mode is empty, or Σₙ Iₙ does not fit
// int32.
func NewMLP(be compute.Backend, cfg Config, rng *rand.Rand) (*Net, error) {
	order := len(cfg.Dims)
	if order == 0 {
		return nil, fmt.Errorf("nn: tensor has no modes")
	}
	if err := CheckLayers(cfg.Layers, order); err != nil {
		return nil, fmt.Errorf("nn: %w", err)
	}
	return newNet(be, "mlp", cfg.Dims, cfg.Layers[0]/order, compute.ModeMajor, MLPLayers(cfg.Layers), cfg.Capacity, rng, nil, cfg.Shard)
}

// MLPLayers returns the Linear layers of an MLP with the given widths
// (N·E then the hidden widths; see Config.Layers), the output layer
// included. It does not check the widths (CheckLayers does).
func MLPLayers(widths []int) []Layer {
	widths = append(append([]int(nil), widths...), 1)
	var layers []Layer
	for l := 1; l < len(widths); l++ {
		layers = append(layers, Layer{In: widths[l-1], Out: widths[l], Rows: 1, ReLU: l < len(widths)-1})
	}
	return layers
}

// CheckLayers reports MLP layer widths that cannot work for a tensor of
// the given order: none, a width ≤ 0, or a first width (order × embedding
// width E) that is not a multiple of the order.
func CheckLayers(layers []int, order int) error {
	if len(layers) == 0 {
		return fmt.Errorf("no layers given")
	}
	for _, l := range layers {
		if l <= 0 {
			return fmt.Errorf("layer width %d; widths must be positive (layers %v)", l, layers)
		}
	}
	if layers[0]%order != 0 {
		return fmt.Errorf("the first layer width %d is not a multiple of the tensor order %d (it is order × embedding width)", layers[0], order)
	}
	return nil
}

// CoSTCoConfig describes a CoSTCo model.
type CoSTCoConfig struct {
	Dims     []int // mode sizes I₁…I_N
	Rank     int   // R, the embedding width (20)
	Channels int   // C, the convolution channels (20)
	Capacity int   // largest batch
	// Shard, if not nil, shards the embedding table by row (Sharding).
	Shard *Sharding
}

// NewCoSTCo allocates CoSTCo (Liu, Nguyen, Zhang, Wu, KDD 2019) on be: the
// cell's embeddings stacked as an R×N matrix, a (1,N) convolution with C
// channels and ReLU, an (R,1) convolution with C channels and ReLU, Linear
// C→C with ReLU, and Linear C→1. It is initialised like PyTorch's defaults
// (fan_in N for the first convolution, R·C for the second), drawing from rng
// in parameter order. Errors as NewMLP.
func NewCoSTCo(be compute.Backend, cfg CoSTCoConfig, rng *rand.Rand) (*Net, error) {
	if cfg.Rank <= 0 || cfg.Channels <= 0 {
		return nil, fmt.Errorf("nn: CoSTCo rank %d, channels %d: both must be positive", cfg.Rank, cfg.Channels)
	}
	return newNet(be, "costco", cfg.Dims, cfg.Rank, compute.RankMajor, CoSTCoLayers(len(cfg.Dims), cfg.Rank, cfg.Channels), cfg.Capacity, rng, nil, cfg.Shard)
}

// The kinds of Net.
const (
	KindMLP    = "mlp"
	KindCoSTCo = "costco"
	KindFM     = "fm"
	KindHybrid = "hybrid"
)

// Kinds lists every Net kind.
var Kinds = []string{KindMLP, KindCoSTCo, KindFM, KindHybrid}

// PairwiseKind reports whether a Net of the given kind adds the pairwise
// interaction term (fm and hybrid).
func PairwiseKind(kind string) bool { return kind == KindFM || kind == KindHybrid }

// PairwiseInitStd is the standard deviation of the embedding table of the
// pairwise models at initialisation, libFM's default init_stdev. A table
// of N(0,1) rows would start the interaction term at a standard deviation
// of about √(K·N(N−1)/2) (12 for K = 49, N = 3), far above a rating's
// scale; with N(0, 0.1²) rows it is 0.01 of that.
const PairwiseInitStd = 0.1

// FMConfig describes an order-2 factorization machine (NewFM).
type FMConfig struct {
	Dims []int // mode sizes I₁…I_N
	// Rank is K, the factor columns of each entity (the FM's k); every
	// embedding row has E = K+1 columns, the last the entity's bias.
	Rank     int
	Capacity int // largest batch
	// Shard, if not nil, shards the embedding table by row (Sharding).
	Shard *Sharding
}

// NewFM allocates an order-2 factorization machine over the one-hot modes
// of a tensor (Rendle, "Factorization Machines", ICDM 2010, eq. 1) on be:
// for a cell (i₁,…,i_N) with embedding rows eₙ = [vₙ (K factors), wₙ (bias)]
// (E = K+1 columns, ModeMajor gather x = [e₁,…,e_N], N·E values),
//
//	x̂ = w₀ + a·x + Σₙ wₙ + Σ_{n<n'} ⟨vₙ, v_{n'}⟩
//
// where w₀ and a are the bias and the weights of one Linear layer N·E→1
// (the output layer, Layer(1), kind "fm"): w₀ is the FM's global bias, and
// a a linear read of the embeddings beyond the FM, initialised to zero so
// that the model starts as a plain FM (Rendle's; the per-entity biases wₙ
// are the FM's linear terms). The table is drawn from rng as
// N(0, PairwiseInitStd²) in row order (the only draws); w₀ and a start at
// 0, as libFM's. Its Params are laid out as the MLP's (table, W₁, b₁).
//
// It returns an error if Rank ≤ 0, a mode is empty, the order is 0, or
// Σₙ Iₙ does not fit int32.
func NewFM(be compute.Backend, cfg FMConfig, rng *rand.Rand) (*Net, error) {
	order := len(cfg.Dims)
	if order == 0 {
		return nil, fmt.Errorf("nn: tensor has no modes")
	}
	if cfg.Rank <= 0 {
		return nil, fmt.Errorf("nn: factorization machine rank %d; it must be positive", cfg.Rank)
	}
	width := cfg.Rank + 1
	return newNet(be, KindFM, cfg.Dims, width, compute.ModeMajor, FMLayers(order, cfg.Rank), cfg.Capacity, rng, nil, cfg.Shard)
}

// FMLayers returns the Linear layer of a factorization machine of the
// given order and rank K (see NewFM): one Linear N·(K+1)→1.
func FMLayers(order, rank int) []Layer {
	return MLPLayers([]int{order * (rank + 1)})
}

// NewHybrid allocates the hybrid of the MLP and the factorization machine
// on be: exactly the MLP of NewMLP (cfg.Layers, the same layers), whose
// output the pairwise term of NewFM over the same embeddings is added to,
//
//	x̂ = W_out Z_M + b_out + Σₙ wₙ + Σ_{n<n'} ⟨vₙ, v_{n'}⟩
//
// with each embedding row eₙ = [vₙ (K = E−1 factors), wₙ (column E−1, the
// bias)], E = Layers[0]/N (see the package documentation): the MLP and the
// multilinear part summed before the output, sharing the embeddings, as
// NeuMF (He et al., WWW 2017) joins its GMF and MLP parts before its
// output (there through a learned output layer over both, with separate
// embeddings; here the interaction term enters with weight 1). Kind
// "hybrid".
//
// It is initialised as NewMLP, drawing from rng in the same order (table,
// then W₁, b₁, W₂, b₂, …), except that the table is N(0,
// PairwiseInitStd²) instead of N(0, 1): with N(0,1) rows the pairwise
// term alone would start at a standard deviation of about √(K·N(N−1)/2).
//
// It returns NewMLP's errors, and an error if E < 2 (no factor column).
func NewHybrid(be compute.Backend, cfg Config, rng *rand.Rand) (*Net, error) {
	order := len(cfg.Dims)
	if order == 0 {
		return nil, fmt.Errorf("nn: tensor has no modes")
	}
	if err := CheckLayers(cfg.Layers, order); err != nil {
		return nil, fmt.Errorf("nn: %w", err)
	}
	width := cfg.Layers[0] / order
	if width < 2 {
		return nil, fmt.Errorf("nn: hybrid embedding width %d (layers[0] %d for order %d); it must be at least 2, K ≥ 1 factor columns and the bias column", width, cfg.Layers[0], order)
	}
	return newNet(be, KindHybrid, cfg.Dims, width, compute.ModeMajor, MLPLayers(cfg.Layers), cfg.Capacity, rng, nil, cfg.Shard)
}

// CoSTCoLayers returns CoSTCo's Linear layers for a tensor of the given
// order, rank R and channels C (see NewCoSTCo).
func CoSTCoLayers(order, rank, channels int) []Layer {
	n, r, c := order, rank, channels
	return []Layer{
		{In: n, Out: c, Rows: r, ReLU: true},
		{In: r * c, Out: c, Rows: 1, ReLU: true},
		{In: c, Out: c, Rows: 1, ReLU: true},
		{In: c, Out: 1, Rows: 1},
	}
}

// newNet allocates a Net on be. Its parameters are drawn from rng (see
// NewMLP, NewFM and NewHybrid for each kind's distributions) when given is
// nil, and copied from given (NumParams values, laid out as HostParams)
// otherwise; the caller checks given's length.
func newNet(be compute.Backend, kind string, dims []int, width int, layout compute.Layout, layers []Layer, capacity int, rng *rand.Rand, given []float32, shard *Sharding) (*Net, error) {
	order := len(dims)
	if order == 0 {
		return nil, fmt.Errorf("nn: tensor has no modes")
	}
	if capacity <= 0 {
		return nil, fmt.Errorf("nn: capacity %d", capacity)
	}
	m := &Net{be: be, kind: kind, dims: append([]int(nil), dims...), width: width, layout: layout, layers: layers, capacity: capacity,
		pairwise: PairwiseKind(kind)}
	if m.pairwise && (layout != compute.ModeMajor || width < 2) {
		return nil, fmt.Errorf("nn: kind %s needs the mode-major layout and an embedding width ≥ 2 (width %d)", kind, width)
	}
	// How the parameters are drawn: the table N(0, std²), the Linear
	// layers U(±1/√fan_in) (PyTorch's defaults), or zero for the FM.
	std, zeroLayers := 1.0, kind == KindFM
	if m.pairwise {
		std = PairwiseInitStd
	}
	rows := 0
	for n, d := range dims {
		if d <= 0 {
			return nil, fmt.Errorf("nn: mode %d has size %d", n+1, d)
		}
		m.offsets = append(m.offsets, int32(rows))
		rows += d
		if rows > math.MaxInt32 {
			return nil, fmt.Errorf("nn: %d embedding rows over all modes do not fit int32", rows)
		}
	}
	perCell := order * width
	for l, ly := range layers {
		if ly.In*ly.Rows != perCell {
			panic(fmt.Sprintf("nn: layer %d reads %d×%d values per cell, the previous stage gives %d", l+1, ly.Rows, ly.In, perCell))
		}
		perCell = ly.Rows * ly.Out
	}
	if last := layers[len(layers)-1]; last.Out != 1 || last.Rows != 1 || last.ReLU {
		panic("nn: the output layer must be linear with one output per cell")
	}
	if shard != nil && given != nil {
		return nil, fmt.Errorf("nn: a sharded table is not loaded from saved parameters")
	}
	// Lay out parameters and initialise them on the host. A sharded
	// table's place holds a cache of one batch's rows (Capacity × N).
	tableLen := rows * width
	if shard != nil {
		tableLen = capacity * order * width
	}
	total := tableLen
	for _, ly := range layers {
		total += ly.In*ly.Out + ly.Out
	}
	// On a backend whose buffers are host memory the parameters are
	// initialised in place: a table of millions of rows is then written
	// once, not once on the host and once more by Upload.
	host := given
	hb, inPlace := be.(compute.HostBuffers)
	inPlace = inPlace && given == nil
	switch {
	case inPlace:
		host = bigmem.Make[float32](total)
		m.params = hb.WrapF32(host)
	case host == nil:
		host = make([]float32, total)
	}
	if shard != nil {
		var err error
		m.sh, err = newShard(m, shard, rows, func(row []float64) {
			for e := range row {
				row[e] = rng.NormFloat64() * std
			}
		})
		if err != nil {
			return nil, err
		}
	}
	for i := 0; given == nil && shard == nil && i < rows*width; i++ {
		host[i] = float32(rng.NormFloat64() * std) // × 1 is exact: the MLP's and CoSTCo's N(0,1)
	}
	if !inPlace {
		m.params = be.Alloc(total)
	}
	m.grads = be.Alloc(total)
	m.table, m.dtable = m.params.Slice(0, tableLen), m.grads.Slice(0, tableLen)
	off := tableLen
	for _, ly := range layers {
		bound := 1 / math.Sqrt(float64(ly.In))
		for _, n := range []int{ly.In * ly.Out, ly.Out} {
			for i := off; given == nil && i < off+n; i++ {
				if zeroLayers {
					host[i] = 0
					continue
				}
				host[i] = float32((2*rng.Float64() - 1) * bound)
			}
			off += n
		}
		wo := off - ly.Out - ly.In*ly.Out
		m.w = append(m.w, m.params.Slice(wo, ly.In*ly.Out))
		m.b = append(m.b, m.params.Slice(off-ly.Out, ly.Out))
		m.dw = append(m.dw, m.grads.Slice(wo, ly.In*ly.Out))
		m.db = append(m.db, m.grads.Slice(off-ly.Out, ly.Out))
	}
	if !inPlace {
		be.Upload(m.params, host)
	}
	m.acts = append(m.acts, be.Alloc(capacity*order*width))
	m.dacts = append(m.dacts, be.Alloc(capacity*order*width))
	for _, ly := range layers {
		m.acts = append(m.acts, be.Alloc(capacity*ly.Rows*ly.Out))
		m.dacts = append(m.dacts, be.Alloc(capacity*ly.Rows*ly.Out))
	}
	return m, nil
}

// Free releases the model's buffers.
func (m *Net) Free() {
	m.params.Free()
	m.grads.Free()
	for l := range m.acts {
		m.acts[l].Free()
		m.dacts[l].Free()
	}
	if sp := m.sp; sp != nil {
		for _, b := range []compute.I32{sp.rows, sp.starts, sp.perm, sp.count} {
			b.Free()
		}
		sp.grad.Free()
		m.sp = nil
	}
	if m.sh != nil {
		m.sh.free()
		m.sh = nil
	}
}

// Kind returns "mlp", "costco", "fm" or "hybrid" (KindMLP …).
func (m *Net) Kind() string { return m.kind }

// Pairwise reports whether the net adds the pairwise interaction term of
// its embeddings to its output (kinds fm and hybrid; see the package
// documentation).
func (m *Net) Pairwise() bool { return m.pairwise }

// Backend returns the backend the model lives on.
func (m *Net) Backend() compute.Backend { return m.be }

// Order returns the tensor order N.
func (m *Net) Order() int { return len(m.dims) }

// Dims returns the mode sizes (not a copy; do not modify).
func (m *Net) Dims() []int { return m.dims }

// Width returns the embedding width E (CoSTCo's rank R; a pairwise net's
// K+1, K factor columns and the bias column).
func (m *Net) Width() int { return m.width }

// Layout returns how the gathered embeddings are laid out.
func (m *Net) Layout() compute.Layout { return m.layout }

// Offsets returns the first global row of each mode in the table (not a
// copy; do not modify).
func (m *Net) Offsets() []int32 { return m.offsets }

// Capacity returns the largest batch Forward accepts.
func (m *Net) Capacity() int { return m.capacity }

// NumParams returns the number of parameters, the whole embedding table
// included (also when it is sharded; Params then holds fewer).
func (m *Net) NumParams() int {
	if m.sh != nil {
		return m.params.Len() - m.table.Len() + m.TableRows()*m.width
	}
	return m.params.Len()
}

// Params returns the flat parameter vector (see the package documentation
// for its layout; when the table is sharded its place holds the cache of
// the latest batch's rows, and ShardRows the process's rows).
func (m *Net) Params() compute.F32 { return m.params }

// Grads returns the flat gradient vector, laid out like Params.
func (m *Net) Grads() compute.F32 { return m.grads }

// Table returns the embedding table (R×E) and its gradient, views into
// Params and Grads.
func (m *Net) Table() (table, grad compute.F32) { return m.table, m.dtable }

// NumLayers returns the number of Linear layers L, the output included.
func (m *Net) NumLayers() int { return len(m.layers) }

// Layer returns the shape of Linear layer l (1-based) and views of its
// weight, bias and their gradients.
func (m *Net) Layer(l int) (shape Layer, w, b, dw, db compute.F32) {
	return m.layers[l-1], m.w[l-1], m.b[l-1], m.dw[l-1], m.db[l-1]
}

// LastHidden returns the width D of the output layer's input.
func (m *Net) LastHidden() int { return m.layers[len(m.layers)-1].In }

// OutputLayer returns the output layer's weight (1×D) and bias (1).
func (m *Net) OutputLayer() (w, b compute.F32) { return m.w[len(m.w)-1], m.b[len(m.b)-1] }

// OutputGrad returns the output layer's gradient as one contiguous vector of
// D+1 elements: ∂/∂W_out then ∂/∂b_out.
func (m *Net) OutputGrad() compute.F32 {
	d := m.LastHidden()
	return m.grads.Slice(m.grads.Len()-d-1, d+1)
}

// Rows converts cells of entity indices (K×N, 0-based per mode) into global
// embedding rows (K×N, = into dst). It panics if an index is outside its
// mode or the lengths differ.
func (m *Net) Rows(dst, cells []int32) {
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
// until the next Forward. The activations are kept for Backward, Act and
// Hidden. It panics if B exceeds the capacity.
func (m *Net) Forward(rows compute.I32) compute.F32 {
	batch := m.forward("Forward", rows, len(m.layers))
	return m.Act(len(m.layers), batch)
}

// forward gathers the batch of rows and runs the first n layers on it
// (and, when n is all of them, a pairwise net's interaction term),
// returning B. It panics (naming op) if rows is not B×N or B exceeds the
// capacity.
func (m *Net) forward(op string, rows compute.I32, n int) (batch int) {
	order := len(m.dims)
	if rows.Len()%order != 0 {
		panic(fmt.Sprintf("nn: %s: %d row indices for order %d", op, rows.Len(), order))
	}
	batch = rows.Len() / order
	if batch > m.capacity {
		panic(fmt.Sprintf("nn: %s: batch %d exceeds capacity %d", op, batch, m.capacity))
	}
	g := rows
	if m.sh != nil {
		if g = m.sh.fetch(m, rows, rows.Len()); g == nil {
			g = rows // no cells: nothing is gathered
		}
	}
	m.be.Gather(m.Act(0, batch), m.table, g, order, m.width, m.layout)
	for l, ly := range m.layers[:n] {
		m.be.LinearForward(m.Act(l+1, batch), m.Act(l, batch), m.w[l], m.b[l], ly.In, ly.Out, ly.ReLU)
	}
	if m.pairwise && n == len(m.layers) {
		m.be.PairwiseForward(m.Act(n, batch), m.Act(0, batch), order, m.width)
	}
	return batch
}

// ForwardMSE is Forward followed by the MSE loss's gradient at the
// prediction: it returns the prediction (as Forward) and writes
//
//	delta[b] = scale·(pred[b] − y[b])   (=, B elements)
//	sq[0]    = Σ_b (pred[b] − y[b])²     (=, when sq is not nil)
//
// When the output layer has one output and the backend implements
// compute.OutputMSE, the output layer and the loss are one operation (one
// kernel on the CUDA backend); otherwise LinearForward and MSEGrad. pred
// and delta are the same either way, bit for bit. A pairwise net takes
// LinearForward, PairwiseForward and MSEGrad (the interaction term must
// be in pred before the loss). It panics as Forward and MSEGrad do.
func (m *Net) ForwardMSE(rows compute.I32, y, delta, sq compute.F32, scale float32) compute.F32 {
	last := len(m.layers) - 1
	ly := m.layers[last]
	batch := m.forward("ForwardMSE", rows, last)
	x, pred := m.Act(last, batch), m.Act(last+1, batch)
	if fused, ok := m.be.(compute.OutputMSE); ok && ly.Out == 1 && !m.pairwise {
		fused.LinearForwardMSE(pred, delta, sq, x, m.w[last], m.b[last], y, ly.In, ly.ReLU, scale)
	} else {
		m.be.LinearForward(pred, x, m.w[last], m.b[last], ly.In, ly.Out, ly.ReLU)
		if m.pairwise {
			m.be.PairwiseForward(pred, m.Act(0, batch), len(m.dims), m.width)
		}
		m.be.MSEGrad(delta, sq, pred, y, scale)
	}
	return pred
}

// Act returns activation l of the latest Forward for its batch of B cells:
// l = 0 is the gathered input (B×N·E), l ≥ 1 the output of layer l after
// its ReLU (B×Rowsₗ·Outₗ).
func (m *Net) Act(l, batch int) compute.F32 {
	return m.acts[l].Slice(0, batch*m.perCell(l))
}

// DAct returns the gradient at activation l left by the latest Backward:
// for l ≥ 1 the gradient at layer l's pre-activation output (the δ of
// layer l), for l = 0 the gradient at the gathered input.
func (m *Net) DAct(l, batch int) compute.F32 {
	return m.dacts[l].Slice(0, batch*m.perCell(l))
}

func (m *Net) perCell(l int) int {
	if l == 0 {
		return len(m.dims) * m.width
	}
	return m.layers[l-1].Rows * m.layers[l-1].Out
}

// Hidden returns the output layer's input Z of the latest Forward (B×D).
func (m *Net) Hidden(batch int) compute.F32 { return m.Act(len(m.layers)-1, batch) }

// Backward computes the gradient of Σ_b delta[b]·x̂_b with respect to every
// parameter for the batch of the latest Forward, where delta holds B
// elements (for the batch-mean MSE, delta = 2(x̂−x)/B). rows must be the
// rows given to that Forward. With accumulate false the gradients are
// overwritten (=); with accumulate true they are added to Grads (+=), which
// sums a gradient over several batches. DAct holds every layer's δ
// afterwards. The table's gradient is dense (R×E): with accumulate false
// the whole table gradient is cleared, O(R·E) work whatever the batch; a
// training step uses BackwardSparse instead.
func (m *Net) Backward(rows compute.I32, delta compute.F32, accumulate bool) {
	if m.sh != nil {
		panic("nn: Backward on a sharded table (Train trains it with BackwardSparse)")
	}
	batch := m.backwardLayers("Backward", rows, delta, accumulate)
	if !accumulate {
		m.be.Fill(m.dtable, 0)
	}
	m.be.ScatterRows(m.dtable, m.DAct(0, batch), rows, len(m.dims), m.width, m.layout)
}

// BackwardInput is Backward without the table's gradient: the Linear
// layers' gradients are overwritten (=) and DAct holds every layer's δ,
// down to the gradient at the gathered input (DAct(0)), which is what
// TracIn's per-cell embedding term needs. The table part of Grads is left
// as it was. Its work is O(B), independent of the table.
func (m *Net) BackwardInput(rows compute.I32, delta compute.F32) {
	m.backwardLayers("BackwardInput", rows, delta, false)
}

// BackwardSparse is Backward with the table's gradient kept sparse: the
// Linear layers' gradients are overwritten (=), and the table's gradient
// exists only for the K' ≤ B·N distinct rows the batch touched, as compact
// rows (see SparseGrad), each summed over its occurrences in batch order
// (compute.Backend.DistinctRows and CompactRows). The table part of Grads
// is not touched. Its work and memory traffic are O(B·N·E), independent of
// the table's size; on the CPU the compact rows are bit for bit the rows
// Backward(rows, delta, false) leaves in the dense table gradient.
func (m *Net) BackwardSparse(rows compute.I32, delta compute.F32) {
	batch := m.backwardLayers("BackwardSparse", rows, delta, false)
	k := batch * len(m.dims)
	sp := m.sparse()
	m.spK = k
	st, perm := sp.starts.Slice(0, k+1), sp.perm.Slice(0, k)
	m.be.DistinctRows(sp.rows.Slice(0, k), st, perm, sp.count, rows)
	m.be.CompactRows(sp.grad.Slice(0, k*m.width), m.DAct(0, batch), st, perm, sp.count, len(m.dims), m.width, m.layout)
}

// SparseGrad returns the table's gradient left by the latest
// BackwardSparse for its K = B·N row positions: count holds U, the number
// of distinct rows (on the backend; it is not read here), rows[:U] those
// global rows in increasing order, and grad[:U·E] their gradient rows
// (U×E). rows has K elements and grad K×E; the elements past U are stale.
// The views are valid until the next BackwardSparse. It panics if
// BackwardSparse has not run.
func (m *Net) SparseGrad() (rows, count compute.I32, grad compute.F32) {
	if m.sp == nil {
		panic("nn: SparseGrad before BackwardSparse")
	}
	k := m.spK
	return m.sp.rows.Slice(0, k), m.sp.count, m.sp.grad.Slice(0, k*m.width)
}

// DenseParams returns the parameters after the table (the Linear layers'
// weights and biases) and their gradients: what a sparse step updates
// with dense Adam.
func (m *Net) DenseParams() (params, grads compute.F32) {
	t := m.table.Len()
	return m.params.Slice(t, m.params.Len()-t), m.grads.Slice(t, m.grads.Len()-t)
}

// sparseBufs are the compact-gradient buffers of BackwardSparse, sized for
// the capacity (K = capacity·N positions).
type sparseBufs struct {
	rows, starts, perm, count compute.I32
	grad                      compute.F32
}

// sparse returns the compact-gradient buffers, allocating them on first
// use.
func (m *Net) sparse() *sparseBufs {
	if m.sp == nil {
		k := m.capacity * len(m.dims)
		m.sp = &sparseBufs{
			rows: m.be.AllocI32(k), starts: m.be.AllocI32(k + 1), perm: m.be.AllocI32(k), count: m.be.AllocI32(1),
			grad: m.be.Alloc(k * m.width),
		}
	}
	return m.sp
}

// backwardLayers runs the Linear layers' backward pass of Backward (=
// or += by accumulate) down to DAct(0), to which a pairwise net's
// interaction term adds its gradient, and returns B. It panics (naming op)
// if delta does not hold B elements.
func (m *Net) backwardLayers(op string, rows compute.I32, delta compute.F32, accumulate bool) (batch int) {
	order := len(m.dims)
	batch = rows.Len() / order
	if delta.Len() != batch {
		panic(fmt.Sprintf("nn: %s: delta of %d elements for a batch of %d", op, delta.Len(), batch))
	}
	m.be.Copy(m.DAct(len(m.layers), batch), delta)
	for l := len(m.layers); l >= 1; l-- {
		ly := m.layers[l-1]
		// dx of layer l is the gradient at acts[l-1]; masked by ReLU'
		// when acts[l-1] is a ReLU output, which makes it layer l-1's δ.
		maskX := l >= 2 && m.layers[l-2].ReLU
		m.be.LinearBackward(m.DAct(l-1, batch), m.dw[l-1], m.db[l-1], m.DAct(l, batch), m.Act(l-1, batch), m.w[l-1], ly.In, ly.Out, maskX, accumulate)
	}
	if m.pairwise {
		// DAct(0) was written (=) by the first layer's LinearBackward.
		m.be.PairwiseBackward(m.DAct(0, batch), delta, m.Act(0, batch), order, m.width)
	}
	return batch
}

// Bytes estimates the memory in bytes a Net of this shape holds: float32
// parameters, gradients and, when train is set, Adam's two moments over the
// embedding table (rows = Σ dims, of width values; with shards > 1 a
// table sharded by row, each process holding its rows and a cache of one
// batch's) and the Linear layers, and the activations and their
// gradients at capacity cells (acts and dacts of newNet). It is computed
// in float64, so that no product of settings overflows (issue 46); it
// does not allocate.
func Bytes(dims []int, width int, layers []Layer, capacity, shards int, train bool) float64 {
	rows := 0.0
	for _, d := range dims {
		rows += float64(d)
	}
	order, w, c := float64(len(dims)), float64(width), float64(capacity)
	table := rows * w
	if shards > 1 {
		table = table/float64(shards) + c*order*w
	}
	dense, acts := 0.0, c*order*w
	for _, ly := range layers {
		dense += float64(ly.In)*float64(ly.Out) + float64(ly.Out)
		acts += c * float64(ly.Rows) * float64(ly.Out)
	}
	copies := 2.0
	if train {
		copies = 4
	}
	return 4 * (copies*(table+dense) + 2*acts)
}
