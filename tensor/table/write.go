package table

import (
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// ColType is the type of an output column.
type ColType int

const (
	ColString ColType = iota // text (Parquet: STRING)
	ColInt                   // integers (Parquet: INT64)
	ColFloat                 // numbers (Parquet: DOUBLE)
)

// Column is an output column.
type Column struct {
	Name string
	Type ColType
}

// IDColumn is the output column of mode d's IDs: integers for an int
// mode, else text (a time bin's start as RFC 3339).
func IDColumn(d *Dict) Column {
	if d.Kind == KindInt {
		return Column{d.Column, ColInt}
	}
	return Column{d.Column, ColString}
}

// Writer writes a table row by row: CSV or TSV text with a header line
// (gzip when the name ends in .gz), or Parquet (Snappy-compressed, the
// columns in the order given).
type Writer struct {
	f    Format
	cols []Column
	k    int // fields of the current row

	cw  *csv.Writer
	z   *gzip.Writer
	rec []string

	pw   *parquet.Writer
	rows []parquet.Row
	row  parquet.Row
}

// parquetBatch is the number of rows a Parquet Writer buffers before
// handing them to the library.
const parquetBatch = 4096

// NewWriter returns a Writer of a table of format f with columns cols to
// w; name (the file's name) decides gzip for text.
func NewWriter(w io.Writer, name string, f Format, cols []Column) (*Writer, error) {
	tw := &Writer{f: f, cols: cols}
	if f == Parquet {
		seen := map[string]bool{}
		fields := make([]parquet.Field, len(cols))
		for i, c := range cols {
			if seen[c.Name] {
				return nil, fmt.Errorf("column %s twice: a Parquet file's columns need distinct names", quote(c.Name))
			}
			seen[c.Name] = true
			var node parquet.Node
			switch c.Type {
			case ColInt:
				node = parquet.Leaf(parquet.Int64Type)
			case ColFloat:
				node = parquet.Leaf(parquet.DoubleType)
			default:
				node = parquet.String()
			}
			fields[i] = &field{Node: node, name: c.Name}
		}
		schema := parquet.NewSchema("dainx", orderedGroup{fields: fields})
		tw.pw = parquet.NewWriter(w, schema, parquet.Compression(&parquet.Snappy), parquet.CreatedBy("dainx", "", ""))
		tw.row = make(parquet.Row, 0, len(cols))
		return tw, nil
	}
	if strings.HasSuffix(strings.ToLower(name), ".gz") {
		tw.z = gzip.NewWriter(w)
		w = tw.z
	}
	tw.cw = csv.NewWriter(w)
	if f == TSV {
		tw.cw.Comma = '\t'
	}
	tw.rec = make([]string, 0, len(cols))
	for _, c := range cols {
		tw.rec = append(tw.rec, c.Name)
	}
	if err := tw.cw.Write(tw.rec); err != nil {
		return nil, err
	}
	tw.rec = tw.rec[:0]
	return tw, nil
}

// String adds a text field to the row.
func (w *Writer) String(s string) {
	if w.pw != nil {
		w.row = append(w.row, parquet.ByteArrayValue([]byte(s)).Level(0, 0, w.k))
	} else {
		w.rec = append(w.rec, s)
	}
	w.k++
}

// Int adds an integer field.
func (w *Writer) Int(x int64) {
	if w.pw != nil {
		w.row = append(w.row, parquet.Int64Value(x).Level(0, 0, w.k))
	} else {
		w.rec = append(w.rec, strconv.FormatInt(x, 10))
	}
	w.k++
}

// Float adds a number field (text: the shortest form that reads back as
// x; prec 32 for a float32 value).
func (w *Writer) Float(x float64, prec int) {
	if w.pw != nil {
		w.row = append(w.row, parquet.DoubleValue(x).Level(0, 0, w.k))
	} else {
		w.rec = append(w.rec, strconv.FormatFloat(x, 'g', -1, prec))
	}
	w.k++
}

// ID adds index i of mode d as its ID (IDColumn's type).
func (w *Writer) ID(d *Dict, i int32) {
	if d.Kind == KindInt && w.pw != nil {
		x, _ := strconv.ParseInt(d.IDs[i], 10, 64)
		w.Int(x)
		return
	}
	w.String(d.Label(i))
}

// EndRow ends a row; it must have had one field per column.
func (w *Writer) EndRow() error {
	if w.k != len(w.cols) {
		return fmt.Errorf("table: a row of %d fields for %d columns", w.k, len(w.cols))
	}
	w.k = 0
	if w.pw != nil {
		w.rows = append(w.rows, w.row)
		w.row = make(parquet.Row, 0, len(w.cols))
		if len(w.rows) == parquetBatch {
			return w.flushRows()
		}
		return nil
	}
	err := w.cw.Write(w.rec)
	w.rec = w.rec[:0]
	return err
}

func (w *Writer) flushRows() error {
	_, err := w.pw.WriteRows(w.rows)
	w.rows = w.rows[:0]
	return err
}

// Close writes what is buffered and the file's end (Parquet's footer,
// gzip's trailer). It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.pw != nil {
		if len(w.rows) > 0 {
			if err := w.flushRows(); err != nil {
				return err
			}
		}
		return w.pw.Close()
	}
	w.cw.Flush()
	if err := w.cw.Error(); err != nil {
		return err
	}
	if w.z != nil {
		return w.z.Close()
	}
	return nil
}

// orderedGroup is a Parquet group whose columns keep the order given
// (parquet.Group sorts them by name).
type orderedGroup struct {
	parquet.Group
	fields []parquet.Field
}

func (g orderedGroup) Fields() []parquet.Field { return g.fields }

// field is a named column of an orderedGroup. Rows are written as
// parquet.Row values, never from Go structs, so Value is not used.
type field struct {
	parquet.Node
	name string
}

func (f *field) Name() string                           { return f.name }
func (f *field) Value(base reflect.Value) reflect.Value { return reflect.Value{} }
