package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/foldin"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tensor/table"
)

// foldIn is "dainx fold-in": new entities into a saved model (issue 34).
func foldIn(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dainx fold-in", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := cli.NewFoldIn(fs, true)
	input := fs.String("input", "", "the cells to fold in (required): a tensor `file` as augment reads it (DAIN TSV, FROSTT .tns, SPLATT .bin; gzip detected), indexed as the model's modes: an index at or above a mode's size is a new entity")
	format := fs.String("format", "", "`format` of -input: tsv, tns or bin; empty: by extension after any .gz")
	base := fs.Int("index-base", -1, "index `base` of -input; -1: the model's (the base of the tensor it was trained on)")
	index := fs.String("index", "", "read -input as a table (CSV or TSV with a header, Parquet) whose `columns` COL[,COL…] hold the IDs of the model's modes in order, as augment's -index named them (a time column's bin, COL:BIN, may be left out: the model's); needs a model trained on a table (its dictionaries.json). IDs the model does not know are new entities, numbered after its own in order of first appearance; a time bin after the model's last is a new entity too. M2 keeps the grown dictionaries")
	value := fs.String("value", "", "with -index, the table's value `column`")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: dainx fold-in -model M -input NEW -model-out M2 [flags]

Adds new entities to a model saved by dainx augment -model-out (or by a
fold-in before) and writes the grown model to M2, for dainx predict.

NEW holds cells (indices and a value) indexed as the model's modes. An
index at or above a mode's size is a new entity: the mode grows to hold
the largest, at most one new entity per cell of NEW. A model trained on a
table (augment -index) takes NEW as a table by ID instead:

  dainx fold-in -model m -input new.csv -index userId,movieId,timestamp:day \
      -value rating -model-out m2

where every ID the model does not know is a new entity (numbered after
the model's, in order of first appearance; M2 keeps the grown
dictionaries). Each new entity gets
an embedding row, initialised as the model's kind initialises its table
(seeded), and trained on NEW's cells with everything else frozen: every
known row and every layer of M2 is M's, bit for bit. With -tune all the
known entities' rows that NEW's cells touch train too (the layers stay
frozen). Training is Adam on the trained rows only, over shuffled batches
(a step's work grows with the batch, not with the model), with early
stopping on a validation share of NEW (-val-frac).

M2 is written as augment's -model-out is (a transaction: all of it or
nothing; never into M). The JSON report (new entities per mode, cells,
epochs, validation RMSE) goes to standard output, progress to standard
error.

Flags:
`)
		fs.PrintDefaults()
	}
	if code, done := parse(fs, args, stderr); done {
		return code
	}
	if err := f.Check(); err != nil {
		return exitFor("fold-in", err, nil, stderr)
	}
	if *input == "" {
		return exitFor("fold-in", fmt.Errorf("%w: -input NEW is required (the cells of the new entities)", errUsage), nil, stderr)
	}
	if *base < -1 {
		return exitFor("fold-in", fmt.Errorf("%w: -index-base %d: want ≥ 0, or -1 for the model's", errUsage, *base), nil, stderr)
	}
	if *value != "" && *index == "" {
		return exitFor("fold-in", fmt.Errorf("%w: -value names a column of a table: give -index too", errUsage), nil, stderr)
	}
	if *index != "" && *base >= 0 {
		return exitFor("fold-in", fmt.Errorf("%w: -index-base is for cells of indices; -index reads IDs", errUsage), nil, stderr)
	}
	if *index != "" && *value == "" {
		return exitFor("fold-in", fmt.Errorf("%w: -index needs -value COL, the column of the cells' values", errUsage), nil, stderr)
	}
	if *index == "" {
		if err := cli.CheckTensorInput(&cli.Input{Input: *input, Format: *format}); err != nil {
			return exitFor("fold-in", err, nil, stderr)
		}
	}
	ctx, stop := signalContext()
	defer stop()
	return exitFor("fold-in", runFoldIn(ctx, f, *input, *format, *base, *index, *value, stdout, stderr), ctx, stderr)
}

func runFoldIn(ctx context.Context, f *cli.FoldIn, input, format string, base int, index, value string, stdout, stderr io.Writer) error {
	tx, err := f.Begin(input)
	if err != nil {
		return err
	}
	defer tx.Abort()
	jp, _ := model.Paths(f.Model)
	meta, err := model.ReadMeta(jp)
	if err != nil {
		return err
	}
	if meta.Kind == model.KindEnsemble {
		return fmt.Errorf("%w: %s", errUsage, cli.ErrFoldEnsemble(f.Model))
	}
	dp := filepath.Join(filepath.Dir(jp), table.DictFile)
	var t *tensor.COO
	var extra cli.Extra
	if index != "" {
		if t, extra, err = readFoldTable(input, format, index, value, f.Model, meta.Dims); err != nil {
			return err
		}
	} else {
		if _, err := os.Stat(dp); err == nil {
			return fmt.Errorf("%w: the model %s was trained on a table (it has %s): give NEW as a table of IDs with -index COL,… and -value COL, so that the new entities have names", errUsage, f.Model, table.DictFile)
		}
		if t, err = readFoldTensor(input, format, base, meta); err != nil {
			return err
		}
	}
	if meta.Kind == model.KindBayesFM {
		js, err := f.RunBayes(ctx, tx, meta, t, input, version(), extra, stderr)
		if err != nil {
			return err
		}
		_, err = stdout.Write(js)
		return err
	}
	be, err := cli.Open(&cli.Input{Backend: f.Backend, Device: f.Device, Precision: f.Precision, GemmTune: f.GemmTune, GemmSerial: f.GemmSerial, Quiet: f.Quiet}, stderr)
	if err != nil {
		return err
	}
	defer be.Close()
	net, meta, err := f.Load(be)
	if err != nil {
		return err
	}
	defer net.Free()
	js, err := f.Run(ctx, tx, net, meta, t, input, version(), extra, stderr, nil)
	if err != nil {
		return err
	}
	_, err = stdout.Write(js)
	return err
}

// readFoldTensor reads the cells of a fold-in given as a tensor of
// indices (format, base: the flags; base -1 the model's) and checks them
// against the model (checkFoldCells).
func readFoldTensor(input, format string, base int, meta model.Meta) (*tensor.COO, error) {
	var err error
	if base < 0 {
		base = meta.IndexBase
	}
	tf := tensor.FormatOf(input)
	if format != "" {
		if tf, err = tensor.ParseFormat(format); err != nil {
			return nil, fmt.Errorf("%w: -format: %v", errUsage, err)
		}
	}
	t, err := tensor.ReadFile(input, tensor.ReadOptions{Format: tf, IndexBase: base})
	if err != nil {
		return nil, err
	}
	if err := checkFoldCells(input, tf, base, t, meta.Dims); err != nil {
		return nil, err
	}
	return t, nil
}

// readFoldTable reads the cells of a fold-in given as a table of IDs
// (-index, -value) against the model's dictionaries (cli.KnownTable:
// matched by column, a swap refused), renumbered as the grown model
// indexes them (foldin.MapTable), and returns them with the function
// that writes the grown dictionaries.
func readFoldTable(input, format, index, value, modelPath string, dims []int) (*tensor.COO, cli.Extra, error) {
	spec, known, err := cli.KnownTable(index, value, modelPath, dims, "give -input as a tensor of indices, without -index")
	if err != nil {
		return nil, nil, err
	}
	tf, err := cli.TableFormat(&cli.Input{Input: input, Format: format})
	if err != nil {
		return nil, nil, err
	}
	cells, fresh, err := table.ReadFile(input, spec, table.Options{Format: tf})
	if err != nil {
		return nil, nil, err
	}
	t, grown, err := foldin.MapTable(cells, fresh, known)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", input, err)
	}
	if _, err := foldin.GrownDims(dims, t); err != nil {
		var le *foldin.LimitError
		if errors.As(err, &le) {
			m := known.Modes[le.Mode-1]
			return nil, nil, fmt.Errorf("%s: row %d: column %q: the time bin starting %s would add %d new bins to the model's %d (from %s), more than the table's %d rows: a new time bin takes the next index after the model's last, one per row at most",
				input, le.Cell+1, m.Column, m.Bin.Label(m.First+le.Index), le.Index+1-int64(le.Size), le.Size, m.Origin(), le.NNZ)
		}
		return nil, nil, err
	}
	return t, func(dir string) error { return grown.WriteJSONFile(filepath.Join(dir, table.DictFile)) }, nil
}

// checkFoldCells checks the cells t read from path (in format tf, index
// base base) against a model of mode sizes dims before any work: their
// order, and the number of new entities (foldin.GrownDims), naming the
// file and the line (a .bin file: the cell).
func checkFoldCells(path string, tf tensor.Format, base int, t *tensor.COO, dims []int) error {
	if t.NNZ() == 0 {
		return fmt.Errorf("%s: no cells", path)
	}
	if t.Order() != len(dims) {
		return fmt.Errorf("%s: cells of order %d, the model's order is %d", cellPlace(path, tf, 0), t.Order(), len(dims))
	}
	_, err := foldin.GrownDims(dims, t)
	var le *foldin.LimitError
	if errors.As(err, &le) {
		return fmt.Errorf("%s: index %d of mode %d would add %d new entities to the model's %d (indices %d…%d), more than the file's %d cells: a new entity takes the next index after the model's last, one per cell at most",
			cellPlace(path, tf, le.Cell), le.Index+int64(base), le.Mode, le.Index+1-int64(le.Size), le.Size, base, le.Size-1+base, le.NNZ)
	}
	return err
}

// cellPlace names cell k (0-based, in file order) of the tensor file path:
// "path:LINE" for text, "path: cell K" (1-based) for a .bin file or when
// the line cannot be found.
func cellPlace(path string, tf tensor.Format, k int) string {
	if tf != tensor.BIN {
		if line, ok := cellLine(path, k); ok {
			return fmt.Sprintf("%s:%d", path, line)
		}
	}
	return fmt.Sprintf("%s: cell %d", path, k+1)
}

// cellLine returns the 1-based line of cell k of the text tensor file
// path (gzip detected by content): the k-th line, from 0, that is neither
// blank nor a '#' comment, as the tensor reader counts them.
func cellLine(path string, k int) (int, bool) {
	lr, closeText, err := openText(path)
	if err != nil {
		return 0, false
	}
	defer closeText()
	line, cell := 0, 0
	start := true // at the start of a line
	for {
		b, err := lr.ReadSlice('\n')
		if len(b) > 0 {
			if start {
				line++
				t := bytes.TrimLeft(b, " \t")
				t = bytes.TrimRight(t, "\r\n \t")
				if len(t) > 0 && t[0] != '#' {
					if cell == k {
						return line, true
					}
					cell++
				}
			}
			start = b[len(b)-1] == '\n'
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return 0, false
		}
	}
}
