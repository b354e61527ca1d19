package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/internal/outtx"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tensor/table"
)

// Table holds the flags that read -input as a table (CSV, TSV or
// Parquet) of IDs: -index, -value and -ids. The commands that read a
// tensor (augment, eval, convert, predict) bind them; the C library does
// not (it takes cells in memory).
type Table struct {
	Index string // -index COL[:BIN],…: the mode columns
	Value string // -value COL
	IDs   string // -ids first|sorted
}

// IndexHelp and the other help texts are the table flags' help, shared by
// every command that binds them.
const (
	IndexHelp = "read -input as a table (CSV or TSV with a header line, by extension .csv/.tsv; Parquet, .parquet) whose `columns` COL[,COL…] are the modes: each holds IDs (integers or text; numbered 0, 1, … in order of first appearance, or -ids sorted), or, as COL:BIN, times binned by hour, day, week (from Monday), month or a number of seconds (Unix seconds or ISO 8601 / RFC 3339 text; UTC; the index is the bin less the first bin). Outputs then name cells by these IDs (a time bin by its start, RFC 3339), in the input's format, and -model-out keeps the dictionaries"
	ValueHelp = "with -index, the table's value `column` (numbers)"
	IDsHelp   = "with -index, how IDs become indices: first (order of first appearance) or sorted (numbers compared as numbers when every ID of the mode is one, else as text)"
)

// BindTable registers -index, -value and -ids.
func BindTable(fs *flag.FlagSet, t *Table) {
	fs.StringVar(&t.Index, "index", "", IndexHelp)
	fs.StringVar(&t.Value, "value", "", ValueHelp)
	fs.StringVar(&t.IDs, "ids", "first", IDsHelp)
}

// On reports whether the flags ask for a table (-index given).
func (t *Table) On() bool { return t.Index != "" }

// Spec returns the table.Spec the flags describe; errors wrap ErrUsage.
// valueRequired says whether -value must be given (augment, eval,
// convert) or may be left out (predict's cells).
func (t *Table) Spec(valueRequired bool) (table.Spec, error) {
	var s table.Spec
	if !t.On() {
		if t.Value != "" {
			return s, fmt.Errorf("%w: -value names a column of a table: give -index too", ErrUsage)
		}
		if t.IDs != "first" && t.IDs != "" {
			return s, fmt.Errorf("%w: -ids numbers the IDs of a table: give -index too", ErrUsage)
		}
		return s, nil
	}
	modes, err := table.ParseIndex(t.Index)
	if err != nil {
		return s, fmt.Errorf("%w: -index %s: %v", ErrUsage, tensor.Echo(t.Index), err)
	}
	if valueRequired && t.Value == "" {
		return s, fmt.Errorf("%w: -index needs -value COL, the column of the cells' values", ErrUsage)
	}
	switch t.IDs {
	case "first", "":
	case "sorted":
		s.Sorted = true
	default:
		return s, fmt.Errorf("%w: -ids %s: want first or sorted", ErrUsage, tensor.Echo(t.IDs))
	}
	s.Modes, s.Value = modes, t.Value
	for _, m := range modes {
		if m.Column == t.Value {
			return s, fmt.Errorf("%w: column %s is both in -index and -value", ErrUsage, tensor.Echo(m.Column))
		}
	}
	return s, nil
}

// TableFormat returns the table format of -input: -format csv, tsv or
// parquet, else by the file's extension, else CSV. It is an error (usage)
// for -format to name a tensor format.
func TableFormat(in *Input) (table.Format, error) {
	if in.Format != "" {
		f, err := table.ParseFormat(in.Format)
		if err != nil {
			return 0, fmt.Errorf("%w: -format %s with -index: want csv, tsv or parquet", ErrUsage, tensor.Echo(in.Format))
		}
		return f, nil
	}
	if f, ok := table.FormatOf(in.Input); ok {
		return f, nil
	}
	return table.CSV, nil
}

// CheckTensorInput refuses, as a usage error, a tensor read without
// -index from a file whose name says it is a table.
func CheckTensorInput(in *Input) error {
	if in.Table.On() || in.Input == "" || in.Format != "" {
		return nil
	}
	if f, ok := table.FormatOf(in.Input); ok && f != table.TSV {
		return fmt.Errorf("%w: -input %s is a %s table: name its mode columns with -index and its value column with -value", ErrUsage, in.Input, f)
	}
	return nil
}

// ReadTable reads -input as the table the flags describe and says what
// it read on stderr (unless quiet).
func ReadTable(in *Input, stderr io.Writer) (*tensor.COO, *table.Dicts, error) {
	spec, err := in.Table.Spec(true)
	if err != nil {
		return nil, nil, err
	}
	if in.Input == "" {
		return nil, nil, fmt.Errorf("%w: -index reads a table: give it as -input FILE", ErrUsage)
	}
	if in.IndexBase >= 0 {
		return nil, nil, fmt.Errorf("%w: -index-base is for tensors of indices; a table's indices are numbered from 0", ErrUsage)
	}
	f, err := TableFormat(in)
	if err != nil {
		return nil, nil, err
	}
	t, d, err := table.ReadFile(in.Input, spec, table.Options{Format: f})
	if err != nil {
		return nil, nil, err
	}
	if !in.Quiet && stderr != nil {
		fmt.Fprintf(stderr, "dainx: read %s (%s): %d cells; %s\n", in.Input, f, t.NNZ(), d.Summary())
	}
	return t, d, nil
}

// KnownTable parses -index and -value of cells given by ID to a model
// trained on a table (predict, fold-in: the one check both make), reads
// the model's dictionaries (table.DictFile beside the model.json of
// modelPath) against its mode sizes dims (table.ReadJSON: their IDs
// counted as they come) and matches -index with them by column
// (table.Resolve: the model's columns in its order, so that a swap such
// as -index item,user on a model of user,item is refused naming the
// columns). A bad -index, a swap or a model without dictionaries is a
// usage error; without is the advice for the last ("give -cells FILE of
// indices").
func KnownTable(index, value, modelPath string, dims []int, without string) (table.Spec, *table.Dicts, error) {
	modes, err := table.ParseIndex(index)
	if err != nil {
		return table.Spec{}, nil, fmt.Errorf("%w: -index %s: %v", ErrUsage, tensor.Echo(index), err)
	}
	for _, m := range modes {
		if m.Column == value {
			return table.Spec{}, nil, fmt.Errorf("%w: column %s is both in -index and -value", ErrUsage, tensor.Echo(value))
		}
	}
	spec := table.Spec{Modes: modes, Value: value}
	jp, _ := model.Paths(modelPath)
	known, err := table.ReadJSON(filepath.Join(filepath.Dir(jp), table.DictFile), dims)
	if errors.Is(err, fs.ErrNotExist) {
		return table.Spec{}, nil, fmt.Errorf("%w: -index: the model %s has no %s (it was trained on a tensor of indices, not a table); %s", ErrUsage, modelPath, table.DictFile, without)
	}
	if err != nil {
		return table.Spec{}, nil, err
	}
	if spec, err = table.Resolve(spec, known); err != nil {
		return table.Spec{}, nil, fmt.Errorf("%w: -index %s: %v", ErrUsage, tensor.Echo(index), err)
	}
	return spec, known, nil
}

// TableOut is the table format of an output file of a run on a table
// read in format in: the one its name's extension gives (.csv, .tsv,
// .parquet, before any .gz), else in's.
func TableOut(path string, in table.Format) table.Format {
	if f, ok := table.FormatOf(path); ok {
		return f
	}
	return in
}

// TensorExt reports whether path names a tensor format of indices by its
// extension (.tns or .bin, before any .gz): such an -output of a table
// run holds indices, not IDs.
func TensorExt(path string) bool {
	p := strings.TrimSuffix(strings.ToLower(path), ".gz")
	switch filepath.Ext(p) {
	case ".tns", ".bin":
		return true
	}
	return false
}

// writeTable stages file f as a table of format tf with columns cols,
// filled row by row by rows.
func writeTable(f *outtx.File, tf table.Format, cols []table.Column, rows func(w *table.Writer) error) error {
	return f.Write(func(w io.Writer) error { return encodeTable(w, f.Path(), tf, cols, rows) })
}

func encodeTable(w io.Writer, name string, tf table.Format, cols []table.Column, rows func(w *table.Writer) error) error {
	tw, err := table.NewWriter(w, name, tf, cols)
	if err != nil {
		return err
	}
	if err := rows(tw); err != nil {
		return err
	}
	return tw.Close()
}

// cellColumns are the columns of cells by ID: the modes' then value's.
func cellColumns(d *table.Dicts, value string) []table.Column {
	var cols []table.Column
	for _, m := range d.Modes {
		cols = append(cols, table.IDColumn(m))
	}
	return append(cols, table.Column{Name: value, Type: table.ColFloat})
}

// valueName is the value column of outputs: the input's, or "value".
func valueName(d *table.Dicts) string {
	if d.Value != "" {
		return d.Value
	}
	return "value"
}

// WriteCellsTable writes the cells of c (indices of d's modes) by ID as
// a table with a value column named value.
func WriteCellsTable(w io.Writer, name string, tf table.Format, d *table.Dicts, c *tensor.COO, value string) error {
	return encodeTable(w, name, tf, cellColumns(d, value), func(tw *table.Writer) error {
		return cellRows(tw, d, c.Idx, c.NNZ(), func(k int) { tw.Float(c.Val[k], 64) })
	})
}

// cellRows writes one row per cell of idx (n cells): its IDs, then what
// extra adds for cell k.
func cellRows(tw *table.Writer, d *table.Dicts, idx []int32, n int, extra func(k int)) error {
	order := len(d.Modes)
	for k := 0; k < n; k++ {
		for m, i := range idx[k*order : (k+1)*order] {
			tw.ID(d.Modes[m], i)
		}
		extra(k)
		if err := tw.EndRow(); err != nil {
			return err
		}
	}
	return nil
}

// finishTable writes the outputs of a run on a table (Transaction.Names):
// the augmented cells, split, scores and importance by ID in the input's
// format (an -output named .tns or .bin holds indices, as out says), and
// the dictionaries into -model-out.
func (t *Transaction) finishTable(res *dain.Result, out tensor.WriteOptions) error {
	d := t.Names
	tf := d.Table
	val := valueName(d)
	err := t.writeSplit(res, tf.Ext(), func(w io.Writer, name string, c *tensor.COO) error {
		return WriteCellsTable(w, name, tf, d, c, val)
	})
	if err != nil {
		return err
	}
	if f := t.Scores; f != nil && res.Scores != nil {
		s := res.Scores
		cols := append(cellColumns(d, val), table.Column{Name: "alpha", Type: table.ColFloat}, table.Column{Name: "score", Type: table.ColFloat})
		err := writeTable(f, TableOut(f.Path(), tf), cols, func(tw *table.Writer) error {
			return cellRows(tw, d, s.Cells.Idx, len(s.Alpha), func(k int) {
				tw.Float(s.Cells.Val[k], 64)
				tw.Float(float64(s.Alpha[k]), 32)
				tw.Float(float64(s.S[k]), 32)
			})
		})
		if err != nil {
			return err
		}
	}
	if f := t.Importance; f != nil && res.Importance != nil {
		cols := []table.Column{{Name: "mode", Type: table.ColString}, {Name: "id", Type: table.ColString}, {Name: "importance", Type: table.ColFloat}}
		err := writeTable(f, TableOut(f.Path(), tf), cols, func(tw *table.Writer) error {
			for n, imp := range res.Importance {
				m := d.Modes[n]
				for i, x := range imp {
					tw.String(m.Column)
					tw.String(m.Label(int32(i)))
					tw.Float(x, 64)
					if err := tw.EndRow(); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if o := t.Output; o != nil {
		var err error
		if TensorExt(o.Path()) {
			err = o.Write(func(w io.Writer) error { return tensor.Encode(w, o.Path(), res.Aug, out) })
		} else {
			err = o.Write(func(w io.Writer) error {
				return WriteCellsTable(w, o.Path(), TableOut(o.Path(), tf), d, res.Aug, val)
			})
		}
		if err != nil {
			return err
		}
	}
	if t.Model != nil {
		dir, err := t.Model.Path()
		if err != nil {
			return err
		}
		if err := d.WriteJSONFile(filepath.Join(dir, table.DictFile)); err != nil {
			return fmt.Errorf("cannot write %s: %w", filepath.Join(t.Model.UserPath(), table.DictFile), outtx.Bare(err))
		}
	}
	return nil
}
