package table

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/dainx/dainx/tensor"
)

// colKind is how a Parquet column's values are read.
type colKind int

const (
	colInt      colKind = iota // INT32, INT64 (integers)
	colText                    // BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY (text)
	colFloat                   // FLOAT, DOUBLE
	colBool                    // BOOLEAN
	colTimeUnit                // INT64 TIMESTAMP: Int64 values of div per second
	colDate                    // INT32 DATE: days since the epoch
	colInt96                   // INT96 timestamps (Impala, Spark)
)

// pqColumn is one column of a Parquet table that a read uses.
type pqColumn struct {
	name  string
	index int // leaf column index
	kind  colKind
	div   int64 // colTimeUnit: values per second
	typ   string
}

// columnOf describes the top-level leaf column name of schema, or says
// why it cannot be read.
func columnOf(schema *parquet.Schema, name string) (pqColumn, string) {
	leaf, ok := schema.Lookup(name)
	if !ok || leaf.Node == nil || !leaf.Node.Leaf() {
		var cols []string
		for _, f := range schema.Fields() {
			cols = append(cols, f.Name())
		}
		return pqColumn{}, fmt.Sprintf("no column %s; the file has %s", quote(name), listCols(cols))
	}
	if leaf.MaxRepetitionLevel > 0 {
		return pqColumn{}, fmt.Sprintf("column %s is repeated (a list): want one value per row", quote(name))
	}
	t := leaf.Node.Type()
	c := pqColumn{name: name, index: leaf.ColumnIndex, typ: t.String()}
	lt := t.LogicalType()
	ct := t.ConvertedType()
	switch t.Kind() {
	case parquet.Int32:
		c.kind = colInt
		if (lt != nil && isDate(lt)) || (ct != nil && *ct == deprecated.Date) {
			c.kind = colDate
		}
	case parquet.Int64:
		c.kind = colInt
		if lt != nil {
			if ts, ok := lt.Value.(*format.TimestampType); ok && ts.Unit.Value != nil {
				c.kind, c.div = colTimeUnit, int64(1e9/ts.Unit.Value.Duration())
			}
		}
		if ct != nil && *ct == deprecated.TimestampMillis {
			c.kind, c.div = colTimeUnit, 1000
		} else if ct != nil && *ct == deprecated.TimestampMicros {
			c.kind, c.div = colTimeUnit, 1000000
		}
	case parquet.Int96:
		c.kind = colInt96
	case parquet.Float, parquet.Double:
		c.kind = colFloat
	case parquet.Boolean:
		c.kind = colBool
	case parquet.ByteArray, parquet.FixedLenByteArray:
		c.kind = colText
	default:
		return pqColumn{}, fmt.Sprintf("column %s has type %s", quote(name), c.typ)
	}
	return c, ""
}

func isDate(lt *format.LogicalType) bool {
	_, ok := lt.Value.(*format.DateType)
	return ok
}

// cursor reads one column chunk's values a page at a time.
type cursor struct {
	pages parquet.Pages
	page  parquet.Page
	vals  parquet.ValueReader
	buf   []parquet.Value
	i, n  int
	eof   bool // vals has no more values after buf[:n]
}

func (c *cursor) next() (parquet.Value, error) {
	for c.i >= c.n {
		if c.vals == nil || c.eof {
			if c.page != nil {
				parquet.Release(c.page)
				c.page = nil
			}
			p, err := c.pages.ReadPage()
			if err == io.EOF {
				return parquet.Value{}, errors.New("the column has fewer values than the row group has rows")
			}
			if err != nil {
				return parquet.Value{}, err
			}
			c.page, c.vals, c.eof = p, p.Values(), false
		}
		n, err := c.vals.ReadValues(c.buf)
		c.i, c.n = 0, n
		if err == io.EOF {
			c.eof = true
		} else if err != nil {
			return parquet.Value{}, err
		}
		if n == 0 && !c.eof {
			return parquet.Value{}, errors.New("a page gave no values")
		}
	}
	v := c.buf[c.i]
	c.i++
	return v, nil
}

func (c *cursor) close() {
	if c.page != nil {
		parquet.Release(c.page)
	}
	c.pages.Close()
}

// readParquet reads the Parquet table at path into b: row group by row
// group, the used columns' pages in step. A file the library cannot read
// (or that makes it panic) is a *tensor.ParseError.
func readParquet(path string, b *builder) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	row := 0
	defer func() {
		if r := recover(); r != nil {
			err = &tensor.ParseError{File: b.file, Msg: fmt.Sprintf("corrupt Parquet file (near row %d): %v", row+1, r)}
		}
	}()
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return &tensor.ParseError{File: b.file, Msg: fmt.Sprintf("not a Parquet file: %v", err)}
	}
	schema := pf.Schema()
	if n := len(schema.Columns()); n > MaxColumns {
		return &tensor.ParseError{File: b.file, Msg: fmt.Sprintf("%d columns: above the limit of %d", n, MaxColumns)}
	}
	var cols []pqColumn
	names := append(b.spec.Columns(), b.spec.Value)
	if b.spec.Value == "" {
		names = names[:len(names)-1]
	}
	for n, name := range names {
		c, why := columnOf(schema, name)
		if why != "" {
			return &tensor.ParseError{File: b.file, Msg: why}
		}
		isValue := n == b.order
		switch {
		case isValue && c.kind != colInt && c.kind != colFloat && c.kind != colText:
			return &tensor.ParseError{File: b.file, Msg: fmt.Sprintf("column %s (-value) has type %s: want numbers", quote(name), c.typ)}
		case !isValue && b.modes[n].Bin.IsTime():
			if c.kind == colBool {
				return &tensor.ParseError{File: b.file, Msg: fmt.Sprintf("column %s (a time) has type %s", quote(name), c.typ)}
			}
		case !isValue:
			switch c.kind {
			case colInt:
				b.modes[n].kind = KindInt
			case colText, colBool:
				b.modes[n].kind = KindString
			default:
				return &tensor.ParseError{File: b.file, Msg: fmt.Sprintf("column %s has type %s: IDs must be integers or text (bin a time column with %s:day, …)", quote(name), c.typ, name)}
			}
		}
		cols = append(cols, c)
	}
	var scratch []byte
	for _, rg := range pf.RowGroups() {
		chunks := rg.ColumnChunks()
		curs := make([]*cursor, len(cols))
		for i, c := range cols {
			if c.index < 0 || c.index >= len(chunks) {
				return &tensor.ParseError{File: b.file, Msg: fmt.Sprintf("column %s: no column chunk in a row group", quote(c.name))}
			}
			curs[i] = &cursor{pages: chunks[c.index].Pages(), buf: make([]parquet.Value, 1024)}
		}
		err := func() error {
			defer func() {
				for _, c := range curs {
					c.close()
				}
			}()
			for r := rg.NumRows(); r > 0; r-- {
				row++
				for i, c := range cols {
					v, err := curs[i].next()
					if err != nil {
						return b.errf(row, c.name, "%v", err)
					}
					if v.IsNull() {
						return b.errf(row, c.name, "null")
					}
					if i == b.order {
						err = b.pqValue(c, v, row)
					} else if b.modes[i].Bin.IsTime() {
						err = b.pqTime(i, c, v, row)
					} else {
						scratch, err = b.pqID(i, c, v, row, scratch)
					}
					if err != nil {
						return err
					}
				}
				if b.spec.Value == "" {
					b.valueFloat(0, row)
				}
				b.endRow(row)
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// pqID appends the index of the ID v of mode n.
func (b *builder) pqID(n int, c pqColumn, v parquet.Value, row int, scratch []byte) ([]byte, error) {
	switch c.kind {
	case colInt:
		scratch = strconv.AppendInt(scratch[:0], intOf(v), 10)
		return scratch, b.id(n, unsafe.String(unsafe.SliceData(scratch), len(scratch)), row)
	case colBool:
		return scratch, b.id(n, strconv.FormatBool(v.Boolean()), row)
	}
	bs := v.ByteArray()
	return scratch, b.id(n, unsafe.String(unsafe.SliceData(bs), len(bs)), row)
}

// pqTime appends the index of the time v of mode n.
func (b *builder) pqTime(n int, c pqColumn, v parquet.Value, row int) error {
	switch c.kind {
	case colInt:
		return b.time(n, intOf(v), row)
	case colTimeUnit:
		return b.time(n, floorDiv(v.Int64(), c.div), row)
	case colDate:
		return b.time(n, int64(v.Int32())*86400, row)
	case colInt96:
		i := v.Int96()
		nanos := int64(uint64(i[0]) | uint64(i[1])<<32)
		day := int64(i[2]) - 2440588 // Julian day of 1970-01-01
		return b.time(n, day*86400+floorDiv(nanos, 1e9), row)
	case colFloat:
		x := floatOf(v)
		if !(x >= minTime && x <= maxTime+1) {
			return b.errf(row, c.name, "time %v s is out of range (years 1 to 9999)", x)
		}
		return b.time(n, int64(floor(x)), row)
	}
	return b.timeText(n, string(v.ByteArray()), row)
}

// pqValue appends the value v.
func (b *builder) pqValue(c pqColumn, v parquet.Value, row int) error {
	switch c.kind {
	case colInt:
		return b.valueFloat(float64(intOf(v)), row)
	case colFloat:
		return b.valueFloat(floatOf(v), row)
	}
	return b.value(string(v.ByteArray()), row)
}

func intOf(v parquet.Value) int64 {
	if v.Kind() == parquet.Int32 {
		return int64(v.Int32())
	}
	return v.Int64()
}

func floatOf(v parquet.Value) float64 {
	if v.Kind() == parquet.Float {
		return float64(v.Float())
	}
	return v.Double()
}

func floor(x float64) float64 {
	t := float64(int64(x))
	if t > x {
		t--
	}
	return t
}
