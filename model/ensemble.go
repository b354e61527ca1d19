package model

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// KindEnsemble is the kind of a saved stacked ensemble: the final model of
// `-final-model ensemble`, the candidates of -final-model auto (nets and a
// bayes-fm) each saved as a model of its own beside the stack's
// metadata, combined by the stack's weights.
const KindEnsemble = "ensemble"

// MaxMembers is the most members a saved ensemble may have.
const MaxMembers = 16

// Ensemble is a loaded stacked ensemble (LoadEnsemble). It predicts a
// cell as
//
//	ŷ = clamp(Weights[0] + Σ_j Weights[j+1]·ŷ_j, Min, Max)
//
// ŷ_j member j's prediction (a net's in float32, widened by
// tensor.Shortest as the run that fitted the stack widened it; a
// bayes-fm's mean over its samples in float64). Stacking: Wolpert, Neural Networks
// 5(2), 1992; Breiman, Machine Learning 24, 1996.
type Ensemble struct {
	// Kinds are the members' kinds in the order of Weights[1:].
	Kinds []string
	// Nets[j] is member j when it is a net, else nil; Bayes the
	// bayes-fm member (nil when there is none).
	Nets  []*nn.Net
	Bayes *bayes.Model
	// Weights are the intercept, then one weight per member.
	Weights  []float64
	Min, Max float64
}

// MemberName is the file name (without extension) of the member of kind
// kind of the ensemble saved as name: "model.mlp", "model.bayes-fm", ….
func MemberName(name, kind string) string { return name + "." + kind }

// SaveEnsemble writes dir/name.json, the metadata of a stacked ensemble
// whose members the caller has saved as dir/MemberName(name, kind) (Save
// for a net, SaveBayes for bayes-fm), in the order of weights[1:]:
// kinds, weights (the intercept first), the clamp range [lo, hi]. meta
// gives the caller's fields (Version, Role, IndexBase, Training);
// SaveEnsemble sets the others, the dims from the members'. It checks
// that every member's metadata is there, of its kind, over the first
// member's dims and of meta's index base, and writes nothing otherwise. It returns an error for a bad name, kinds and
// weights of mismatched lengths, a kind twice, a weight that is not
// finite, lo > hi, or an I/O error.
func SaveEnsemble(dir, name string, kinds []string, weights []float64, lo, hi float64, meta Meta) error {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("model: name %q: want a file name without a directory", name)
	}
	if len(kinds) == 0 {
		return fmt.Errorf("model %s: an ensemble of no member", name)
	}
	metas := make([]Meta, len(kinds))
	for j, k := range kinds {
		mp := filepath.Join(dir, MemberName(name, k)) + ".json"
		m, err := ReadMeta(mp)
		if err != nil {
			return err
		}
		if m.Kind != k || !slices.Equal(m.Dims, metas[0].Dims) && j > 0 || m.IndexBase != meta.IndexBase {
			return fmt.Errorf("model %s: member %s is a %s over dims %v (index base %d), want a %s over the first member's dims (index base %d)", name, mp, m.Kind, m.Dims, m.IndexBase, k, meta.IndexBase)
		}
		metas[j] = m
	}
	meta.Dims = slices.Clone(metas[0].Dims)
	meta.Format, meta.FormatVersion, meta.Kind = Format, FormatVersion, KindEnsemble
	meta.Order, meta.Members, meta.Weights, meta.Clamp = len(meta.Dims), slices.Clone(kinds), slices.Clone(weights), []float64{lo, hi}
	meta.Width, meta.Layers, meta.LayerShapes, meta.Layout, meta.Rank, meta.Channels, meta.Capacity, meta.Samples, meta.ClampRule = 0, nil, nil, "", 0, 0, 0, 0, ""
	if err := checkLimits(&meta); err != nil {
		return fmt.Errorf("model %s: %w", name, err)
	}
	if err := checkEnsembleMeta(meta); err != nil {
		return fmt.Errorf("model %s: %w", name, err)
	}
	return writeMeta(filepath.Join(dir, name+".json"), meta)
}

// writeMeta writes meta as the JSON file path, atomically.
func writeMeta(path string, meta Meta) error {
	mj, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return fmt.Errorf("model %s: metadata: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	err = tensor.AtomicWrite(path, func(w io.Writer) error {
		_, err := w.Write(append(mj, '\n'))
		return err
	})
	if err != nil {
		return fmt.Errorf("model %s: %w", path, err)
	}
	return nil
}

// checkEnsembleMeta checks an ensemble's metadata fields (ReadMeta has
// checked the format, the limits, order, dims and index_base): members
// (1…MaxMembers known kinds, each once), weights (one more than the
// members, finite), clamp (finite lo ≤ hi), and none of a single model's
// fields.
func checkEnsembleMeta(m Meta) error {
	switch {
	case len(m.Members) == 0 || len(m.Members) > MaxMembers:
		return fmt.Errorf("members has %d kinds, want 1…%d", len(m.Members), MaxMembers)
	case len(m.Weights) != len(m.Members)+1:
		return fmt.Errorf("weights has %d values for %d members, want %d (the intercept, then one per member)", len(m.Weights), len(m.Members), len(m.Members)+1)
	case len(m.Clamp) != 2:
		return fmt.Errorf("clamp has %d values, want 2 (the smallest and largest training value)", len(m.Clamp))
	case !(m.Clamp[0] <= m.Clamp[1]) || math.IsInf(m.Clamp[0], 0) || math.IsInf(m.Clamp[1], 0):
		return fmt.Errorf("clamp [%v, %v]: want finite lo ≤ hi", m.Clamp[0], m.Clamp[1])
	case m.Width != 0 || len(m.Layers) > 0 || len(m.LayerShapes) > 0 || m.Rank != 0 || m.Channels != 0 || m.Samples != 0 || m.ClampRule != "":
		return fmt.Errorf("an %s holds no layers, widths, ranks or samples of its own (its members do)", KindEnsemble)
	}
	for j, k := range m.Members {
		if !slices.Contains(nn.Kinds, k) && k != KindBayesFM {
			return fmt.Errorf("members[%d] = %s, want mlp, costco, fm, hybrid or %s", j, echo(k), KindBayesFM)
		}
		if slices.Index(m.Members, k) != j {
			return fmt.Errorf("members name %s twice", k)
		}
	}
	for j, w := range m.Weights {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return fmt.Errorf("weights[%d] = %v: want a finite value", j, w)
		}
	}
	return nil
}

// LoadEnsemble reads the ensemble path names (a directory holding
// model.json, or DIR/NAME with or without .json; Paths) and its members
// (DIR/NAME.KIND, each as Load or LoadBayes reads it; the nets onto be for
// batches of up to capacity cells, 0 for each net's own). Every member
// must be of its kind, over the ensemble's dims and index base. Errors
// name the file and what is wrong; nothing stays allocated after one.
func LoadEnsemble(path string, be compute.Backend, capacity int) (*Ensemble, Meta, error) {
	jp, _ := Paths(path)
	meta, err := ReadMeta(jp)
	if err != nil {
		return nil, meta, err
	}
	if meta.Kind != KindEnsemble {
		return nil, meta, fmt.Errorf("model %s: kind %s, not an %s", jp, meta.Kind, KindEnsemble)
	}
	base := strings.TrimSuffix(jp, ".json")
	e := &Ensemble{Kinds: meta.Members, Nets: make([]*nn.Net, len(meta.Members)), Weights: meta.Weights, Min: meta.Clamp[0], Max: meta.Clamp[1]}
	for j, k := range meta.Members {
		mp := base + "." + k
		var m Meta
		if k == KindBayesFM {
			e.Bayes, m, err = LoadBayes(mp)
		} else {
			e.Nets[j], m, err = Load(mp, be, capacity)
		}
		if err == nil && (m.Kind != k || !slices.Equal(m.Dims, meta.Dims) || m.IndexBase != meta.IndexBase) {
			err = fmt.Errorf("model %s: member %s.json is a %s over dims %v (index base %d), want a %s over %v (%d)", jp, mp, m.Kind, m.Dims, m.IndexBase, k, meta.Dims, meta.IndexBase)
		}
		if err != nil {
			e.Free()
			if _, statErr := os.Stat(mp + ".json"); statErr != nil {
				return nil, meta, fmt.Errorf("model %s: member %s: %w", jp, k, err)
			}
			return nil, meta, err
		}
	}
	return e, meta, nil
}

// Free releases the member nets.
func (e *Ensemble) Free() {
	for _, n := range e.Nets {
		if n != nil {
			n.Free()
		}
	}
}

// Predict returns the ensemble's prediction of every cell of cells
// (indices within the model's dims; values ignored). It returns a
// member's error.
func (e *Ensemble) Predict(cells *tensor.COO) ([]float64, error) {
	out := make([]float64, cells.NNZ())
	for c := range out {
		out[c] = e.Weights[0]
	}
	for j, k := range e.Kinds {
		var p []float64
		if k == KindBayesFM {
			var err error
			if p, err = e.Bayes.Predict(cells); err != nil {
				return nil, err
			}
		} else {
			set := e.Nets[j].NewSet(cells.Idx, cells.Val)
			p32, err := e.Nets[j].Predict(set)
			set.Free()
			if err != nil {
				return nil, err
			}
			p = make([]float64, len(p32))
			for c, v := range p32 {
				p[c] = tensor.Shortest(v) // as the run widened it
			}
		}
		for c := range out {
			out[c] += e.Weights[j+1] * p[c]
		}
	}
	for c := range out {
		out[c] = min(max(out[c], e.Min), e.Max)
	}
	return out, nil
}
