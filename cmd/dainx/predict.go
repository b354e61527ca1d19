package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/internal/outtx"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tensor/table"
)

// predictReport is the JSON report of dainx predict.
type predictReport struct {
	Model   string   `json:"model"`
	Cells   string   `json:"cells"`
	N       int      `json:"n_cells"`
	RMSE    *float64 `json:"rmse,omitempty"` // of the predictions against the file's values
	Kind    string   `json:"kind"`
	Role    string   `json:"role"`
	Version string   `json:"version"`
	Trained string   `json:"trained_by"` // the dainx version that saved the model
	Backend string   `json:"backend"`
	Seconds float64  `json:"seconds"`
	Outputs []string `json:"outputs,omitempty"` // the files written, as given
}

func predict(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dainx predict", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("model", "", "saved model: a -model-out `directory` (its model.json, Θ′), or a NAME.json / NAME.safetensors of one")
	cells := fs.String("cells", "", "the cells to predict: a `file` of N indices per line (tab- or space-separated, # comments, gzip detected), optionally followed by a value, which gives the RMSE; .tns files read the same way (their 1-based indices with -index-base 1, or the model's base); SPLATT .bin by name or -format bin; with -index, a table of IDs")
	input := fs.String("input", "", "the cells to predict as a table of IDs (CSV, TSV or Parquet, with -index): the same as -cells `file`")
	index := fs.String("index", "", "read the cells as a table (CSV or TSV with a header, Parquet) whose `columns` COL[,COL…] hold the IDs of the model's modes in order, as augment's -index named them (a time column's bin, COL:BIN, may be left out: the model's); needs a model trained on a table (its dictionaries.json). An ID or time the model does not know is an error naming the file, line and column")
	value := fs.String("value", "", "with -index, the table's value `column`: the RMSE of the predictions against it")
	output := fs.String("output", "", "write the cells and their predicted values to this `file` (tab-separated, the cells' index base; gzip if it ends in .gz), written atomically; default standard output. With -index, a table of the IDs and the predicted value (named as the model's value column), in the input's format or the one the extension names (.csv, .tsv, .parquet); standard output gets CSV for Parquet input")
	report := fs.String("report", "", "write the JSON report (number of cells, RMSE against the file's values, versions) to this `file`; it always goes to standard error")
	format := fs.String("format", "", "`format` of -cells: tsv, tns or bin; empty: by extension")
	base := fs.Int("index-base", -1, "index `base` of -cells and -output; -1: the model's (the base of the tensor it was trained on)")
	backend := fs.String("backend", "cpu", "compute `backend`: cpu, cuda or auto")
	evalBatch := fs.Int("batch", 0, "cells per forward pass; 0: the saved model's (the batch its run evaluated with, so that the RMSE is summed as the run did)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: dainx predict -model DIR -cells FILE [flags]

Predicts the value of each cell of FILE with a model saved by dainx augment
-model-out (on the CPU, bit for bit the values the model gave during the
run). A line with the wrong number of fields or an index outside the
model's modes is an error naming the file and line.

A model trained on a table (augment -index) takes cells by ID:

  dainx predict -model m -input wanted.csv -index userId,movieId,timestamp

reads wanted.csv's columns as the model's modes (a time column binned as
in training) and writes the IDs with the predicted values.

Flags:
`)
		fs.PrintDefaults()
	}
	if code, done := parse(fs, args, stderr); done {
		return code
	}
	if *input != "" && *cells != "" {
		return exitFor("predict", fmt.Errorf("%w: give the cells once, as -cells or -input", errUsage), nil, stderr)
	}
	if *input != "" {
		*cells = *input
	}
	if *path == "" || *cells == "" {
		return exitFor("predict", fmt.Errorf("%w: -model and -cells are required (the cells as -cells FILE, or as -input TABLE with -index)", errUsage), nil, stderr)
	}
	if *value != "" && *index == "" {
		return exitFor("predict", fmt.Errorf("%w: -value names a column of a table: give -index too", errUsage), nil, stderr)
	}
	if *index != "" {
		return exitFor("predict", runPredictTable(*path, *cells, *index, *value, *output, *report, *format, *base, *backend, *evalBatch, stdout, stderr), nil, stderr)
	}
	in := inputFlags{Input: *cells, Format: *format}
	if err := cli.CheckTensorInput(&in); err != nil {
		return exitFor("predict", err, nil, stderr)
	}
	return exitFor("predict", runPredict(*path, *cells, *output, *report, *format, *base, *backend, *evalBatch, stdout, stderr), nil, stderr)
}

func runPredict(path, cells, output, report, format string, base int, backend string, evalBatch int, stdout, stderr io.Writer) error {
	t0 := time.Now()
	if err := checkEvalBatch(evalBatch); err != nil {
		return err
	}
	if base < -1 {
		return fmt.Errorf("%w: -index-base %d: want ≥ 0, or -1 for the model's", errUsage, base)
	}
	return withPredictModel(path, cells, output, report, backend, evalBatch, stderr, func(p *predictModel) error {
		if base < 0 {
			base = p.meta.IndexBase
		}
		t, hasValues, err := readQueryCells(cells, format, base, p.meta.Dims)
		if err != nil {
			return err
		}
		order := p.meta.Order
		pred, rep, err := p.predict(t, path, cells, hasValues)
		if err != nil {
			return err
		}
		write := func(w io.Writer) error {
			b := bufio.NewWriterSize(w, 1<<16)
			var buf []byte
			for k, v := range pred {
				buf = buf[:0]
				for _, i := range t.Idx[k*order : (k+1)*order] {
					buf = strconv.AppendInt(buf, int64(i)+int64(base), 10)
					buf = append(buf, '\t')
				}
				buf = strconv.AppendFloat(buf, float64(v), 'g', -1, 32)
				buf = append(buf, '\n')
				if _, err := b.Write(buf); err != nil {
					return err
				}
			}
			return b.Flush()
		}
		if output != "" {
			if err := p.outF.Write(func(w io.Writer) error { return gzipIf(output, w, write) }); err != nil {
				return err
			}
		} else if err := write(stdout); err != nil {
			return err
		}
		return p.finish(&rep, t0, stderr)
	})
}

// checkEvalBatch checks dainx predict's -batch.
func checkEvalBatch(evalBatch int) error {
	if evalBatch < 0 || evalBatch > model.MaxCapacity {
		return fmt.Errorf("%w: -batch %d: want 1…%d cells, or 0 for the model's", errUsage, evalBatch, model.MaxCapacity)
	}
	return nil
}

// predictModel is what dainx predict holds while it predicts: its
// outputs (predictOutputs), the backend and the loaded model.
type predictModel struct {
	tx         *outtx.Tx
	outF, repF *outtx.File
	be         compute.Backend // nil for a bayes-fm model
	net        *nn.Net
	bayes      *bayes.Model    // a bayes-fm model (meta.Kind model.KindBayesFM), else nil
	ensemble   *model.Ensemble // an ensemble (model.KindEnsemble), else nil
	meta       model.Meta
}

// withPredictModel checks the outputs of dainx predict (predictOutputs),
// opens the backend, loads the model at path with room for evalBatch
// cells (0: the model's), runs do and releases them all, the outputs
// aborted unless do committed them (predictModel.finish).
func withPredictModel(path, cells, output, report, backend string, evalBatch int, stderr io.Writer, do func(*predictModel) error) error {
	tx, outF, repF, err := predictOutputs(path, cells, output, report)
	if err != nil {
		return err
	}
	defer tx.Abort()
	jp, _ := model.Paths(path)
	if meta, err := model.ReadMeta(jp); err == nil && meta.Kind == model.KindBayesFM {
		// Posterior samples, predicted on the CPU in float64 whatever
		// -backend says.
		m, meta, err := model.LoadBayes(path)
		if err != nil {
			return err
		}
		return do(&predictModel{tx: tx, outF: outF, repF: repF, bayes: m, meta: meta})
	}
	be, err := cli.Open(&cli.Input{Backend: backend, Precision: "fp32", Quiet: true}, stderr)
	if err != nil {
		return err
	}
	defer be.Close()
	if meta, err := model.ReadMeta(jp); err == nil && meta.Kind == model.KindEnsemble {
		// The members: nets on the backend, a bayes-fm on the CPU in
		// float64; their stack in float64.
		ens, meta, err := model.LoadEnsemble(path, be, evalBatch)
		if err != nil {
			return err
		}
		defer ens.Free()
		return do(&predictModel{tx: tx, outF: outF, repF: repF, be: be, ensemble: ens, meta: meta})
	}
	net, meta, err := model.Load(path, be, evalBatch)
	if err != nil {
		return err
	}
	defer net.Free()
	return do(&predictModel{tx: tx, outF: outF, repF: repF, be: be, net: net, meta: meta})
}

// predict returns the model's predictions of the cells t (of the file
// cells) and the report of dainx predict on them (all but Seconds and
// Outputs), with the RMSE against t's values when withValues.
func (p *predictModel) predict(t *tensor.COO, path, cells string, withValues bool) ([]float32, predictReport, error) {
	meta := p.meta
	rep := predictReport{Model: path, Cells: cells, N: t.NNZ(), Kind: meta.Kind, Role: meta.Role, Version: version(), Trained: meta.Version}
	if p.bayes != nil {
		rep.Backend = "cpu (float64, the mean over the model's posterior samples)"
		pred, err := p.bayes.Predict(t)
		if err != nil {
			return nil, rep, err
		}
		out, r := narrow(pred, t, withValues)
		rep.RMSE = r
		return out, rep, nil
	}
	if p.ensemble != nil {
		rep.Backend = p.be.Name() + " (the member nets; the stack in float64)"
		pred, err := p.ensemble.Predict(t)
		if err != nil {
			return nil, rep, err
		}
		out, r := narrow(pred, t, withValues)
		rep.RMSE = r
		return out, rep, nil
	}
	rep.Backend = p.be.Name()
	set := p.net.NewSet(t.Idx, t.Val)
	defer set.Free()
	pred, err := p.net.Predict(set)
	if err != nil {
		return nil, rep, err
	}
	if t.NNZ() > 0 && withValues {
		mse, err := p.net.Evaluate(set)
		if err != nil {
			return nil, rep, err
		}
		r := math.Sqrt(mse)
		rep.RMSE = &r
	}
	return pred, rep, nil
}

// narrow returns float64 predictions pred of t's cells in float32 and,
// when withValues and t has cells, their RMSE against t's values (in
// float64, from pred); nil otherwise.
func narrow(pred []float64, t *tensor.COO, withValues bool) ([]float32, *float64) {
	out := make([]float32, len(pred))
	var se float64
	for c, v := range pred {
		out[c] = float32(v)
		d := v - t.Val[c]
		se += d * d
	}
	if t.NNZ() == 0 || !withValues {
		return out, nil
	}
	r := math.Sqrt(se / float64(t.NNZ()))
	return out, &r
}

// finish completes rep (the seconds since t0, the outputs), stages it as
// the report, commits the outputs and writes the report to stderr.
func (p *predictModel) finish(rep *predictReport, t0 time.Time, stderr io.Writer) error {
	rep.Seconds = time.Since(t0).Seconds()
	rep.Outputs = p.tx.Paths()
	js, _ := json.MarshalIndent(rep, "", "  ")
	js = append(js, '\n')
	if err := p.repF.Write(func(w io.Writer) error { _, err := w.Write(js); return err }); err != nil {
		return err
	}
	if err := p.tx.Commit(); err != nil {
		return err
	}
	_, err := stderr.Write(js)
	return err
}

// predictOutputs checks the outputs of dainx predict before any work (see
// internal/outtx): neither may be the cells file, a file of the model
// (its directory's files, or NAME.json and NAME.safetensors) or the other.
func predictOutputs(model, cells, output, report string) (*outtx.Tx, *outtx.File, *outtx.File, error) {
	tx := outtx.New()
	tx.Input(cells)
	if st, err := os.Stat(model); err == nil && st.IsDir() {
		tx.InputDir(model)
	} else {
		stem := strings.TrimSuffix(strings.TrimSuffix(model, ".json"), ".safetensors")
		tx.Input(model)
		tx.Input(stem + ".json")
		tx.Input(stem + ".safetensors")
		tx.Input(filepath.Join(filepath.Dir(stem), table.DictFile))
	}
	outF, err := tx.File(output)
	if err != nil {
		return nil, nil, nil, err
	}
	repF, err := tx.Report(report)
	if err != nil {
		return nil, nil, nil, err
	}
	return tx, outF, repF, nil
}

// gzipIf runs write on w, through gzip when path ends in .gz.
func gzipIf(path string, w io.Writer, write func(io.Writer) error) error {
	if !strings.HasSuffix(strings.ToLower(path), ".gz") {
		return write(w)
	}
	z := gzip.NewWriter(w)
	if err := write(z); err != nil {
		return err
	}
	return z.Close()
}

// openText opens the text file path for reading, through gzip when its
// content starts with gzip's magic; closeText closes it. A gzip header
// that does not read is an error naming path.
func openText(path string) (r *bufio.Reader, closeText func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		return bufio.NewReaderSize(z, 1<<16), func() { z.Close(); f.Close() }, nil
	}
	return br, func() { f.Close() }, nil
}

// readQueryCells reads the cells of path for a model with the given mode
// sizes: text lines of N indices (plus base), optionally a value, '#'
// comments and blank lines skipped, gzip detected by content; or, with
// format "bin" or a .bin name, a SPLATT binary tensor. Errors name the file
// and line: a wrong number of fields, a bad number, an index outside the
// model's modes. hasValues is whether the cells came with values (all or
// none).
func readQueryCells(path, format string, base int, dims []int) (*tensor.COO, bool, error) {
	order := len(dims)
	if format == "bin" || (format == "" && tensor.FormatOf(path) == tensor.BIN) {
		t, err := tensor.ReadFile(path, tensor.ReadOptions{Format: tensor.BIN, IndexBase: base})
		if err != nil {
			return nil, false, err
		}
		if t.Order() != order {
			return nil, false, fmt.Errorf("%s: cells of order %d, the model's order is %d", path, t.Order(), order)
		}
		for k := 0; k < t.NNZ(); k++ {
			for n, i := range t.Idx[k*order : (k+1)*order] {
				if int(i) >= dims[n] {
					return nil, false, fmt.Errorf("%s: cell %d: index %d of mode %d is outside the model's %d…%d", path, k+1, int(i)+base, n+1, base, dims[n]-1+base)
				}
			}
		}
		return t, true, nil
	}
	r, closeText, err := openText(path)
	if err != nil {
		return nil, false, err
	}
	defer closeText()
	sc := tensor.NewLineScanner(r, maxQueryLine)
	t := &tensor.COO{Dims: append([]int(nil), dims...)}
	values := -1 // unknown until the first cell
	line := 0
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' {
			continue
		}
		fs, nf := fieldsOf(l, order+1)
		v := nf - order
		if v != 0 && v != 1 {
			return nil, false, fmt.Errorf("%s:%d: want %d indices, optionally a value, got %d fields", path, line, order, nf)
		}
		if values < 0 {
			values = v
		} else if v != values {
			return nil, false, fmt.Errorf("%s:%d: %d fields, the lines before had %d (values on every line or on none)", path, line, nf, order+values)
		}
		for n := 0; n < order; n++ {
			i, err := strconv.ParseInt(fs[n], 10, 64)
			if errors.Is(err, strconv.ErrRange) {
				return nil, false, fmt.Errorf("%s:%d: index %s of mode %d is out of range (the model's indices are %d…%d)", path, line, tensor.Echo(fs[n]), n+1, base, dims[n]-1+base)
			}
			if err != nil {
				return nil, false, fmt.Errorf("%s:%d: index %s of mode %d is not an integer", path, line, tensor.Echo(fs[n]), n+1)
			}
			if i-int64(base) < 0 || i-int64(base) >= int64(dims[n]) {
				return nil, false, fmt.Errorf("%s:%d: index %d of mode %d is outside the model's %d…%d", path, line, i, n+1, base, dims[n]-1+base)
			}
			t.Idx = append(t.Idx, int32(i-int64(base)))
		}
		x := 0.0
		if v == 1 {
			if x, err = strconv.ParseFloat(fs[order], 64); err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, false, fmt.Errorf("%s:%d: value %s is not a finite number", path, line, tensor.Echo(fs[order]))
			}
		}
		t.Val = append(t.Val, x)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, false, fmt.Errorf("%s:%d: line longer than %d MiB (a cell is N indices and a value)", path, line+1, maxQueryLine>>20)
	} else if err != nil {
		return nil, false, tensor.ReadError(path, line, err) // a truncated gzip stream: after the whole lines
	}
	return t, values == 1, nil
}

// fieldsOf returns the fields of line l (separated by white space, as
// strings.Fields splits), at most max of them, and how many it has: a
// line of millions of fields sizes nothing.
func fieldsOf(l string, max int) ([]string, int) {
	var fs []string
	for n := 0; ; n++ {
		l = strings.TrimLeftFunc(l, unicode.IsSpace)
		if l == "" {
			return fs, n
		}
		i := strings.IndexFunc(l, unicode.IsSpace)
		if i < 0 {
			i = len(l)
		}
		if len(fs) < max {
			fs = append(fs, l[:i])
		}
		l = l[i:]
	}
}

// maxQueryLine is the longest line of a -cells file, in bytes.
const maxQueryLine = 1 << 24
