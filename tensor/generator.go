package tensor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// GeneratorFormat names a generator file (Generator's JSON) in its
// "format" field.
const GeneratorFormat = "dainx synth generator"

// GeneratorModel is the only Generator.Model: the CP model of Synthetic,
// x = Σ_r Πₙ Aₙ[iₙ, r] + σ·ε with Aₙ[i, r] ~ U(0, 1) and ε ~ N(0, 1).
const GeneratorModel = "cp-uniform"

// maxGeneratorFile is the largest generator file ReadGenerator reads: a
// generator is a handful of numbers.
const maxGeneratorFile = 1 << 20

// Generator describes a tensor that Synthetic made: its arguments. Its
// JSON (dainx synth -generator-out) is what dainx augment -oracle reads to
// value new cells with the generator's own values (Model, Oracle).
type Generator struct {
	Format  string  `json:"format"`  // GeneratorFormat
	Version int     `json:"version"` // 1
	Model   string  `json:"model"`   // GeneratorModel
	About   string  `json:"about,omitempty"`
	Dims    []int   `json:"dims"`
	NNZ     int     `json:"nnz"`
	Rank    int     `json:"rank"`
	Noise   float64 `json:"noise"` // σ, the standard deviation of the noise added to each value
	Seed    uint64  `json:"seed"`
}

// NewGenerator returns the generator of Synthetic(dims, nnz, rank, noise,
// seed), or Synthetic's error for arguments it refuses.
func NewGenerator(dims []int, nnz, rank int, noise float64, seed uint64) (*Generator, error) {
	if err := checkSynthetic(dims, nnz, rank, noise); err != nil {
		return nil, err
	}
	return &Generator{
		Format: GeneratorFormat, Version: 1, Model: GeneratorModel,
		About: "x(i1,…,iN) = Σ_r Π_n A_n[i_n, r] + noise·ε, A_n[i, r] ~ U(0, 1), ε ~ N(0, 1); dainx synth with these arguments (tensor.Synthetic: a PCG stream of the seed draws the factors, mode by mode, then the cells)",
		Dims:  slices.Clone(dims), NNZ: nnz, Rank: rank, Noise: noise, Seed: seed,
	}, nil
}

// Check returns an error if g is not a generator this dainx knows: its
// format, version or model, or arguments Synthetic refuses.
func (g *Generator) Check() error {
	switch {
	case g.Format != GeneratorFormat:
		return fmt.Errorf("format %q: want %q (the file dainx synth -generator-out writes)", g.Format, GeneratorFormat)
	case g.Version != 1:
		return fmt.Errorf("version %d: this dainx reads version 1", g.Version)
	case g.Model != GeneratorModel:
		return fmt.Errorf("model %q: want %q", g.Model, GeneratorModel)
	}
	return checkSynthetic(g.Dims, g.NNZ, g.Rank, g.Noise)
}

// CP returns g's factor matrices, drawn as Synthetic draws them: CP.Value
// of a cell is the noise-free value Synthetic gave it.
func (g *Generator) CP() (*CP, error) {
	if err := g.Check(); err != nil {
		return nil, err
	}
	return drawCP(synthRNG(g.Seed), g.Dims, g.Rank), nil
}

// Tensor returns the tensor g describes (Synthetic with g's arguments).
func (g *Generator) Tensor() (*COO, error) {
	if err := g.Check(); err != nil {
		return nil, err
	}
	return Synthetic(g.Dims, g.NNZ, g.Rank, g.Noise, g.Seed)
}

// String describes g in one line ("none" for nil), as checkpoints and
// error messages name it.
func (g *Generator) String() string {
	if g == nil {
		return "none"
	}
	return fmt.Sprintf("%s dims %v nnz %d rank %d noise %v seed %d", g.Model, g.Dims, g.NNZ, g.Rank, g.Noise, g.Seed)
}

// WriteJSON writes g as indented JSON.
func (g *Generator) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// DecodeGenerator reads a generator from r, an untrusted file named name
// in errors: at most 1 MiB of one JSON object with Generator's fields and
// no others, which Check accepts.
func DecodeGenerator(r io.Reader, name string) (*Generator, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxGeneratorFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > maxGeneratorFile {
		return nil, fmt.Errorf("%s: more than %d bytes: not a generator file (dainx synth -generator-out writes a few hundred)", name, maxGeneratorFile)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var g Generator
	if err := d.Decode(&g); err != nil {
		return nil, fmt.Errorf("%s: not a generator file: %w", name, err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: text after the generator's JSON object", name)
	}
	if err := g.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &g, nil
}

// ReadGenerator reads the generator file at path (DecodeGenerator).
func ReadGenerator(path string) (*Generator, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return DecodeGenerator(f, path)
}
