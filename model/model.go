// Package model saves and loads dainx's trained completion models (the
// MLP Θ′ of `dainx augment -model-out`, and with -model-out-all Θ and the
// CoSTCo predictor) in a standard format that numpy and PyTorch read
// without dainx: NAME.safetensors (float32 tensors, little-endian) beside
// NAME.json (the metadata). docs/model-format.md describes both.
//
// Tensors, for a model of order N with embedding width E:
//
//	embedding.n        Iₙ × E   the entities of mode n (n = 0…N−1)
//	layers.l.weight    Out × In Linear layer l (PyTorch's nn.Linear.weight)
//	layers.l.bias      Out
//
// For the MLP (Oh et al., CIKM 2021, eq. 4) a cell's input is the
// concatenation of its N embeddings (N·E values, mode after mode), then
// ReLU after every layer but the last. CoSTCo's layers are its
// convolutions written as Linear layers over rows (the JSON's
// "layer_rows"); see docs/model-format.md.
package model

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// Format and FormatVersion name the metadata's format.
const (
	Format        = "dainx-model"
	FormatVersion = 1
)

// Meta is a saved model's metadata (NAME.json).
type Meta struct {
	Format        string `json:"format"`         // "dainx-model"
	FormatVersion int    `json:"format_version"` // 1
	Version       string `json:"dainx_version"`  // dainx's version and commit
	Kind          string `json:"kind"`           // "mlp" or "costco"
	Role          string `json:"role"`           // "theta-prime", "theta" or "predictor"
	Order         int    `json:"order"`          // N
	Dims          []int  `json:"dims"`           // I₁…I_N
	Width         int    `json:"embedding_width"`
	// Layers are the MLP's widths N·E, hidden… (without the output 1);
	// Rank and Channels CoSTCo's R and C.
	Layers   []int `json:"layers,omitempty"`
	Rank     int   `json:"rank,omitempty"`
	Channels int   `json:"channels,omitempty"`
	// LayerShapes are every Linear layer's [rows, in, out, relu (0/1)].
	LayerShapes [][4]int `json:"layer_shapes"`
	Layout      string   `json:"layout"`     // gathered input: "mode-major" (MLP) or "rank-major" (CoSTCo)
	IndexBase   int      `json:"index_base"` // the index base of the cells it was trained on
	// Training holds the run's settings (flag name → value).
	Training map[string]any `json:"training,omitempty"`
}

// Save writes net as dir/name.safetensors and dir/name.json (meta, with
// the fields Save knows filled in from net), each to a temporary file
// renamed into place. It returns an I/O or download error.
func Save(dir, name string, net *nn.Net, meta Meta) error {
	params, err := net.HostParams()
	if err != nil {
		return err
	}
	meta.Format, meta.FormatVersion, meta.Kind = Format, FormatVersion, net.Kind()
	meta.Order, meta.Dims, meta.Width = net.Order(), net.Dims(), net.Width()
	meta.Layout = "mode-major"
	if net.Layout() == compute.RankMajor {
		meta.Layout = "rank-major"
	}
	meta.LayerShapes = nil
	for _, l := range net.Layers() {
		relu := 0
		if l.ReLU {
			relu = 1
		}
		meta.LayerShapes = append(meta.LayerShapes, [4]int{l.Rows, l.In, l.Out, relu})
	}
	names, shapes := tensors(meta)
	// safetensors: an 8-byte little-endian header length, the JSON header
	// (dtype, shape, data_offsets in bytes from the data's start), data.
	header := map[string]any{"__metadata__": map[string]string{"format": "pt", "dainx": Format}}
	off := 0
	for i, n := range names {
		size := 4 * count(shapes[i])
		header[n] = map[string]any{"dtype": "F32", "shape": shapes[i], "data_offsets": []int{off, off + size}}
		off += size
	}
	if off != 4*len(params) {
		return fmt.Errorf("model: %d parameters, the layout names %d", len(params), off/4)
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	err = tensor.AtomicWrite(filepath.Join(dir, name+".safetensors"), func(w io.Writer) error {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(hj)))
		if _, err := w.Write(n[:]); err != nil {
			return err
		}
		if _, err := w.Write(hj); err != nil {
			return err
		}
		buf := make([]byte, 4*len(params))
		for i, p := range params {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(p))
		}
		_, err := w.Write(buf)
		return err
	})
	if err != nil {
		return err
	}
	mj, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	return tensor.AtomicWrite(filepath.Join(dir, name+".json"), func(w io.Writer) error {
		_, err := w.Write(append(mj, '\n'))
		return err
	})
}

// tensors returns the tensor names and shapes of a model, in the order of
// nn.Net.HostParams.
func tensors(m Meta) ([]string, [][]int) {
	var names []string
	var shapes [][]int
	for n, d := range m.Dims {
		names = append(names, "embedding."+strconv.Itoa(n))
		shapes = append(shapes, []int{d, m.Width})
	}
	for l, s := range m.LayerShapes {
		names = append(names, fmt.Sprintf("layers.%d.weight", l), fmt.Sprintf("layers.%d.bias", l))
		shapes = append(shapes, []int{s[2], s[1]}, []int{s[2]})
	}
	return names, shapes
}

func count(shape []int) int {
	c := 1
	for _, d := range shape {
		c *= d
	}
	return c
}

// Load reads the model PATH names — PATH.json and PATH.safetensors, or a
// directory holding model.json and model.safetensors (what -model-out
// writes for Θ′), or either file — onto be, for batches of up to capacity
// cells. Errors name the file and what is wrong: a missing file, bad JSON,
// another format or format version, an unknown kind, a missing tensor or
// one of the wrong dtype or shape, a truncated file, a non-finite value.
func Load(path string, be compute.Backend, capacity int) (*nn.Net, Meta, error) {
	base := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		base = filepath.Join(path, "model")
	}
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".json"), ".safetensors")
	jp, sp := base+".json", base+".safetensors"
	var meta Meta
	b, err := os.ReadFile(jp)
	if err != nil {
		return nil, meta, fmt.Errorf("model: %w", err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, meta, fmt.Errorf("model %s: %w", jp, err)
	}
	switch {
	case meta.Format != Format:
		return nil, meta, fmt.Errorf("model %s: format %q, want %q", jp, meta.Format, Format)
	case meta.FormatVersion != FormatVersion:
		return nil, meta, fmt.Errorf("model %s: format version %d; this dainx reads version %d", jp, meta.FormatVersion, FormatVersion)
	case meta.Order != len(meta.Dims) || meta.Order == 0:
		return nil, meta, fmt.Errorf("model %s: order %d with dims %v", jp, meta.Order, meta.Dims)
	}
	var net *nn.Net
	init := rand.New(rand.NewPCG(0, 0)) // drawn, then overwritten
	switch meta.Kind {
	case "mlp":
		net, err = nn.NewMLP(be, nn.Config{Dims: meta.Dims, Layers: meta.Layers, Capacity: capacity}, init)
	case "costco":
		net, err = nn.NewCoSTCo(be, nn.CoSTCoConfig{Dims: meta.Dims, Rank: meta.Rank, Channels: meta.Channels, Capacity: capacity}, init)
	default:
		return nil, meta, fmt.Errorf("model %s: kind %q, want mlp or costco", jp, meta.Kind)
	}
	if err != nil {
		return nil, meta, fmt.Errorf("model %s: %w", jp, err)
	}
	ok := false
	defer func() {
		if !ok {
			net.Free()
		}
	}()
	if net.Width() != meta.Width {
		return nil, meta, fmt.Errorf("model %s: embedding width %d, its layers give %d", jp, meta.Width, net.Width())
	}
	for l, s := range net.Layers() {
		relu := 0
		if s.ReLU {
			relu = 1
		}
		if l >= len(meta.LayerShapes) || meta.LayerShapes[l] != [4]int{s.Rows, s.In, s.Out, relu} {
			return nil, meta, fmt.Errorf("model %s: layer_shapes %v do not match the %s the other fields describe", jp, meta.LayerShapes, meta.Kind)
		}
	}
	if len(meta.LayerShapes) != len(net.Layers()) {
		return nil, meta, fmt.Errorf("model %s: %d layer_shapes, the %s has %d layers", jp, len(meta.LayerShapes), meta.Kind, len(net.Layers()))
	}
	params, err := readSafetensors(sp, meta)
	if err != nil {
		return nil, meta, err
	}
	net.SetParams(params)
	ok = true
	return net, meta, nil
}

// readSafetensors returns the parameters of sp in HostParams's layout.
func readSafetensors(sp string, meta Meta) ([]float32, error) {
	b, err := os.ReadFile(sp)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if len(b) < 8 {
		return nil, fmt.Errorf("model %s: %d bytes, too short for a safetensors file", sp, len(b))
	}
	hl := binary.LittleEndian.Uint64(b)
	if hl > uint64(len(b)-8) {
		return nil, fmt.Errorf("model %s: header of %d bytes in a file of %d (truncated?)", sp, hl, len(b))
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+hl], &header); err != nil {
		return nil, fmt.Errorf("model %s: header: %w", sp, err)
	}
	data := b[8+hl:]
	names, shapes := tensors(meta)
	var out []float32
	for i, n := range names {
		raw, ok := header[n]
		if !ok {
			return nil, fmt.Errorf("model %s: no tensor %s", sp, n)
		}
		var t struct {
			Dtype   string `json:"dtype"`
			Shape   []int  `json:"shape"`
			Offsets [2]int `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("model %s: tensor %s: %w", sp, n, err)
		}
		if t.Dtype != "F32" {
			return nil, fmt.Errorf("model %s: %s has dtype %s, want F32", sp, n, t.Dtype)
		}
		if fmt.Sprint(t.Shape) != fmt.Sprint(shapes[i]) {
			return nil, fmt.Errorf("model %s: %s has shape %v, want %v", sp, n, t.Shape, shapes[i])
		}
		lo, hi := t.Offsets[0], t.Offsets[1]
		if lo < 0 || hi > len(data) || hi-lo != 4*count(shapes[i]) {
			return nil, fmt.Errorf("model %s: %s's data [%d, %d) does not fit the file's %d bytes of data (truncated?)", sp, n, lo, hi, len(data))
		}
		for k := lo; k < hi; k += 4 {
			v := math.Float32frombits(binary.LittleEndian.Uint32(data[k:]))
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("model %s: %s holds a non-finite value (%v at element %d)", sp, n, v, (k-lo)/4)
			}
			out = append(out, v)
		}
	}
	return out, nil
}
