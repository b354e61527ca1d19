// Package model saves and loads dainx's trained completion models (the
// MLP Θ′ of `dainx augment -model-out`, and with -model-out-all Θ and the
// CoSTCo predictor; each may also be a factorization machine or the
// MLP-FM hybrid; a Bayesian factorization machine's posterior samples
// with SaveBayes and LoadBayes, bayes.go) in a standard format that numpy
// and PyTorch read without dainx. docs/model-format.md describes it for
// users.
//
// # Files
//
// A model named NAME in directory DIR is two files:
//
//	DIR/NAME.safetensors   the parameters (safetensors, float32 little-endian)
//	DIR/NAME.json          the metadata (Meta), authoritative
//
// `dainx augment -model-out DIR` writes Θ′ as NAME = "model" (and Θ as
// "theta", the predictor as "predictor"). Load takes DIR (meaning
// DIR/model), DIR/NAME, DIR/NAME.json or DIR/NAME.safetensors.
//
// The safetensors file is what github.com/nlpodyssey/safetensors (and the
// Python safetensors package) write: an 8-byte little-endian header
// length, a JSON header giving each tensor's dtype ("F32"), shape and
// data_offsets (bytes from the start of the data), padded with spaces to
// a multiple of 8, then the data. Its "__metadata__" repeats the main
// metadata as strings (format "pt", dainx_format, dainx_format_version,
// dainx_version, kind, role, order, dims, embedding_width, layout,
// index_base) for tools that see only that file; Load reads the JSON.
//
// # Tensors
//
// For a model of order N with embedding width E (CoSTCo: rank R) and L
// Linear layers, all float32, row-major:
//
//	embedding.n        [Iₙ, E]     the entities of mode n (n = 0…N−1); row i
//	                               is the entity of 0-based index i
//	layers.l.weight    [Out, In]   Linear layer l (l = 0…L−1): PyTorch's
//	                               nn.Linear.weight, y = x·Wᵀ + b
//	layers.l.bias      [Out]
//
// These are exactly dainx's own parameters (nn.Net stores W as Out×In,
// see compute.Backend.LinearForward), nothing transposed.
//
// The MLP (Oh et al., CIKM 2021, eq. 4; layout "mode-major"): a cell
// (i₀,…,i_{N−1}) gives x = [embedding.0[i₀], …, embedding.{N−1}[i_{N−1}]]
// (N·E values), then x ← ReLU(x·Wᵀ + b) for every layer but the last,
// which is linear and gives the value (its Out is 1).
//
// CoSTCo (Liu et al., KDD 2019; layout "rank-major"): the cell's
// embeddings form the R×N matrix M[r,n] = embedding.n[iₙ][r]; layer 0
// ([C, N]) maps each of its R rows to C channels with ReLU (the (1,N)
// convolution), giving R×C values that layer 1 ([C, R·C]) reads as one
// row of R·C (row-major, r then c; the (R,1) convolution) with ReLU, then
// layer 2 (C→C, ReLU) and layer 3 (C→1, linear). Meta.LayerShapes gives
// each layer's rows.
//
// The factorization machine ("fm", Rendle, ICDM 2010; layout
// "mode-major", Meta.Rank = K, E = K+1) and the hybrid ("hybrid": the
// MLP's layers, Meta.Layers, with E ≥ 2) compute their Linear layers as
// the MLP (the fm has one, [1, N·E]: y = x·W₀ᵀ + b₀), and then add to the
// value the pairwise term of the cell's embedding rows eₙ =
// embedding.n[iₙ], whose last column eₙ[K] is the entity's bias and
// whose first K columns its factors:
//
//	Σₙ eₙ[K] + Σ_{n<n'} Σ_{k<K} eₙ[k]·e_{n'}[k]
//
// # Errors
//
// Save returns I/O and download errors, and refuses a model holding a
// non-finite parameter. Load's errors name the file and what is wrong: a
// missing file, bad JSON, another format or format version, an unknown
// kind or layout, dims or layers that contradict each other, a file that
// is not a complete safetensors file, a missing or unexpected tensor, a
// wrong dtype or shape, a non-finite value.
//
// Load treats both files as untrusted (limits.go): every size and count is
// checked against the limits MaxDim, MaxOrder, MaxWidth, MaxLayers,
// MaxCapacity, MaxActivations and MaxParams, against the other fields and
// against the safetensors file's size and header before anything is
// allocated from it, with overflow-safe products; strings read from a file
// are repeated in messages at most 80 characters long.
package model

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nlpodyssey/safetensors"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/internal/memlimit"
	"github.com/dainx/dainx/nn"
)

// Format and FormatVersion name the metadata's format. Load refuses any
// other.
const (
	Format        = "dainx-model"
	FormatVersion = 1
)

// DefaultName is the NAME of the model Load reads from a directory (Θ′
// as `dainx augment -model-out` writes it).
const DefaultName = "model"

// Layout names in Meta.Layout.
const (
	LayoutModeMajor = "mode-major" // the MLP: N embeddings one after the other
	LayoutRankMajor = "rank-major" // CoSTCo: the R×N matrix of embeddings
)

// Meta is a saved model's metadata (NAME.json). Save fills in the fields
// marked "from the net"; the caller gives the others.
type Meta struct {
	Format        string `json:"format"`         // Format (from Save)
	FormatVersion int    `json:"format_version"` // FormatVersion (from Save)
	Version       string `json:"dainx_version"`  // dainx's version and commit (caller)
	Kind          string `json:"kind"`           // "mlp", "costco", "fm", "hybrid" (from the net) or "bayes-fm" (SaveBayes)
	Role          string `json:"role"`           // "theta-prime", "theta" or "predictor" (caller)
	Order         int    `json:"order"`          // N (from the net)
	Dims          []int  `json:"dims"`           // I₁…I_N (from the net)
	Width         int    `json:"embedding_width"`
	// Layers are the MLP's and the hybrid's widths N·E, hidden… (without
	// the output 1; the -layers flag); Rank and Channels CoSTCo's R and C;
	// Rank alone the fm's K (its width is K+1). From the net.
	Layers   []int `json:"layers,omitempty"`
	Rank     int   `json:"rank,omitempty"`
	Channels int   `json:"channels,omitempty"`
	// LayerShapes are every Linear layer's [rows, in, out, relu (0/1)]
	// (from the net).
	LayerShapes [][4]int `json:"layer_shapes"`
	// Layout is LayoutModeMajor (MLP, fm, hybrid) or LayoutRankMajor
	// (CoSTCo) (from the net).
	Layout string `json:"layout"`
	// IndexBase is the index base (0 or 1) of the tensor the model was
	// trained on; dainx predict reads and writes cells in it (caller).
	IndexBase int `json:"index_base"`
	// Capacity is the net's largest batch (nn.Net.Capacity, from the
	// net): the batch its run evaluated with, max(batch, evaluation
	// batch), which Load uses when given no capacity, so that an RMSE
	// sums its batches as the run did.
	Capacity int `json:"capacity,omitempty"`
	// Samples is a bayes-fm model's number of posterior samples S, and
	// Clamp its clamp range [min, max] (the training values' extremes)
	// (from the model; KindBayesFM).
	Samples int       `json:"samples,omitempty"`
	Clamp   []float64 `json:"clamp,omitempty"`
	// ClampRule is where a bayes-fm model's predictions meet Clamp:
	// "samples" (each sample's prediction is clamped, then averaged) or
	// "mean" (the average is clamped); absent means "samples", the rule
	// of models saved before it was recorded (from the model).
	ClampRule string `json:"clamp_rule,omitempty"`
	// Members are an ensemble's members' kinds and Weights its stack's
	// intercept and weights, one per member (KindEnsemble; Clamp is its
	// clamp range).
	Members []string  `json:"members,omitempty"`
	Weights []float64 `json:"weights,omitempty"`
	// Training holds the run's settings, flag name → value (caller).
	Training map[string]any `json:"training,omitempty"`
}

// Save writes net as dir/name.safetensors and then dir/name.json, each to
// a temporary file in dir renamed into place (tensor.AtomicWrite),
// creating dir if needed. meta gives the caller's fields (Version, Role,
// IndexBase, Training); Save sets the others from net, whatever meta held.
// It returns an error for an empty name or one with a path separator, a
// net whose layers are not those dainx builds for its kind (NewMLP,
// NewCoSTCo, NewFM, NewHybrid), a
// non-finite parameter (naming the tensor), a failed download, or an I/O
// error.
func Save(dir, name string, net *nn.Net, meta Meta) error {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("model: name %q: want a file name without a directory", name)
	}
	if err := describe(net, &meta); err != nil {
		return err
	}
	ts, err := net.HostTensors()
	if err != nil {
		return fmt.Errorf("model %s: %w", name, err)
	}
	views := make(map[string]safetensors.TensorView, len(ts))
	for _, t := range ts {
		for i, v := range t.Data {
			if !finite(v) {
				return fmt.Errorf("model %s: %s holds a non-finite value (%v at element %d); not saved", name, t.Name, v, i)
			}
		}
		shape := make([]uint64, len(t.Shape))
		for i, d := range t.Shape {
			shape[i] = uint64(d)
		}
		data := make([]byte, 4*len(t.Data))
		for i, v := range t.Data {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
		if views[t.Name], err = safetensors.NewTensorView(safetensors.F32, shape, data); err != nil {
			return fmt.Errorf("model %s: %s: %w", name, t.Name, err)
		}
	}
	return writeModel(dir, name, views, stInfo(meta), meta)
}

// stInfo is the safetensors metadata of a model of meta: the main
// metadata as strings, for tools that see only that file.
func stInfo(meta Meta) map[string]string {
	dims, _ := json.Marshal(meta.Dims)
	return map[string]string{
		"format": "pt", "dainx_format": Format, "dainx_format_version": strconv.Itoa(FormatVersion),
		"dainx_version": meta.Version, "kind": meta.Kind, "role": meta.Role, "order": strconv.Itoa(meta.Order),
		"dims": string(dims), "embedding_width": strconv.Itoa(meta.Width), "layout": meta.Layout,
		"index_base": strconv.Itoa(meta.IndexBase),
	}
}

// describe sets meta's fields that come from net, checking that net is
// built as NewMLP, NewCoSTCo, NewFM or NewHybrid build its kind.
func describe(net *nn.Net, meta *Meta) error {
	layers := net.Layers()
	meta.Format, meta.FormatVersion, meta.Kind = Format, FormatVersion, net.Kind()
	meta.Order, meta.Dims, meta.Width = net.Order(), slices.Clone(net.Dims()), net.Width()
	meta.Capacity = net.Capacity()
	meta.Layers, meta.Rank, meta.Channels = nil, 0, 0
	meta.LayerShapes = nil
	for _, l := range layers {
		meta.LayerShapes = append(meta.LayerShapes, [4]int{l.Rows, l.In, l.Out, b2i(l.ReLU)})
	}
	switch net.Kind() {
	case nn.KindMLP, nn.KindHybrid:
		meta.Layout = LayoutModeMajor
		meta.Layers = append(meta.Layers, layers[0].In)
		for _, l := range layers[:len(layers)-1] {
			meta.Layers = append(meta.Layers, l.Out)
		}
	case "costco":
		meta.Layout = LayoutRankMajor
		meta.Rank, meta.Channels = net.Width(), layers[0].Out
	case nn.KindFM:
		meta.Layout = LayoutModeMajor
		meta.Rank = net.Width() - 1
	default:
		return fmt.Errorf("model: net of kind %q; want mlp, costco, fm or hybrid", net.Kind())
	}
	want, layout, err := expected(*meta)
	if err != nil || !slices.Equal(want, layers) || layout != net.Layout() {
		return fmt.Errorf("model: the %s net's layers %v (layout %v) are not those dainx builds for its kind", net.Kind(), layers, net.Layout())
	}
	return nil
}

// expected returns the Linear layers and the layout of the model meta's
// kind, order, width, layers, rank and channels describe, or an error
// saying why they describe none.
func expected(m Meta) ([]nn.Layer, compute.Layout, error) {
	switch m.Kind {
	case nn.KindMLP, nn.KindHybrid:
		if err := nn.CheckLayers(m.Layers, m.Order); err != nil {
			return nil, 0, fmt.Errorf("layers %s: %w", short(m.Layers), err)
		}
		if w := m.Layers[0] / m.Order; w != m.Width {
			return nil, 0, fmt.Errorf("embedding_width %d, but layers[0] = %d for order %d gives %d", m.Width, m.Layers[0], m.Order, w)
		}
		if m.Kind == nn.KindHybrid && m.Width < 2 {
			return nil, 0, fmt.Errorf("embedding_width %d: a hybrid's must be at least 2 (factors and the bias column)", m.Width)
		}
		return nn.MLPLayers(m.Layers), compute.ModeMajor, nil
	case nn.KindFM:
		if m.Rank <= 0 {
			return nil, 0, fmt.Errorf("fm rank %d: it must be positive", m.Rank)
		}
		if m.Width != m.Rank+1 {
			return nil, 0, fmt.Errorf("embedding_width %d, but an fm's is its rank %d + 1", m.Width, m.Rank)
		}
		return nn.FMLayers(m.Order, m.Rank), compute.ModeMajor, nil
	case "costco":
		if m.Rank <= 0 || m.Channels <= 0 {
			return nil, 0, fmt.Errorf("costco rank %d, channels %d: both must be positive", m.Rank, m.Channels)
		}
		if m.Rank != m.Width {
			return nil, 0, fmt.Errorf("embedding_width %d, but a costco's is its rank %d", m.Width, m.Rank)
		}
		return nn.CoSTCoLayers(m.Order, m.Rank, m.Channels), compute.RankMajor, nil
	}
	return nil, 0, fmt.Errorf("kind %q, want mlp, costco, fm or hybrid", m.Kind)
}

// Paths returns the metadata and tensor files of the model path names
// (see Load): a directory means its DefaultName, and a .json or
// .safetensors suffix is dropped.
func Paths(path string) (jsonPath, tensorPath string) {
	base := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		base = filepath.Join(path, DefaultName)
	}
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".json"), ".safetensors")
	return base + ".json", base + ".safetensors"
}

// DefaultCapacity is the capacity Load gives a net when neither the
// caller nor the metadata gives one (dainx's evaluation batch).
const DefaultCapacity = 4096

// Load reads the model path names onto be, for batches of up to capacity
// cells (Net.Capacity); capacity ≤ 0 means the saved net's (Meta.Capacity,
// or DefaultCapacity for a file without one), which makes Net.Evaluate,
// which sums per batch, give the RMSE of the run bit for bit. path is
// a directory holding model.json and model.safetensors (what -model-out
// writes for Θ′), or DIR/NAME with or without .json or .safetensors (see
// Paths). The net computes exactly what the saved net computed.
//
// capacity must be at most MaxCapacity, and capacity times the widest
// layer's values per cell at most MaxActivations (CheckCapacity).
//
// Errors name the file and what is wrong (see the package documentation),
// e.g. "model m/model.safetensors: layers.1.weight has shape [64 48], want
// [32 64]" or "model m/model.json: dims[1] = 4000000000000: above the
// limit 2147483647".
func Load(path string, be compute.Backend, capacity int) (*nn.Net, Meta, error) {
	jp, sp := Paths(path)
	meta, err := ReadMeta(jp)
	if err != nil {
		return nil, meta, err
	}
	if meta.Kind == KindBayesFM {
		return nil, meta, fmt.Errorf("model %s: kind %s holds posterior samples, not a net (load it with LoadBayes)", jp, meta.Kind)
	}
	if meta.Kind == KindEnsemble {
		return nil, meta, fmt.Errorf("model %s: kind %s stacks other models, not a net (load it with LoadEnsemble)", jp, meta.Kind)
	}
	layers, layout, _ := expected(meta) // ReadMeta checked it
	what := "batch capacity"
	if capacity <= 0 {
		capacity = meta.Capacity
		if capacity <= 0 {
			capacity = DefaultCapacity
		}
		what = "capacity"
	}
	if err := CheckCapacity(meta, capacity, what); err != nil {
		return nil, meta, fmt.Errorf("model %s: %w", jp, err)
	}
	want := nn.ParamLayout(meta.Dims, meta.Width, layers)
	total, err := paramCount(want)
	if err != nil {
		return nil, meta, fmt.Errorf("model %s: %w", jp, err)
	}
	// A file too small for the parameters is refused by readTensors
	// before it allocates, with the sizes; one that holds them must fit.
	if st, err := os.Stat(sp); err == nil && uint64(st.Size()) >= 8+4*uint64(total) {
		if err := CheckMemory(meta, capacity, what, false, 0); err != nil {
			return nil, meta, fmt.Errorf("model %s: %w", jp, err)
		}
	}
	params, err := readTensors(jp, sp, want, total)
	if err != nil {
		return nil, meta, err
	}
	net, err := nn.NewNetFromParams(be, meta.Kind, meta.Dims, meta.Width, layout, layers, capacity, params)
	if err != nil {
		return nil, meta, fmt.Errorf("model %s: %w", jp, err)
	}
	return net, meta, nil
}

// CheckMemory refuses a net of meta for batches of capacity cells (what
// names the setting that gives it, e.g. "-batch") whose bytes (nn.Bytes:
// parameters, gradients, with train Adam's moments, and activations) exceed
// max, or when max is 0 what the system says this process may still
// allocate (memlimit.Available); meta must have passed ReadMeta.
func CheckMemory(meta Meta, capacity int, what string, train bool, max int64) error {
	layers, _, err := expected(meta)
	if err != nil {
		return err
	}
	part := memlimit.Part{What: "the " + meta.Kind + " model", Flags: fmt.Sprintf("dims %s, %s %d", short(meta.Dims), what, capacity),
		Bytes: nn.Bytes(meta.Dims, meta.Width, layers, capacity, 1, train)}
	return memlimit.Check("the model", []memlimit.Part{part}, memlimit.Limit(max), max)
}

// ReadMeta reads and checks the metadata file jsonPath (NAME.json): its
// format and version, kind, order and dims, and that its width, layers
// (or rank and channels), layer_shapes and layout describe one model.
func ReadMeta(jsonPath string) (Meta, error) {
	var meta Meta
	b, err := readSmall(jsonPath, maxMetaSize)
	if errors.Is(err, fs.ErrNotExist) {
		return meta, fmt.Errorf("model %s: no such file (a model is NAME.json with NAME.safetensors, or a directory holding %s.json and %s.safetensors)", jsonPath, DefaultName, DefaultName)
	}
	if err != nil {
		return meta, fmt.Errorf("model %s: %w", jsonPath, err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return Meta{}, fmt.Errorf("model %s: not valid metadata JSON: %s", jsonPath, cut(err.Error(), 200))
	}
	bad := func(format string, a ...any) (Meta, error) {
		return meta, fmt.Errorf("model %s: "+format, append([]any{jsonPath}, a...)...)
	}
	switch {
	case meta.Format != Format:
		return bad("format %s, want %q", echo(meta.Format), Format)
	case meta.FormatVersion != FormatVersion:
		return bad("format version %d; this dainx reads version %d", meta.FormatVersion, FormatVersion)
	case !slices.Contains(nn.Kinds, meta.Kind) && meta.Kind != KindBayesFM && meta.Kind != KindEnsemble:
		return bad("kind %s, want mlp, costco, fm, hybrid, %s or %s", echo(meta.Kind), KindBayesFM, KindEnsemble)
	}
	if err := checkLimits(&meta); err != nil {
		return bad("%v", err)
	}
	if meta.Kind == KindEnsemble {
		switch {
		case meta.Order <= 0 || meta.Order != len(meta.Dims):
			return bad("order %d with dims %s", meta.Order, short(meta.Dims))
		case meta.IndexBase != 0 && meta.IndexBase != 1:
			return bad("index_base %d, want 0 or 1", meta.IndexBase)
		}
		if err := checkEnsembleMeta(meta); err != nil {
			return bad("%v", err)
		}
		return meta, nil
	}
	if meta.Members != nil || meta.Weights != nil {
		return bad("members and weights belong to an %s, not a %s", KindEnsemble, meta.Kind)
	}
	switch {
	case meta.Order <= 0 || meta.Order != len(meta.Dims):
		return bad("order %d with dims %s", meta.Order, short(meta.Dims))
	case meta.Width <= 0:
		return bad("embedding_width %d; it must be positive", meta.Width)
	case meta.IndexBase != 0 && meta.IndexBase != 1:
		return bad("index_base %d, want 0 or 1", meta.IndexBase)
	}
	for n, d := range meta.Dims {
		if d <= 0 {
			return bad("dims %s: mode %d has size %d", short(meta.Dims), n+1, d)
		}
	}
	if meta.Kind == KindBayesFM {
		if err := checkBayesMeta(meta); err != nil {
			return bad("%v", err)
		}
		return meta, nil
	}
	if meta.Samples != 0 || meta.Clamp != nil || meta.ClampRule != "" {
		return bad("samples and clamp belong to a %s model, not a %s", KindBayesFM, meta.Kind)
	}
	layers, layout, err := expected(meta)
	if err != nil {
		return bad("%v", err)
	}
	if name := layoutName(layout); meta.Layout != name {
		return bad("layout %s; a model of kind %s has %q", echo(meta.Layout), meta.Kind, name)
	}
	if meta.LayerShapes != nil {
		if len(meta.LayerShapes) != len(layers) {
			return bad("%d layer_shapes, the %s the other fields describe has %d layers", len(meta.LayerShapes), meta.Kind, len(layers))
		}
		for l, s := range layers {
			if want := [4]int{s.Rows, s.In, s.Out, b2i(s.ReLU)}; meta.LayerShapes[l] != want {
				return bad("layer_shapes[%d] = %v, the %s the other fields describe has %v ([rows, in, out, relu])", l, meta.LayerShapes[l], meta.Kind, want)
			}
		}
	}
	return meta, nil
}

func layoutName(l compute.Layout) string {
	if l == compute.RankMajor {
		return LayoutRankMajor
	}
	return LayoutModeMajor
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func finite(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
