package cli

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/internal/outtx"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tensor/table"
)

// Outputs holds the flags of `dainx augment` (and the library's options of
// the same names) that write what a run computes besides the new cells:
// the models, the split, the cell scores and the entity importance.
type Outputs struct {
	ModelOut    string // -model-out: directory for Θ′ (and with ModelOutAll, Θ and Θ_p)
	ModelOutAll bool   // -model-out-all
	// ModelSamples is -model-samples: the posterior samples a saved
	// bayes-fm Θ′ keeps (0: all after burn-in).
	ModelSamples int
	SplitOut     string // -split-out: directory for train.tsv, val.tsv, test.tsv
	ScoresOut    string // -scores-out: one line per training cell
	ImportOut    string // -importance-out: one line per entity
}

// BindOutputs registers the output flags.
func BindOutputs(fs *flag.FlagSet, o *Outputs) {
	fs.StringVar(&o.ModelOut, "model-out", "", "save the retrained model Θ′ in this `directory` (model.safetensors and model.json, readable by numpy and PyTorch without dainx; docs/model-format.md), for `dainx predict`")
	fs.IntVar(&o.ModelSamples, "model-samples", 0, "with -model-out and a bayes-fm Θ′ (-preset accurate, -final-model bayes-fm or auto): the posterior `samples` the saved model keeps, evenly spaced over the chain, and rmse_after is then theirs (0: every sample after burn-in, which rmse_after averages anyway; fewer make a smaller file and cost RMSE: docs/model-format.md)")
	fs.BoolVar(&o.ModelOutAll, "model-out-all", false, "with -model-out, also save Θ (theta.*) and the value predictor (predictor.*, when the method trains one)")
	fs.StringVar(&o.SplitOut, "split-out", "", "write the run's train.tsv, val.tsv and test.tsv (cells and values, in the output's index base) into this `directory`, e.g. to score a saved model on the same test cells")
	fs.StringVar(&o.ScoresOut, "scores-out", "", "write one line per training cell to this `file`: its indices and value, α_z (the importance the sampler used) and the signed TracIn sum S_z; tab-separated with a header line, gzip if it ends in .gz")
	fs.StringVar(&o.ImportOut, "importance-out", "", "write one line per entity to this `file`: mode (1…N), index, importance (each mode sums to 1); tab-separated with a header line, gzip if it ends in .gz")
}

// Keep returns what dain.Config.Keep must ask for to write o (the models
// are handed to ModelSaver's function, set by the caller as Keep.Model).
func (o *Outputs) Keep() dain.Keep {
	return dain.Keep{Split: o.SplitOut != "", Scores: o.ScoresOut != "", Importance: o.ImportOut != "", AllModels: o.ModelOutAll, BayesSamples: o.ModelSamples}
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

// Check reports misuse of the output flags that needs no file system:
// -model-out-all needs -model-out. The paths themselves are checked by
// Begin, before the run's work.
func (o *Outputs) Check() error {
	if o.ModelOutAll && o.ModelOut == "" {
		return fmt.Errorf("%w: -model-out-all needs -model-out DIR", ErrUsage)
	}
	if o.ModelSamples != 0 && o.ModelOut == "" {
		return fmt.Errorf("%w: -model-samples needs -model-out DIR", ErrUsage)
	}
	if o.ModelSamples < 0 || o.ModelSamples > model.MaxSamples {
		return fmt.Errorf("%w: -model-samples %d: want 0…%d (0: every sample after burn-in)", ErrUsage, o.ModelSamples, model.MaxSamples)
	}
	return nil
}

// ModelFile reports whether name is a file that a model directory of
// -model-out holds: model.*, theta.*, predictor.* (.json, .safetensors)
// the Python estimator's python.json and the dictionaries of a run on a
// table (table.DictFile). A new run into a directory
// replaces all of them, so that it never mixes two runs' files.
func ModelFile(name string) bool {
	switch name {
	case "python.json", table.DictFile:
		return true
	}
	for _, role := range []string{"model", "theta", "predictor"} {
		if name == role+".json" || name == role+".safetensors" {
			return true
		}
	}
	return false
}

// splitFile reports whether name is a file of -split-out: train, val or
// test, each .tsv (a tensor's, or a TSV table's), .csv or .parquet (a
// table's).
func splitFile(name string) bool {
	for _, part := range []string{"train", "val", "test"} {
		for _, ext := range []string{".tsv", ".csv", ".parquet"} {
			if name == part+ext {
				return true
			}
		}
	}
	return false
}

// Transaction is the output transaction of one augment run (package
// outtx): every output the flags name, checked before the run and written
// together after it.
type Transaction struct {
	Tx                                 *outtx.Tx
	Output, Report, Scores, Importance *outtx.File
	Split, Model                       *outtx.Dir
	// Names, when the input was a table, are its dictionaries: Finish
	// then writes the outputs by ID (finishTable).
	Names *table.Dicts
}

// Begin checks every output path of a before any work: none may be an
// input (the tensor, the checkpoint directory's files, ins) or another
// output, and each must be writable (outtx). The caller defers Abort on
// the result and ends with Finish. Errors name the path as given.
func (a *Augment) Begin(checkpoint string, ins ...string) (*Transaction, error) {
	t := &Transaction{Tx: outtx.New()}
	if err := t.Tx.Input(a.In.Input); err != nil {
		return nil, err
	}
	for _, in := range ins {
		if err := t.Tx.Input(in); err != nil {
			return nil, err
		}
	}
	if err := t.Tx.InputDir(checkpoint); err != nil {
		return nil, err
	}
	// A file among a directory output's own names is named as such,
	// also when the directory is yet to be made.
	for _, f := range []string{a.Output, a.Out.ScoresOut, a.Out.ImportOut, a.Report} {
		for _, d := range []struct {
			path string
			owns func(string) bool
		}{{a.Out.SplitOut, splitFile}, {a.Out.ModelOut, ModelFile}} {
			if err := outtx.InsideDir(f, d.path, d.owns); err != nil {
				return nil, err
			}
		}
	}
	var err error
	if t.Output, err = t.Tx.File(a.Output); err != nil {
		return nil, err
	}
	if t.Scores, err = t.Tx.File(a.Out.ScoresOut); err != nil {
		return nil, err
	}
	if t.Importance, err = t.Tx.File(a.Out.ImportOut); err != nil {
		return nil, err
	}
	if t.Split, err = t.Tx.Dir(a.Out.SplitOut, splitFile); err != nil {
		return nil, err
	}
	if t.Model, err = t.Tx.Dir(a.Out.ModelOut, ModelFile); err != nil {
		return nil, err
	}
	if t.Report, err = t.Tx.Report(a.Report); err != nil {
		return nil, err
	}
	return t, nil
}

// Abort removes whatever the run staged and did not commit; deferred by
// Begin's caller.
func (t *Transaction) Abort() { t.Tx.Abort() }

// Finish writes the outputs of res (the augmented cells as out says, and
// the split, scores and importance with indices plus base), sets the
// report's Outputs, writes the report last and commits them all. It
// returns the report's JSON (with a final newline) for standard output.
// On any error nothing of the run is left (outtx.Commit).
func (t *Transaction) Finish(res *dain.Result, base int, out tensor.WriteOptions) ([]byte, error) {
	if t.Names != nil {
		if err := t.finishTable(res, out); err != nil {
			return nil, err
		}
		return t.Commit(&res.Report)
	}
	if err := t.writeExtras(res, base); err != nil {
		return nil, err
	}
	if o := t.Output; o != nil {
		if err := o.Write(func(w io.Writer) error { return tensor.Encode(w, o.Path(), res.Aug, out) }); err != nil {
			return nil, err
		}
	}
	return t.Commit(&res.Report)
}

// FinishStaged is Finish for a run whose -output the caller staged itself
// (-dist mpi's parallel write, taken by Output.Adopt): it writes the split,
// scores and importance of res that the transaction names (indices plus
// base), then the report, and commits them all.
func (t *Transaction) FinishStaged(res *dain.Result, base int) ([]byte, error) {
	if err := t.writeExtras(res, base); err != nil {
		return nil, err
	}
	return t.Commit(&res.Report)
}

// Commit sets rep's Outputs, stages rep as the report and commits every
// staged output, the report last. It returns the report's JSON (with a
// final newline) for standard output. Finish and FinishStaged end with it.
func (t *Transaction) Commit(rep *dain.Report) ([]byte, error) {
	rep.Outputs = t.Tx.Paths()
	return commitReport(t.Tx, t.Report, rep)
}

// commitReport stages rep, as indented JSON, as the report file of tx
// and commits every staged output of tx, the report last; it returns the
// JSON (with a final newline).
func commitReport(tx *outtx.Tx, report *outtx.File, rep any) ([]byte, error) {
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the report: %w", err)
	}
	js = append(js, '\n')
	if err := report.Write(func(w io.Writer) error { _, err := w.Write(js); return err }); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return js, nil
}

// writeExtras stages the split, scores and importance of res that the
// transaction names, with indices plus base.
func (t *Transaction) writeExtras(res *dain.Result, base int) error {
	err := t.writeSplit(res, ".tsv", func(w io.Writer, name string, c *tensor.COO) error {
		return tensor.Encode(w, name, c, tensor.WriteOptions{Format: tensor.TSV, IndexBase: base})
	})
	if err != nil {
		return err
	}
	if t.Scores != nil && res.Scores != nil {
		if err := t.Scores.Write(textFill(t.Scores.Path(), func(w *bufio.Writer) error { return WriteScores(w, res.Scores, base) })); err != nil {
			return err
		}
	}
	if t.Importance != nil && res.Importance != nil {
		if err := t.Importance.Write(textFill(t.Importance.Path(), func(w *bufio.Writer) error { return WriteImportance(w, res.Importance, base) })); err != nil {
			return err
		}
	}
	return nil
}

// writeSplit writes the train, val and test cells of res's split (no
// cells for a part it lacks) into the split directory the transaction
// names, if any, as train+ext, val+ext and test+ext, each by encode.
func (t *Transaction) writeSplit(res *dain.Result, ext string, encode func(w io.Writer, name string, c *tensor.COO) error) error {
	if t.Split == nil || res.Split == nil {
		return nil
	}
	dir, err := t.Split.Path()
	if err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		t    *tensor.COO
	}{{"train", res.Split.Train}, {"val", res.Split.Val}, {"test", res.Split.Test}} {
		c := p.t
		if c == nil {
			c = &tensor.COO{Dims: res.Report.Dims}
		}
		name := p.name + ext
		f, err := os.Create(filepath.Join(dir, name))
		if err == nil {
			err = encode(f, name, c)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("cannot write %s: %w", filepath.Join(t.Split.UserPath(), name), outtx.Bare(err))
		}
	}
	return nil
}

// BeginOutput checks output, the one file a command writes, before any
// work (internal/outtx): it may not be one of inputs, and its directory
// must exist and be writable. The caller defers tx.Abort and ends with
// CommitTensor. Errors name the path as given.
func BeginOutput(output string, inputs ...string) (*outtx.Tx, *outtx.File, error) {
	tx := outtx.New()
	for _, in := range inputs {
		tx.Input(in)
	}
	f, err := tx.File(output)
	if err != nil {
		return nil, nil, err
	}
	return tx, f, nil
}

// CommitTensor writes t to f as tensor.WriteFile would (gzip when f's
// name ends in .gz) and commits tx.
func CommitTensor(tx *outtx.Tx, f *outtx.File, t *tensor.COO, opt tensor.WriteOptions) error {
	if err := f.Write(func(w io.Writer) error { return tensor.Encode(w, f.Path(), t, opt) }); err != nil {
		return err
	}
	return tx.Commit()
}

// textFill returns a fill function (outtx.File.Write) that writes text
// through fill, gzip-compressed when path ends in .gz.
func textFill(path string, fill func(w *bufio.Writer) error) func(io.Writer) error {
	return func(w io.Writer) error {
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
	}
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
