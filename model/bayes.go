package model

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nlpodyssey/safetensors"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/internal/memlimit"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// KindBayesFM is the kind of a saved Bayesian factorization machine: the
// posterior samples of `-final-model bayes-fm` (package bayes), which
// predicts by averaging its samples' predictions, each clamped or the
// average clamped (Meta.ClampRule).
const KindBayesFM = "bayes-fm"

// MaxSamples is the largest number of posterior samples a saved bayes-fm
// model may hold.
const MaxSamples = 1 << 16

// bayesLayout returns the tensors of a bayes-fm model of meta (which
// passed checkBayesMeta): w0 [S], then embedding.n [S, dims[n], K+1] for
// every mode n, each row the entity's K factors followed by its bias;
// then each sample's noise precision alpha [S] and priors: prior.w.mean
// and prior.w.precision [S, N] (each mode's bias prior), prior.v.mean and
// prior.v.precision [S, N, K] (each mode's factor priors).
func bayesLayout(meta Meta) []nn.ParamTensor {
	s, n, k := meta.Samples, meta.Order, meta.Rank
	want := []nn.ParamTensor{{Name: "w0", Shape: []int{s}}}
	for m, d := range meta.Dims {
		want = append(want, nn.ParamTensor{Name: fmt.Sprintf("embedding.%d", m), Shape: []int{s, d, k + 1}})
	}
	return append(want,
		nn.ParamTensor{Name: "alpha", Shape: []int{s}},
		nn.ParamTensor{Name: "prior.w.mean", Shape: []int{s, n}},
		nn.ParamTensor{Name: "prior.w.precision", Shape: []int{s, n}},
		nn.ParamTensor{Name: "prior.v.mean", Shape: []int{s, n, k}},
		nn.ParamTensor{Name: "prior.v.precision", Shape: []int{s, n, k}})
}

// checkBayesMeta checks the fields of a bayes-fm model's metadata
// (ReadMeta has checked the format, the limits, order, dims and
// index_base): samples, rank, width, layout, clamp, and no layers.
func checkBayesMeta(m Meta) error {
	switch {
	case m.Samples < 1 || m.Samples > MaxSamples:
		return fmt.Errorf("samples %d: want 1…%d", m.Samples, MaxSamples)
	case m.Rank < 1 || m.Rank > bayes.MaxRank:
		return fmt.Errorf("bayes-fm rank %d: want 1…%d", m.Rank, bayes.MaxRank)
	case m.Width != m.Rank+1:
		return fmt.Errorf("embedding_width %d, but a bayes-fm's is its rank %d + 1", m.Width, m.Rank)
	case m.Layout != LayoutModeMajor:
		return fmt.Errorf("layout %s; a model of kind %s has %q", echo(m.Layout), m.Kind, LayoutModeMajor)
	case len(m.Layers) > 0 || len(m.LayerShapes) > 0 || m.Channels != 0:
		return fmt.Errorf("a %s model has no layers, layer_shapes or channels", m.Kind)
	case len(m.Clamp) != 2:
		return fmt.Errorf("clamp has %d values, want 2 (the smallest and largest training value)", len(m.Clamp))
	case !(m.Clamp[0] <= m.Clamp[1]) || math.IsInf(m.Clamp[0], 0) || math.IsInf(m.Clamp[1], 0):
		return fmt.Errorf("clamp [%v, %v]: want finite lo ≤ hi", m.Clamp[0], m.Clamp[1])
	case m.ClampRule != "" && m.ClampRule != string(bayes.ClampSamples) && m.ClampRule != string(bayes.ClampMean):
		return fmt.Errorf("clamp_rule %s: want %q or %q (absent: %q)", echo(m.ClampRule), bayes.ClampSamples, bayes.ClampMean, bayes.ClampSamples)
	}
	_, err := paramCount(bayesLayout(m))
	return err
}

// SaveBayes writes the bayes-fm model m as dir/name.safetensors and then
// dir/name.json, each to a temporary file renamed into place, creating
// dir if needed: the tensors w0 [S] and embedding.n [S, dims[n], K+1]
// (sample s's row i holds entity i's K factors, then its bias), in
// float32. meta gives the caller's fields (Version, Role, IndexBase,
// Training); SaveBayes sets the others from m. The saved model predicts
// what m predicts after m.Round32(). It returns an error for a bad name,
// a model above the limits Load checks, or an I/O error. Memory: a copy
// of the parameters in float32 (4·S·(1 + Σ dims·(K+1)) bytes).
func SaveBayes(dir, name string, m *bayes.Model, meta Meta) error {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("model: name %q: want a file name without a directory", name)
	}
	if !m.HasPriors() {
		return fmt.Errorf("model %s: the bayes-fm model holds no noise precision and priors (fold-in needs them); not saved", name)
	}
	s := m.NumSamples()
	meta.Format, meta.FormatVersion, meta.Kind = Format, FormatVersion, KindBayesFM
	meta.Order, meta.Dims, meta.Rank, meta.Width = len(m.Dims), append([]int(nil), m.Dims...), m.Rank, m.Rank+1
	meta.Samples, meta.Clamp, meta.Layout = s, []float64{m.Min, m.Max}, LayoutModeMajor
	meta.ClampRule = string(bayes.ClampSamples)
	if m.Clamp == bayes.ClampMean {
		meta.ClampRule = string(bayes.ClampMean)
	}
	meta.Layers, meta.LayerShapes, meta.Channels, meta.Capacity = nil, nil, 0, 0
	if err := checkLimits(&meta); err != nil {
		return fmt.Errorf("model %s: %w", name, err)
	}
	if err := checkBayesMeta(meta); err != nil {
		return fmt.Errorf("model %s: %w", name, err)
	}
	k := m.Rank
	put := func(b []byte, i int, v float64) { binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v))) }
	views := map[string]safetensors.TensorView{}
	w0 := make([]byte, 4*s)
	for j := range s {
		put(w0, j, m.Sample(j).W0)
	}
	var err error
	if views["w0"], err = safetensors.NewTensorView(safetensors.F32, []uint64{uint64(s)}, w0); err != nil {
		return fmt.Errorf("model %s: w0: %w", name, err)
	}
	for n, d := range m.Dims {
		b := make([]byte, 4*s*d*(k+1))
		for j := range s {
			x := m.Sample(j)
			off := j * d * (k + 1)
			for i := range d {
				for f := range k {
					put(b, off+i*(k+1)+f, x.V[n][i*k+f])
				}
				put(b, off+i*(k+1)+k, x.W[n][i])
			}
		}
		t := fmt.Sprintf("embedding.%d", n)
		if views[t], err = safetensors.NewTensorView(safetensors.F32, []uint64{uint64(s), uint64(d), uint64(k + 1)}, b); err != nil {
			return fmt.Errorf("model %s: %s: %w", name, t, err)
		}
	}
	n := len(m.Dims)
	hyper := map[string][]float64{"alpha": make([]float64, 0, s), "prior.w.mean": make([]float64, 0, s*n), "prior.w.precision": make([]float64, 0, s*n),
		"prior.v.mean": make([]float64, 0, s*n*k), "prior.v.precision": make([]float64, 0, s*n*k)}
	for j := range s {
		x := m.Sample(j)
		hyper["alpha"] = append(hyper["alpha"], x.Alpha)
		hyper["prior.w.mean"] = append(hyper["prior.w.mean"], x.MuW...)
		hyper["prior.w.precision"] = append(hyper["prior.w.precision"], x.LamW...)
		for d := range n {
			hyper["prior.v.mean"] = append(hyper["prior.v.mean"], x.MuV[d]...)
			hyper["prior.v.precision"] = append(hyper["prior.v.precision"], x.LamV[d]...)
		}
	}
	for _, t := range bayesLayout(meta)[1+n:] {
		v := hyper[t.Name]
		b := make([]byte, 4*len(v))
		for i, y := range v {
			put(b, i, y)
		}
		shape := make([]uint64, len(t.Shape))
		for i, d := range t.Shape {
			shape[i] = uint64(d)
		}
		if views[t.Name], err = safetensors.NewTensorView(safetensors.F32, shape, b); err != nil {
			return fmt.Errorf("model %s: %s: %w", name, t.Name, err)
		}
	}
	info := stInfo(meta)
	info["samples"] = strconv.Itoa(s)
	return writeModel(dir, name, views, info, meta)
}

// writeModel writes the tensors views (with the safetensors metadata
// info) and then meta as dir/name.safetensors and dir/name.json.
func writeModel(dir, name string, views map[string]safetensors.TensorView, info map[string]string, meta Meta) error {
	mj, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return fmt.Errorf("model %s: metadata: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	base := filepath.Join(dir, name)
	err = tensor.AtomicWrite(base+".safetensors", func(w io.Writer) error {
		return safetensors.SerializeToWriter(views, info, w)
	})
	if err != nil {
		return fmt.Errorf("model %s.safetensors: %w", base, err)
	}
	err = tensor.AtomicWrite(base+".json", func(w io.Writer) error {
		_, err := w.Write(append(mj, '\n'))
		return err
	})
	if err != nil {
		return fmt.Errorf("model %s.json: %w", base, err)
	}
	return nil
}

// LoadBayes reads the bayes-fm model path names (a directory, or
// DIR/NAME with or without .json or .safetensors, as Load takes it). Both
// files are untrusted: the metadata is checked against the limits
// (MaxSamples, MaxParams, …) and itself, the safetensors file's size and
// header against the metadata, and the memory the model needs (12 bytes
// per parameter while it loads) against what this process may allocate,
// before anything is allocated from them. Errors name the file and what
// is wrong; a model of another kind is an error that says to use Load.
func LoadBayes(path string) (*bayes.Model, Meta, error) {
	jp, sp := Paths(path)
	meta, err := ReadMeta(jp)
	if err != nil {
		return nil, meta, err
	}
	if meta.Kind != KindBayesFM {
		return nil, meta, fmt.Errorf("model %s: kind %s, not a %s (load a net with Load, an %s with LoadEnsemble)", jp, meta.Kind, KindBayesFM, KindEnsemble)
	}
	want := bayesLayout(meta)
	total, _ := paramCount(want) // ReadMeta checked it
	if st, err := os.Stat(sp); err == nil && uint64(st.Size()) >= 8+4*uint64(total) {
		part := memlimit.Part{What: "the bayes-fm model", Flags: fmt.Sprintf("dims %s, rank %d, %d samples", short(meta.Dims), meta.Rank, meta.Samples), Bytes: 12 * float64(total)}
		if err := memlimit.Check("the model", []memlimit.Part{part}, memlimit.Limit(0), 0); err != nil {
			return nil, meta, fmt.Errorf("model %s: %w", jp, err)
		}
	}
	flat, err := readTensors(jp, sp, want, total)
	if err != nil {
		return nil, meta, err
	}
	s, k := meta.Samples, meta.Rank
	samples := make([]bayes.Sample, s)
	for j := range s {
		samples[j] = bayes.Sample{W0: float64(flat[j]), W: make([][]float64, meta.Order), V: make([][]float64, meta.Order)}
	}
	off := s
	for n, d := range meta.Dims {
		for j := range s {
			w, v := make([]float64, d), make([]float64, d*k)
			row := flat[off : off+d*(k+1)]
			for i := range d {
				for f := range k {
					v[i*k+f] = float64(row[i*(k+1)+f])
				}
				w[i] = float64(row[i*(k+1)+k])
			}
			samples[j].W[n], samples[j].V[n] = w, v
			off += d * (k + 1)
		}
	}
	at := func(l int) int { return l * s } // the offset of a hyper tensor of l values per sample
	for j := range s {
		x := &samples[j]
		x.Alpha = float64(flat[off+j])
		o := off + at(1)
		x.MuW, x.LamW = f64(flat[o+j*meta.Order:o+(j+1)*meta.Order]), f64(flat[o+at(meta.Order)+j*meta.Order:o+at(meta.Order)+(j+1)*meta.Order])
		o += 2 * at(meta.Order)
		x.MuV, x.LamV = make([][]float64, meta.Order), make([][]float64, meta.Order)
		for d := range meta.Order {
			a := o + (j*meta.Order+d)*k
			b := o + at(meta.Order*k) + (j*meta.Order+d)*k
			x.MuV[d], x.LamV[d] = f64(flat[a:a+k]), f64(flat[b:b+k])
		}
	}
	flat = nil
	m, err := bayes.NewModel(meta.Dims, k, meta.Clamp[0], meta.Clamp[1], samples)
	if err != nil {
		return nil, meta, fmt.Errorf("model %s: %w", sp, err)
	}
	m.Clamp = bayes.ClampSamples
	if meta.ClampRule == string(bayes.ClampMean) {
		m.Clamp = bayes.ClampMean
	}
	return m, meta, nil
}

// f64 returns v in float64.
func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
