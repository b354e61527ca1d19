package cli

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/tensor"
)

// Outputs holds the flags of `dainx augment` (and the library's options of
// the same names) that write what a run computes besides the new cells:
// the models, the split, the cell scores and the entity importance.
type Outputs struct {
	ModelOut    string // -model-out: directory for Θ′ (and with ModelOutAll, Θ and Θ_p)
	ModelOutAll bool   // -model-out-all
	SplitOut    string // -split-out: directory for train.tsv, val.tsv, test.tsv
	ScoresOut   string // -scores-out: one line per training cell
	ImportOut   string // -importance-out: one line per entity
}

// BindOutputs registers the output flags.
func BindOutputs(fs *flag.FlagSet, o *Outputs) {
	fs.StringVar(&o.ModelOut, "model-out", "", "save the retrained model Θ′ in this `directory` (model.safetensors and model.json, readable by numpy and PyTorch without dainx; docs/model-format.md), for `dainx predict`")
	fs.BoolVar(&o.ModelOutAll, "model-out-all", false, "with -model-out, also save Θ (theta.*) and the value predictor (predictor.*, when the method trains one)")
	fs.StringVar(&o.SplitOut, "split-out", "", "write the run's train.tsv, val.tsv and test.tsv (cells and values, in the output's index base) into this `directory`, e.g. to score a saved model on the same test cells")
	fs.StringVar(&o.ScoresOut, "scores-out", "", "write one line per training cell to this `file`: its indices and value, α_z (the importance the sampler used) and the signed TracIn sum S_z; tab-separated with a header line, gzip if it ends in .gz")
	fs.StringVar(&o.ImportOut, "importance-out", "", "write one line per entity to this `file`: mode (1…N), index, importance (each mode sums to 1); tab-separated with a header line, gzip if it ends in .gz")
}

// Keep returns what dain.Config.Keep must ask for to write o (the models
// are handed to ModelSaver's function, set by the caller as Keep.Model).
func (o *Outputs) Keep() dain.Keep {
	return dain.Keep{Split: o.SplitOut != "", Scores: o.ScoresOut != "", Importance: o.ImportOut != "", AllModels: o.ModelOutAll}
}

// Base is the index base of the outputs of a run on an input of format f
// read with -index-base b: b when given (≥ 0), else the format's own (TNS
// 1, TSV and BIN 0).
func Base(b int, f tensor.Format) int {
	switch {
	case b >= 0:
		return b
	case f == tensor.TNS:
		return 1
	}
	return 0
}

// Check reports output paths that cannot be written before a run starts:
// a file's directory must exist; -split-out and -model-out may be new
// directories whose parent exists; -model-out-all needs -model-out.
func (o *Outputs) Check() error {
	if o.ModelOutAll && o.ModelOut == "" {
		return fmt.Errorf("%w: -model-out-all needs -model-out DIR", ErrUsage)
	}
	for _, p := range []string{o.ScoresOut, o.ImportOut} {
		if p == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(p)); err != nil || !st.IsDir() {
			return fmt.Errorf("cannot write %s: directory %s does not exist", p, filepath.Dir(p))
		}
	}
	for _, d := range []string{o.SplitOut, o.ModelOut} {
		if d == "" {
			continue
		}
		if st, err := os.Stat(d); err == nil {
			if !st.IsDir() {
				return fmt.Errorf("cannot write into %s: it is not a directory", d)
			}
			continue
		}
		if st, err := os.Stat(filepath.Dir(filepath.Clean(d))); err != nil || !st.IsDir() {
			return fmt.Errorf("cannot make directory %s: %s does not exist", d, filepath.Dir(filepath.Clean(d)))
		}
	}
	return nil
}

// Write writes the split, scores and importance of res that o names, with
// indices plus base (the input's index base). Each file is written to a
// temporary file and renamed, never half-written.
func (o *Outputs) Write(res *dain.Result, base int) error {
	if o.SplitOut != "" && res.Split != nil {
		if err := os.MkdirAll(o.SplitOut, 0o755); err != nil {
			return err
		}
		for _, p := range []struct {
			name string
			t    *tensor.COO
		}{{"train.tsv", res.Split.Train}, {"val.tsv", res.Split.Val}, {"test.tsv", res.Split.Test}} {
			t := p.t
			if t == nil {
				t = &tensor.COO{Dims: res.Report.Dims}
			}
			if err := tensor.WriteFile(filepath.Join(o.SplitOut, p.name), t, tensor.WriteOptions{Format: tensor.TSV, IndexBase: base}); err != nil {
				return err
			}
		}
	}
	if o.ScoresOut != "" && res.Scores != nil {
		if err := writeText(o.ScoresOut, func(w *bufio.Writer) error { return WriteScores(w, res.Scores, base) }); err != nil {
			return err
		}
	}
	if o.ImportOut != "" && res.Importance != nil {
		if err := writeText(o.ImportOut, func(w *bufio.Writer) error { return WriteImportance(w, res.Importance, base) }); err != nil {
			return err
		}
	}
	return nil
}

// writeText writes path atomically through fill, gzip-compressed when the
// name ends in .gz.
func writeText(path string, fill func(w *bufio.Writer) error) error {
	return tensor.AtomicWrite(path, func(w io.Writer) error {
		var z *gzip.Writer
		if strings.HasSuffix(strings.ToLower(path), ".gz") {
			z = gzip.NewWriter(w)
			w = z
		}
		b := bufio.NewWriterSize(w, 1<<16)
		if err := fill(b); err != nil {
			return err
		}
		if err := b.Flush(); err != nil {
			return err
		}
		if z != nil {
			return z.Close()
		}
		return nil
	})
}

// WriteScores writes s as tab-separated text: a header line (i1 … iN,
// value, alpha, score), then one line per training cell, in the order of
// the training set: its indices plus base, its value, α_z and S_z (float32
// in the shortest form that reads back exactly).
func WriteScores(w *bufio.Writer, s *dain.CellScores, base int) error {
	order := len(s.Cells.Dims)
	for n := 1; n <= order; n++ {
		fmt.Fprintf(w, "i%d\t", n)
	}
	w.WriteString("value\talpha\tscore\n")
	var buf []byte
	for z := range s.Alpha {
		buf = buf[:0]
		for _, i := range s.Cells.Idx[z*order : (z+1)*order] {
			buf = strconv.AppendInt(buf, int64(i)+int64(base), 10)
			buf = append(buf, '\t')
		}
		buf = strconv.AppendFloat(buf, s.Cells.Val[z], 'g', -1, 64)
		buf = append(buf, '\t')
		buf = strconv.AppendFloat(buf, float64(s.Alpha[z]), 'g', -1, 32)
		buf = append(buf, '\t')
		buf = strconv.AppendFloat(buf, float64(s.S[z]), 'g', -1, 32)
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// WriteImportance writes imp as tab-separated text: a header line (mode,
// index, importance), then one line per entity of every mode: the mode
// (1…N), the index plus base, and the importance (float64, shortest exact
// form; each mode's sum to 1).
func WriteImportance(w *bufio.Writer, imp [][]float64, base int) error {
	w.WriteString("mode\tindex\timportance\n")
	var buf []byte
	for n, m := range imp {
		for i, x := range m {
			buf = strconv.AppendInt(buf[:0], int64(n+1), 10)
			buf = append(buf, '\t')
			buf = strconv.AppendInt(buf, int64(i+base), 10)
			buf = append(buf, '\t')
			buf = strconv.AppendFloat(buf, x, 'g', -1, 64)
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
	}
	return nil
}
