package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tensor/table"
)

// convert is "dainx convert": read a tensor in one format and index base,
// write it in another.
func convert(args []string, stdout, stderr io.Writer) int {
	var (
		input, output, format, outFormat string
		base, outBase                    int
		quiet                            bool
		tbl                              cli.Table
		dictOut                          string
	)
	fs := flag.NewFlagSet("dainx convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cli.BindTable(fs, &tbl)
	fs.StringVar(&dictOut, "dict-out", "", "with -index, also write the dictionaries (each mode's index → ID, a time mode's bin and origin; the dictionaries.json of a -model-out directory) to this `file`")
	fs.StringVar(&input, "input", "", "input tensor `file` (required): DAIN TSV, FROSTT .tns or SPLATT .bin, or with -index a table of IDs (CSV, TSV, Parquet); gzip is detected by content")
	fs.StringVar(&format, "format", "", "input `format`: tsv, tns or bin (with -index csv, tsv or parquet); empty: by the input's extension after any .gz (.tns is tns, .bin is bin, anything else tsv; with -index .csv, .tsv, .parquet)")
	fs.IntVar(&base, "index-base", -1, "index `base` of the input (usually 0 or 1): the number that denotes a mode's first entity; -1: the input format's own (tsv 0, tns 1, bin 0)")
	fs.StringVar(&output, "output", "", "output `file` (required); gzip-compressed when it ends in .gz; written atomically (a temporary file renamed into place)")
	fs.StringVar(&outFormat, "output-format", "", "output `format`: tsv, tns or bin (with -index also csv or parquet: a table of IDs); empty: by the output's extension, as for -format (with -index, .csv and .parquet are tables)")
	fs.IntVar(&outBase, "output-index-base", -1, "index `base` of the output (usually 0 or 1); -1: the output format's own (tsv 0, tns 1, bin 0)")
	fs.BoolVar(&quiet, "quiet", false, "print nothing on success")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: dainx convert -input FILE -output FILE [flags]

Converts a tensor between the formats dainx reads and writes, and between
index bases:

  tsv  DAIN's text format: one cell per line, tab-separated indices, then
       the value; 0-based
  tns  FROSTT's text format: the same with spaces; 1-based; # comments
  bin  SPLATT's binary coordinate format (as "splatt convert" writes it):
       a header, the mode sizes, the indices mode by mode, the values,
       little-endian; 0-based; 4-byte indices, and 4-byte values when every
       value is exactly a float32, else 8 (lossless)

With -index (and -value) the input is a table of IDs (CSV or TSV with a
header, Parquet) read as augment -index reads it; the output is then a
tensor of indices (tsv, tns, bin; -dict-out keeps the dictionaries), or,
named .csv or .parquet (or -output-format csv|parquet), the same table of
cells by ID (time bins as their start, RFC 3339) in that format:

  dainx convert -input ratings.csv -index userId,movieId,timestamp:day \
      -value rating -ids sorted -output ratings.tsv -dict-out dict.json
  dainx convert -input ratings.csv -index userId,movieId,timestamp \
      -value rating -output ratings.parquet

Text of either kind is gzip-compressed when the output ends in .gz, and any
input is decompressed when it is gzip. The input is checked as every dainx
command checks it (bad lines are reported as file:line: reason; a
duplicate cell is an error). Text does not store the mode sizes: a .bin
whose sizes exceed the largest indices + 1 loses them in text, which is
said on standard error. On success one line on standard output says what
was written and how fast it was read.

Flags:
`)
		fs.PrintDefaults()
	}
	if code, done := parse(fs, args, stderr); done {
		return code
	}
	usageErr := func(format string, args ...any) int {
		return exitFor("convert", fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...), nil, stderr)
	}
	if input == "" || output == "" {
		return usageErr("-input FILE and -output FILE are required")
	}
	in := inputFlags{Input: input, Format: format, IndexBase: base, Quiet: true, Table: tbl}
	if err := checkTableFlags(&in, true); err != nil {
		return exitFor("convert", err, nil, stderr)
	}
	if tbl.On() {
		return exitFor("convert", convertTable(&in, output, outFormat, outBase, dictOut, quiet, stdout), nil, stderr)
	}
	if dictOut != "" {
		return usageErr("-dict-out writes a table's dictionaries: give -index")
	}
	inF, outF := tensor.FormatOf(input), tensor.FormatOf(output)
	for _, f := range []struct {
		flag, v string
		dst     *tensor.Format
	}{{"-format", format, &inF}, {"-output-format", outFormat, &outF}} {
		if f.v == "" {
			continue
		}
		v, err := tensor.ParseFormat(f.v)
		if err != nil {
			return usageErr("%s: %v", f.flag, err)
		}
		*f.dst = v
	}
	for _, b := range []struct {
		flag string
		v    int
	}{{"-index-base", base}, {"-output-index-base", outBase}} {
		if b.v < -1 || b.v > tensor.MaxDim {
			return usageErr("%s %d: want 0, 1 (any base up to %d), or -1 for the format's own", b.flag, b.v, tensor.MaxDim)
		}
	}
	tx, outFile, err := beginOutput(output, input)
	if err != nil {
		return exitFor("convert", err, nil, stderr)
	}
	defer tx.Abort()
	st, err := os.Stat(input)
	if err != nil {
		return exitFor("convert", err, nil, stderr)
	}
	t0 := time.Now()
	t, err := tensor.ReadFile(input, tensor.ReadOptions{Format: inF, IndexBase: base})
	if err != nil {
		return exitFor("convert", err, nil, stderr)
	}
	read := time.Since(t0)
	if outF != tensor.BIN {
		if shown := shownDims(t); !slices.Equal(shown, t.Dims) {
			fmt.Fprintf(stderr, "dainx convert: note: text does not store the mode sizes %v; %s read back has %v\n", t.Dims, output, shown)
		}
	}
	t1 := time.Now()
	if err := commitTensor(tx, outFile, t, tensor.WriteOptions{Format: outF, IndexBase: outBase}); err != nil {
		return exitFor("convert", err, nil, stderr)
	}
	wrote := time.Since(t1)
	if !quiet {
		ob := outBase
		if ob == -1 {
			ob = outF.DefaultIndexBase()
		}
		ib := base
		if ib == -1 {
			ib = inF.DefaultIndexBase()
		}
		fmt.Fprintf(stdout, "dainx convert: %s (%v, %d-based) → %s (%v, %d-based): %d cells, dims %v; read %.1f MB in %.2f s (%.0f MB/s), wrote in %.2f s\n",
			input, inF, ib, output, outF, ob, t.NNZ(), t.Dims, float64(st.Size())/1e6, read.Seconds(), float64(st.Size())/1e6/read.Seconds(), wrote.Seconds())
	}
	return exitOK
}

// shownDims returns the dims a text file of t gives when read back: the
// largest index of each mode + 1.
func shownDims(t *tensor.COO) []int {
	n := t.Order()
	d := make([]int, n)
	for k := range t.NNZ() {
		for m, x := range t.Cell(k) {
			d[m] = max(d[m], int(x)+1)
		}
	}
	return d
}

// convertTable is dainx convert of a table (-index): to a tensor of
// indices, or to a table of cells by ID when the output is named .csv or
// .parquet (or -output-format says csv or parquet); -dict-out adds the
// dictionaries. The outputs are one transaction.
func convertTable(in *inputFlags, output, outFormat string, outBase int, dictOut string, quiet bool, stdout io.Writer) error {
	var tf table.Format // 0: a tensor
	outF := tensor.FormatOf(output)
	switch f, ok := table.FormatOf(output); {
	case outFormat != "":
		if f, err := tensor.ParseFormat(outFormat); err == nil {
			outF = f
		} else if f, err := table.ParseFormat(outFormat); err == nil {
			tf = f
		} else {
			return fmt.Errorf("%w: -output-format %s: want tsv, tns, bin, csv or parquet", errUsage, tensor.Echo(outFormat))
		}
	case ok && f != table.TSV:
		tf = f
	}
	if tf != 0 && outBase != -1 {
		return fmt.Errorf("%w: -output-index-base is for tensors of indices; a %s table holds IDs", errUsage, tf)
	}
	tx, outFile, err := beginOutput(output, in.Input)
	if err != nil {
		return err
	}
	defer tx.Abort()
	dictFile, err := tx.File(dictOut)
	if err != nil {
		return err
	}
	st, err := os.Stat(in.Input)
	if err != nil {
		return err
	}
	t0 := time.Now()
	t, d, err := cli.ReadTable(in, nil)
	if err != nil {
		return err
	}
	read := time.Since(t0)
	if tf != 0 {
		err = outFile.Write(func(w io.Writer) error { return cli.WriteCellsTable(w, output, tf, d, t, d.Value) })
	} else {
		err = outFile.Write(func(w io.Writer) error {
			return tensor.Encode(w, output, t, tensor.WriteOptions{Format: outF, IndexBase: outBase})
		})
	}
	if err != nil {
		return err
	}
	if err := dictFile.Write(d.WriteJSON); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if !quiet {
		ob := outBase
		if ob < 0 {
			ob = outF.DefaultIndexBase()
		}
		what := fmt.Sprintf("%v, %d-based", outF, ob)
		if tf != 0 {
			what = tf.String() + " of IDs"
		}
		fmt.Fprintf(stdout, "dainx convert: %s (%s table) → %s (%s): %d cells, dims %v (%s); read %.1f MB in %.2f s\n",
			in.Input, d.Table, output, what, t.NNZ(), t.Dims, d.Summary(), float64(st.Size())/1e6, read.Seconds())
	}
	return nil
}
