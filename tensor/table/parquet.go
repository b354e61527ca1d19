package table

import (
	"errors"
	"fmt"
	"io"
	"math"
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
	name     string
	index    int // leaf column index
	kind     colKind
	div      int64 // colTimeUnit: values per second
	typ      string
	unsigned bool // colInt: UINT_8…UINT_64 (INT(n, false)): the physical value's bits are unsigned
	bits     int  // colInt: the integer's width, 8…64 (the physical width unless the type says less)
}

// columnOf describes the top-level leaf column name of schema, or says
// why it cannot be read.
func columnOf(schema *parquet.Schema, name string) (pqColumn, string) {
	leaf, ok := schema.Lookup(name)
	if !ok || leaf.Node == nil || !leaf.Node.Leaf() {
		var cols []string
		for _, f := range schema.Fields() {
			if f.Name() == name && !f.Leaf() {
				return pqColumn{}, fmt.Sprintf("column %s is %s, which is not supported: a column read must hold one integer, number or text value per row", quote(name), nestedKind(f))
			}
			cols = append(cols, f.Name())
		}
		return pqColumn{}, fmt.Sprintf("no column %s; the file has %s", quote(name), listCols(cols))
	}
	if leaf.MaxRepetitionLevel > 0 {
		return pqColumn{}, fmt.Sprintf("column %s is a repeated (LIST) column, which is not supported: a column read must hold one value per row", quote(name))
	}
	t := leaf.Node.Type()
	c := pqColumn{name: name, index: leaf.ColumnIndex, typ: t.String()}
	lt := t.LogicalType()
	ct := t.ConvertedType()
	if (lt != nil && isDecimal(lt)) || (ct != nil && *ct == deprecated.Decimal) {
		return pqColumn{}, fmt.Sprintf("column %s has type %s, which is not supported: want integers, numbers or text", quote(name), c.typ)
	}
	switch t.Kind() {
	case parquet.Int32:
		c.kind, c.bits = colInt, 32
		if (lt != nil && isDate(lt)) || (ct != nil && *ct == deprecated.Date) {
			c.kind = colDate
		}
		c.intType(lt, ct)
	case parquet.Int64:
		c.kind, c.bits = colInt, 64
		c.intType(lt, ct)
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

func isDecimal(lt *format.LogicalType) bool {
	_, ok := lt.Value.(*format.DecimalType)
	return ok
}

// nestedKind names the kind of the group field f for a message: "a LIST
// column", "a MAP column" or "a nested column (a group of N fields)".
func nestedKind(f parquet.Field) string {
	if lt := f.Type().LogicalType(); lt != nil {
		switch lt.Value.(type) {
		case *format.ListType:
			return "a LIST column"
		case *format.MapType:
			return "a MAP column"
		}
	}
	if ct := f.Type().ConvertedType(); ct != nil {
		switch *ct {
		case deprecated.List:
			return "a LIST column"
		case deprecated.Map, deprecated.MapKeyValue:
			return "a MAP column"
		}
	}
	return fmt.Sprintf("a nested column (a group of %d fields)", len(f.Fields()))
}

// intType sets c's signedness and width from the INT logical type or the
// INT_8…UINT_64 converted type of an integer column (else signed, the
// physical width).
func (c *pqColumn) intType(lt *format.LogicalType, ct *deprecated.ConvertedType) {
	if lt != nil {
		if it, ok := lt.Value.(*format.IntType); ok {
			c.unsigned = !it.IsSigned
			if b := int(it.BitWidth); b == 8 || b == 16 || b == 32 || b == 64 {
				c.bits = min(c.bits, b)
			}
			return
		}
	}
	if ct == nil {
		return
	}
	switch *ct {
	case deprecated.Uint8, deprecated.Uint16, deprecated.Uint32, deprecated.Uint64:
		c.unsigned = true
		c.bits = min(c.bits, 8<<(*ct-deprecated.Uint8))
	case deprecated.Int8, deprecated.Int16, deprecated.Int32, deprecated.Int64:
		c.bits = min(c.bits, 8<<(*ct-deprecated.Int8))
	}
}

// integer returns the integer v of the colInt column c exactly: as x, or,
// for an unsigned 64-bit value above 2⁶³−1 (UINT_64 stores 2⁶⁴−1 as the
// INT64 −1), as big (x is then 0). A value outside its type's range (a
// UINT_8 of 300, an INT_16 of −40000: a writer's error) is an error naming
// the type and the range.
func (c pqColumn) integer(v parquet.Value) (x int64, big uint64, err error) {
	switch {
	case v.Kind() == parquet.Int32 && c.unsigned:
		x = int64(uint32(v.Int32()))
	case v.Kind() == parquet.Int32:
		x = int64(v.Int32())
	case c.unsigned:
		if u := uint64(v.Int64()); u > math.MaxInt64 {
			return 0, u, nil // 64 bits: every value is in range
		}
		x = v.Int64()
	default:
		x = v.Int64()
	}
	if c.bits < 64 {
		lo, hi := -int64(1)<<(c.bits-1), int64(1)<<(c.bits-1)-1
		if c.unsigned {
			lo, hi = 0, int64(1)<<c.bits-1
		}
		if x < lo || x > hi {
			return 0, 0, fmt.Errorf("value %d is outside the range of its type %s, %d…%d", x, c.typ, lo, hi)
		}
	}
	return x, 0, nil
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
	if st.Mode()&(os.ModeNamedPipe|os.ModeSocket|os.ModeCharDevice) != 0 {
		return &tensor.ParseError{File: b.file, Msg: "Parquet needs a seekable file (a pipe cannot be read as Parquet): save it to a file first"}
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
		x, big, err := c.integer(v)
		if err != nil {
			return scratch, b.errf(row, c.name, "%v", err)
		}
		if big != 0 {
			scratch = strconv.AppendUint(scratch[:0], big, 10)
		} else {
			scratch = strconv.AppendInt(scratch[:0], x, 10)
		}
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
		x, big, err := c.integer(v)
		if err != nil {
			return b.errf(row, c.name, "%v", err)
		}
		if big != 0 {
			return b.errf(row, c.name, "time %d s is out of range (years 1 to 9999)", big)
		}
		return b.time(n, x, row)
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
		x, big, err := c.integer(v)
		if err != nil {
			return b.errf(row, c.name, "%v", err)
		}
		if big != 0 {
			return b.valueFloat(float64(big), row)
		}
		return b.valueFloat(float64(x), row)
	case colFloat:
		return b.valueFloat(floatOf(v), row)
	}
	return b.value(string(v.ByteArray()), row)
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
