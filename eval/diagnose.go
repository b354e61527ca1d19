package eval

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/internal/outtx"
	"github.com/dainx/dainx/tensor"
)

// BandEdges are the lower edges of the frequency bands of Diagnose: an
// entity's number of training cells falls in band b when BandEdges[b] ≤
// count < BandEdges[b+1] (the last band is open).
var BandEdges = []int{0, 1, 4, 16, 64, 256, 1024}

// BandNames returns the bands' labels ("0", "1–3", …, "1024+").
func BandNames() []string {
	out := make([]string, len(BandEdges))
	for b, lo := range BandEdges {
		switch {
		case b == len(BandEdges)-1:
			out[b] = fmt.Sprintf("%d+", lo)
		case BandEdges[b+1]-1 == lo:
			out[b] = fmt.Sprint(lo)
		default:
			out[b] = fmt.Sprintf("%d–%d", lo, BandEdges[b+1]-1)
		}
	}
	return out
}

func band(count int) int {
	b := 0
	for b+1 < len(BandEdges) && count >= BandEdges[b+1] {
		b++
	}
	return b
}

// Profile is one grouping of cells by frequency: Mode is a mode's name
// ("mode 1", …) when each cell is banded by its entity of that mode, or
// "sparsest" when by its least frequent entity over all modes.
type Profile struct {
	Mode string `json:"mode"`
	// Test is the share of test cells in each band.
	Test []float64 `json:"test_share"`
	// NewCells is, per method, the share of its new cells in each band.
	NewCells map[string][]float64 `json:"new_cell_share"`
	// Predictor is, per embedding model kind (costco, mlp), its test RMSE
	// on the test cells of each band: the error of the value predictor on
	// cells of that frequency.
	Predictor map[string][]float64 `json:"predictor_test_rmse"`
	// RMSE is, per method (and "none" for no augmentation), the test RMSE
	// of its retrained model on the test cells of each band.
	RMSE map[string][]float64 `json:"test_rmse"`
}

// Diagnosis is Diagnose's result for one split.
type Diagnosis struct {
	Seed    uint64             `json:"seed"`
	Ratio   float64            `json:"ratio"`
	Bands   []string           `json:"bands"`
	Methods []string           `json:"methods"`
	RMSE    map[string]float64 `json:"test_rmse"` // per method, all test cells
	// Pearson is, per method and mode, the correlation over the mode's
	// entities between their number of new cells and of training cells: 1
	// when a method draws entities in proportion to their frequency.
	Pearson  map[string][]float64 `json:"pearson_new_vs_train_count"`
	MeanNew  map[string]float64   `json:"new_value_mean"` // per method, mean value of its new cells
	MeanTest float64              `json:"test_value_mean"`
	Profiles []Profile            `json:"profiles"`
}

// Diagnose explains where a split's new cells go and where the test error
// changes (issue 14): on the split of s.Base.Seed, for every method of s at
// its largest ratio, it makes the new cells and retrains, and groups cells
// by how many training cells their entities have (BandEdges), per mode and
// by each cell's sparsest entity: the share of each method's new cells and
// of the test cells in each band, the value predictors' (CoSTCo's and Θ's)
// test RMSE per band, and each retrained model's test RMSE per band (with
// no augmentation as "none").
func Diagnose(ctx context.Context, x *tensor.COO, s Spec, be compute.Backend) (*Diagnosis, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	ratio := 0.0
	for _, q := range s.Ratios {
		ratio = math.Max(ratio, q)
	}
	base := s.Base
	base.Progress = nil
	cfgs := make([]dain.Config, len(s.Methods))
	for i, m := range s.Methods {
		v, _ := dain.VariantNamed(m)
		cfgs[i] = base
		v.Set(&cfgs[i])
	}
	e, err := dain.NewExperiment(x, base, be, cfgs...)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	order := x.Order()
	count := make([][]int, order)
	for n := range count {
		count[n] = make([]int, x.Dims[n])
	}
	for k, i := range e.Train.Idx {
		count[k%order][i]++
	}
	nb := len(BandEdges)
	// bandsOf returns each cell's band per grouping (modes, then sparsest).
	bandsOf := func(idx []int32) [][]int {
		cells := len(idx) / order
		out := make([][]int, order+1)
		for g := range out {
			out[g] = make([]int, cells)
		}
		for c := 0; c < cells; c++ {
			low := math.MaxInt
			for n := 0; n < order; n++ {
				k := count[n][idx[c*order+n]]
				out[n][c] = band(k)
				low = min(low, k)
			}
			out[order][c] = band(low)
		}
		return out
	}
	share := func(bands []int) []float64 {
		out := make([]float64, nb)
		for _, b := range bands {
			out[b]++
		}
		for b := range out {
			out[b] /= math.Max(1, float64(len(bands)))
		}
		return out
	}
	testBands := bandsOf(e.Test.Idx)
	rmseBy := func(pred []float64, bands []int) []float64 {
		sum, n := make([]float64, nb), make([]float64, nb)
		for c, p := range pred {
			d := p - e.Test.Val[c]
			sum[bands[c]] += d * d
			n[bands[c]]++
		}
		for b := range sum {
			sum[b] = math.Sqrt(sum[b] / n[b]) // NaN for an empty band
		}
		return sum
	}
	d := &Diagnosis{Seed: base.Seed, Ratio: ratio, Bands: BandNames(), Methods: s.Methods,
		RMSE: map[string]float64{}, MeanNew: map[string]float64{}, Pearson: map[string][]float64{}}
	for _, v := range e.Test.Val {
		d.MeanTest += v / float64(e.Test.NNZ())
	}
	d.Profiles = make([]Profile, order+1)
	for g := range d.Profiles {
		name := fmt.Sprintf("mode %d", g+1)
		if g == order {
			name = "sparsest"
		}
		d.Profiles[g] = Profile{Mode: name, Test: share(testBands[g]), NewCells: map[string][]float64{},
			Predictor: map[string][]float64{}, RMSE: map[string][]float64{}}
	}
	for _, kind := range dain.Names(dain.Models) {
		p, err := e.TestPredictions(ctx, kind)
		if err != nil {
			return nil, err
		}
		for g := range d.Profiles {
			d.Profiles[g].Predictor[kind] = rmseBy(p, testBands[g])
		}
	}
	var pred []float64
	e.OnRetrained(func(p []float64) { pred = p })
	record := func(name string) {
		for g := range d.Profiles {
			d.Profiles[g].RMSE[name] = rmseBy(pred, testBands[g])
		}
		var sum float64
		for c, p := range pred {
			sum += (p - e.Test.Val[c]) * (p - e.Test.Val[c])
		}
		d.RMSE[name] = math.Sqrt(sum / float64(len(pred)))
	}
	if s.Progress != nil {
		fmt.Fprintf(s.Progress, "dainx eval -diagnose: seed %d, ratio %g, %d methods\n", base.Seed, ratio, len(s.Methods))
	}
	if _, _, _, err := e.Downstream(ctx, &tensor.COO{Dims: x.Dims}, ""); err != nil {
		return nil, err
	}
	record("none")
	n := int(ratio * float64(e.Train.NNZ()))
	for i, m := range s.Methods {
		aug, _, err := e.Augment(ctx, cfgs[i], n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		if aug.NNZ() > 0 {
			ab := bandsOf(aug.Idx)
			for g := range d.Profiles {
				d.Profiles[g].NewCells[m] = share(ab[g])
			}
			var mean float64
			for _, v := range aug.Val {
				mean += v / float64(aug.NNZ())
			}
			d.MeanNew[m] = mean
			for mode := 0; mode < order; mode++ {
				drawn, train := make([]float64, x.Dims[mode]), make([]float64, x.Dims[mode])
				for k := mode; k < len(aug.Idx); k += order {
					drawn[aug.Idx[k]]++
				}
				for i, c := range count[mode] {
					train[i] = float64(c)
				}
				d.Pearson[m] = append(d.Pearson[m], stat.Correlation(drawn, train, nil))
			}
		}
		if _, _, _, err := e.Retrain(ctx, cfgs[i], aug, n, ""); err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		record(m)
		if s.Progress != nil {
			fmt.Fprintf(s.Progress, "  %s: test RMSE %.4f\n", m, d.RMSE[m])
		}
	}
	return d, nil
}

// WriteDir writes diagnose.json and diagnose.md into dir, headed by p.
func (d *Diagnosis) WriteDir(dir string, p Provenance) error {
	p.Version = ProvenanceVersion
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tx := outtx.New()
	defer tx.Abort()
	js, err := tx.File(filepath.Join(dir, "diagnose.json"))
	if err == nil {
		err = js.Write(func(w io.Writer) error {
			return writeJSON(w, map[string]any{"config": p, "diagnosis": nanToNull(d)})
		})
	}
	if err != nil {
		return err
	}
	md, err := tx.File(filepath.Join(dir, "diagnose.md"))
	if err == nil {
		err = md.Write(d.writeMarkdown)
	}
	if err != nil {
		return err
	}
	return tx.Commit()
}

// nanToNull returns d with NaN (an empty band) written as null.
func nanToNull(d *Diagnosis) any {
	fix := func(m map[string][]float64) map[string][]*float64 {
		out := map[string][]*float64{}
		for k, v := range m {
			for _, x := range v {
				if math.IsNaN(x) {
					out[k] = append(out[k], nil)
				} else {
					x := x
					out[k] = append(out[k], &x)
				}
			}
		}
		return out
	}
	type profile struct {
		Mode      string                `json:"mode"`
		Test      []float64             `json:"test_share"`
		NewCells  map[string][]float64  `json:"new_cell_share"`
		Predictor map[string][]*float64 `json:"predictor_test_rmse"`
		RMSE      map[string][]*float64 `json:"test_rmse"`
	}
	var ps []profile
	for _, p := range d.Profiles {
		ps = append(ps, profile{p.Mode, p.Test, p.NewCells, fix(p.Predictor), fix(p.RMSE)})
	}
	return map[string]any{"seed": d.Seed, "ratio": d.Ratio, "bands": d.Bands, "methods": d.Methods,
		"test_rmse": d.RMSE, "new_value_mean": d.MeanNew, "pearson_new_vs_train_count": d.Pearson, "test_value_mean": d.MeanTest, "profiles": ps}
}

func (d *Diagnosis) writeMarkdown(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# dainx eval -diagnose\n\nSplit of seed %d, ratio %g. Cells are grouped by how many training cells their entity of a mode has (per mode), or their least frequent entity has (sparsest). Test RMSE per band is over the test cells of that band; – marks an empty band.\n\n", d.Seed, d.Ratio)
	fmt.Fprintf(&b, "| method | test RMSE | mean value of new cells | Pearson r, new vs training cells per entity, by mode |\n|---|---:|---:|---|\n| none | %.4f | (test cells: %.4f) | |\n", d.RMSE["none"], d.MeanTest)
	for _, m := range d.Methods {
		mv, r := "–", ""
		if v, ok := d.MeanNew[m]; ok {
			mv = fmt.Sprintf("%.4f", v)
		}
		for i, x := range d.Pearson[m] {
			if i > 0 {
				r += ", "
			}
			r += fmt.Sprintf("%.3f", x)
		}
		fmt.Fprintf(&b, "| %s | %.4f | %s | %s |\n", m, d.RMSE[m], mv, r)
	}
	head := func(title string) {
		fmt.Fprintf(&b, "\n#### %s\n\n| | %s |\n|---|%s\n", title, strings.Join(d.Bands, " | "), strings.Repeat("---:|", len(d.Bands)))
	}
	row := func(name string, v []float64, format string) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, x := range v {
			if math.IsNaN(x) {
				b.WriteString(" – |")
			} else {
				fmt.Fprintf(&b, " "+format+" |", x)
			}
		}
		b.WriteString("\n")
	}
	for _, p := range d.Profiles {
		fmt.Fprintf(&b, "\n### %s\n", p.Mode)
		head("Share of cells per band (training-cell count of the entity)")
		row("test cells", p.Test, "%.3f")
		for _, m := range d.Methods {
			if v, ok := p.NewCells[m]; ok {
				row(m, v, "%.3f")
			}
		}
		head("Value predictors' test RMSE per band")
		for _, k := range dain.Names(dain.Models) {
			row(k, p.Predictor[k], "%.4f")
		}
		head("Retrained model's test RMSE per band")
		row("none", p.RMSE["none"], "%.4f")
		for _, m := range d.Methods {
			row(m, p.RMSE[m], "%.4f")
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
