// Command libfmdata writes the train, validation and test cells of dainx's
// split of a tensor in libFM's text format, for bench/peers/libfm/run.sh.
//
// It reads the tensor as `dainx augment -input` does (tensor.ReadFile with
// the format of the file's extension, or -format, and -index-base) and
// splits its cells as dain.Config.splitCells does: -split legacy is
// tensor.Split(nnz, testFrac, valFrac, seed), -split keyed is
// tensor.NewKeyedSplit(…).Cells(0, nnz). The cells are therefore exactly
// those `dainx augment -split-out` writes for the same input, -split,
// -seed, -test-frac and -val-frac (run.sh's VERIFY=1 checks this).
//
// Each cell becomes one libFM line: the value, then one binary feature per
// mode, "j:1" with j = (sizes of the modes before it) + the cell's index in
// that mode, so the features of mode n are [off_n, off_n + Dims[n]) and a
// factorization machine on them is a rank-K CP-like model with biases.
// -out gets train.libfm, val.libfm, test.libfm and meta.txt (the mode of
// each feature, one line per feature, for libFM's -meta), and the command
// prints one JSON object: dims, offsets and the part sizes.
//
//	go run ./bench/peers/libfm/libfmdata -input T.tsv.gz -split legacy -seed 1 -out DIR
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dainx/dainx/tensor"
)

func main() {
	input := flag.String("input", "", "tensor file (as dainx -input)")
	format := flag.String("format", "", "input format: tsv, tns or bin; empty: by extension (as dainx -format)")
	base := flag.Int("index-base", -1, "index base of the input (as dainx -index-base)")
	split := flag.String("split", "keyed", "legacy or keyed (as dainx -split)")
	seed := flag.Uint64("seed", 1, "split seed (as dainx -seed)")
	testFrac := flag.Float64("test-frac", 0.1, "test fraction (as dainx -test-frac)")
	valFrac := flag.Float64("val-frac", 0.2, "validation fraction of the rest (as dainx -val-frac)")
	out := flag.String("out", "", "output directory")
	flag.Parse()
	if err := run(*input, *format, *base, *split, *seed, *testFrac, *valFrac, *out); err != nil {
		fmt.Fprintln(os.Stderr, "libfmdata:", err)
		os.Exit(1)
	}
}

func run(input, format string, base int, split string, seed uint64, testFrac, valFrac float64, out string) error {
	if input == "" || out == "" {
		return fmt.Errorf("-input and -out are required")
	}
	if !(testFrac >= 0 && testFrac < 1) || !(valFrac > 0 && valFrac < 1) {
		return fmt.Errorf("-test-frac %v, -val-frac %v: want 0 ≤ test < 1, 0 < val < 1 (as dainx)", testFrac, valFrac)
	}
	f := tensor.FormatOf(input)
	if format != "" {
		v, err := tensor.ParseFormat(format)
		if err != nil {
			return err
		}
		f = v
	}
	x, err := tensor.ReadFile(input, tensor.ReadOptions{Format: f, IndexBase: base})
	if err != nil {
		return err
	}
	nnz := x.NNZ()
	var tr, va, te []int
	switch split {
	case "legacy":
		tr, va, te = tensor.Split(nnz, testFrac, valFrac, seed)
	case "keyed":
		tr, va, te = tensor.NewKeyedSplit(nnz, testFrac, valFrac, seed).Cells(0, nnz)
	default:
		return fmt.Errorf("-split %q: want legacy or keyed", split)
	}
	offsets := make([]int, x.Order())
	features := 0
	for n, d := range x.Dims {
		offsets[n] = features
		features += d
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		rows []int
	}{{"train.libfm", tr}, {"val.libfm", va}, {"test.libfm", te}} {
		if err := writeLibFM(filepath.Join(out, p.name), x, p.rows, offsets); err != nil {
			return err
		}
	}
	if err := writeMeta(filepath.Join(out, "meta.txt"), x.Dims); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"input": input, "split": split, "seed": seed, "test_frac": testFrac, "val_frac": valFrac,
		"dims": x.Dims, "offsets": offsets, "features": features,
		"nnz": nnz, "n_train": len(tr), "n_val": len(va), "n_test": len(te),
	})
}

// writeLibFM writes x's cells rows to path, one libFM line each.
func writeLibFM(path string, x *tensor.COO, rows []int, offsets []int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var b []byte
	for _, r := range rows {
		b = strconv.AppendFloat(b[:0], x.Val[r], 'g', -1, 64)
		for n, i := range x.Cell(r) {
			b = append(b, ' ')
			b = strconv.AppendInt(b, int64(offsets[n]+int(i)), 10)
			b = append(b, ":1"...)
		}
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeMeta writes the mode of each feature, one per line (libFM -meta).
func writeMeta(path string, dims []int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for n, d := range dims {
		for range d {
			fmt.Fprintln(w, n)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
