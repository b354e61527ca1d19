package table

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dainx/dainx/internal/bigmem"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tensor/internal/linemap"
)

// Options controls ReadFile.
type Options struct {
	// Format of the file; 0 means FormatOf(path) (CSV for a name it does
	// not know).
	Format Format
	// Known maps the IDs onto these dictionaries (a saved model's)
	// instead of making new ones: an ID they lack, or a time outside
	// their bins, is an error naming the line. The modes' bins come from
	// Known where the Spec gives none.
	Known *Dicts
	// Repeats accepts a cell twice (cells to predict); otherwise a
	// duplicate ID tuple is an error naming both lines.
	Repeats bool
}

// MaxLine is the longest line of a CSV or TSV table, in bytes.
var MaxLine = 16 << 20

// ReadFile reads the table at path as a tensor: one cell per row, whose
// index in mode n is the ID in spec.Modes[n]'s column (numbered from 0 in
// order of first appearance, or sorted with spec.Sorted) or, for a binned
// time column, its bin less the first bin; its value is the row's
// spec.Value column (0 when spec.Value is ""). It returns the cells in
// row order and the dictionaries that map the indices back to the IDs.
//
// CSV and TSV (gzip detected by content) have a header line naming the
// columns; they are read as a stream, holding the cells and the
// dictionaries and at most one line (MaxLine bytes) besides. Parquet is
// read row group by row group, one page of each column used at a time.
//
// Bad input is a *tensor.ParseError naming the file, the line (Parquet:
// the row) and the column: a column the header lacks, a row with the
// wrong number of fields, an empty or null ID, a value that is not a
// finite number, a time that does not parse, a duplicate ID tuple (both
// lines), an ID or time that Known lacks, no rows.
func ReadFile(path string, spec Spec, opt Options) (*tensor.COO, *Dicts, error) {
	f := opt.Format
	if f == 0 {
		f, _ = FormatOf(path)
		if f == 0 {
			f = CSV
		}
	}
	spec, err := Resolve(spec, opt.Known)
	if err != nil {
		return nil, nil, err
	}
	b := newBuilder(path, spec, opt)
	b.table = f
	if f == Parquet {
		b.rowWord = true
		err = readParquet(path, b)
	} else {
		comma := ','
		if f == TSV {
			comma = '\t'
		}
		err = readCSVFile(path, comma, b)
	}
	if err != nil {
		return nil, nil, err
	}
	return b.finish()
}

// Resolve checks spec (against known, when given: as many modes, the
// same bins) and takes the time bins known has where spec gives none.
// ReadFile calls it; a caller may call it first to tell a command line
// that does not fit a model from bad input.
func Resolve(spec Spec, known *Dicts) (Spec, error) {
	if len(spec.Modes) == 0 {
		return spec, fmt.Errorf("no mode column")
	}
	for _, m := range spec.Modes {
		if m.Column == spec.Value {
			return spec, fmt.Errorf("column %q is both a mode (-index) and the value (-value)", m.Column)
		}
	}
	if known == nil {
		return spec, nil
	}
	if len(spec.Modes) != len(known.Modes) {
		return spec, fmt.Errorf("-index names %d columns, the model has %d modes (%s)", len(spec.Modes), len(known.Modes), FormatIndex(known.Spec().Modes))
	}
	if err := MatchColumns(spec, known); err != nil {
		return spec, err
	}
	modes := slices.Clone(spec.Modes)
	for n, k := range known.Modes {
		m := &modes[n]
		switch {
		case k.Kind == KindTime && !m.Bin.IsTime():
			m.Bin = k.Bin
		case k.Kind == KindTime && m.Bin != k.Bin:
			return spec, fmt.Errorf("column %q: bins of %s, the model's mode %d (%s) has bins of %s", m.Column, m.Bin, n+1, k.Column, k.Bin)
		case k.Kind != KindTime && m.Bin.IsTime():
			return spec, fmt.Errorf("column %q: binned by %s, but the model's mode %d (%s) holds IDs", m.Column, m.Bin, n+1, k.Column)
		}
	}
	spec.Modes = modes
	return spec, nil
}

// MatchColumns checks that spec's mode columns are known's, by name and
// in known's order: a mode's IDs are looked up in (or added to) the
// dictionary of the mode of the same place, so -index item,user on a
// model of user,item would take item IDs for users. The error names the
// columns: those given in another order (a swap), or the first that the
// model lacks, and the model's modes (its -index).
func MatchColumns(spec Spec, known *Dicts) error {
	want := known.Spec().Modes
	at := map[string]int{}
	for n, m := range want {
		at[m.Column] = n
	}
	var moved []string
	for n, m := range spec.Modes {
		k, ok := at[m.Column]
		if !ok {
			return fmt.Errorf("column %s (mode %d) is not one of the model's: its modes are the columns %s, in that order", quote(m.Column), n+1, FormatIndex(want))
		}
		if k != n {
			moved = append(moved, fmt.Sprintf("%s is the model's mode %d, not %d", quote(m.Column), k+1, n+1))
		}
	}
	if len(spec.Modes) != len(want) {
		return fmt.Errorf("%d columns, the model has %d modes: the columns %s", len(spec.Modes), len(want), FormatIndex(want))
	}
	if len(moved) > 0 {
		return fmt.Errorf("the model's columns in another order (%s): give them as the model's modes, %s", strings.Join(moved, "; "), FormatIndex(want))
	}
	return nil
}

// builder gathers the cells of a table row by row.
type builder struct {
	file    string
	table   Format
	spec    Spec
	known   *Dicts
	repeats bool
	rowWord bool // errors name "row N" (Parquet), not the line
	order   int
	modes   []modeState
	idx     []int32
	val     []float64
	lines   linemap.Map
	rows    int
	// read and size, when both known, size the cells from the share of
	// the file read (grow).
	read func() int64
	size int64
}

// modeState is one mode's dictionary while a table is read.
type modeState struct {
	Mode
	kind   string // forced by a typed (Parquet) column, else "" (by content)
	ids    map[string]int32
	list   []string
	allInt bool // every ID a canonical int64
	allDec bool // every ID a canonical decimal integer of any size (a UINT64 above 2⁶³−1)
	allNum bool // every ID a finite number
	known  *Dict
	// Time modes: indices are bin − base (the first row's bin) until
	// finish subtracts lo.
	base     int64
	haveBase bool
	lo, hi   int64
}

func newBuilder(file string, spec Spec, opt Options) *builder {
	b := &builder{file: file, spec: spec, known: opt.Known, repeats: opt.Repeats, order: len(spec.Modes), size: -1}
	b.modes = make([]modeState, b.order)
	for n, m := range spec.Modes {
		s := &b.modes[n]
		s.Mode = m
		s.allInt, s.allNum, s.allDec = true, true, true
		if opt.Known != nil {
			s.known = opt.Known.Modes[n]
		} else if !m.Bin.IsTime() {
			s.ids = map[string]int32{}
		}
	}
	return b
}

// errf returns a *tensor.ParseError at line (a row for Parquet) about
// column col ("" for none).
func (b *builder) errf(line int, col string, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if col != "" {
		msg = fmt.Sprintf("column %s: %s", quote(col), msg)
	}
	if b.rowWord {
		if line > 0 {
			msg = fmt.Sprintf("row %d: %s", line, msg)
		}
		return &tensor.ParseError{File: b.file, Msg: msg}
	}
	return &tensor.ParseError{File: b.file, Line: line, Msg: msg}
}

// id appends the index of ID s (its text; s may be a view of a buffer
// that changes, it is copied when kept) in mode n.
func (b *builder) id(n int, s string, line int) error {
	m := &b.modes[n]
	if s == "" {
		return b.errf(line, m.Column, "empty ID")
	}
	if len(s) > MaxID {
		return b.errf(line, m.Column, "ID of %d bytes: above the limit of %d", len(s), MaxID)
	}
	if m.known != nil {
		i, ok := m.known.Lookup(s)
		if !ok {
			return b.errf(line, m.Column, "unknown ID %s: the model was trained without it (it knows %d IDs of %s)", tensor.Echo(s), m.known.Size, m.known.Column)
		}
		b.idx = append(b.idx, i)
		return nil
	}
	i, ok := m.ids[s]
	if !ok {
		if !utf8.ValidString(s) {
			return b.errf(line, m.Column, "ID %s is not UTF-8 text", tensor.Echo(s))
		}
		if len(m.list) >= tensor.MaxDim {
			return b.errf(line, m.Column, "more than %d distinct IDs", tensor.MaxDim)
		}
		s = strings.Clone(s)
		i = int32(len(m.list))
		m.list = append(m.list, s)
		m.ids[s] = i
		if m.allInt {
			x, err := strconv.ParseInt(s, 10, 64)
			m.allInt = err == nil && strconv.FormatInt(x, 10) == s
		}
		if m.allDec && !m.allInt {
			m.allDec = canonicalInt(s)
		}
		if m.allNum && !m.allInt {
			x, err := strconv.ParseFloat(s, 64)
			m.allNum = err == nil && !math.IsNaN(x) && !math.IsInf(x, 0)
		}
	}
	b.idx = append(b.idx, i)
	return nil
}

// timeText appends the index of the time s in mode n (ParseTime).
func (b *builder) timeText(n int, s string, line int) error {
	sec, err := ParseTime(s)
	if err != nil {
		why := ""
		if err != errNotTime {
			why = " (" + err.Error() + ")"
		}
		return b.errf(line, b.modes[n].Column, "%s is not a time%s: want Unix seconds or ISO 8601 / RFC 3339 text such as 2018-09-24T03:27:04Z", tensor.Echo(s), why)
	}
	return b.time(n, sec, line)
}

// time appends the index of the time sec (Unix seconds) in mode n.
func (b *builder) time(n int, sec int64, line int) error {
	m := &b.modes[n]
	if sec < minTime || sec > maxTime {
		return b.errf(line, m.Column, "time %d s is out of range (years 1 to 9999)", sec)
	}
	bin := m.Bin.Of(sec)
	if m.known != nil {
		i := bin - m.known.First
		if i < 0 || i >= int64(m.known.Size) {
			return b.errf(line, m.Column, "time %s falls in the bin starting %s, outside the model's %d bins of %s from %s", time.Unix(sec, 0).UTC().Format(time.RFC3339), m.Bin.Label(bin), m.known.Size, m.Bin, m.known.Origin())
		}
		b.idx = append(b.idx, int32(i))
		return nil
	}
	if !m.haveBase {
		m.base, m.haveBase = bin, true
	}
	rel := bin - m.base
	lo, hi := min(m.lo, rel), max(m.hi, rel)
	if hi-lo >= tensor.MaxDim {
		return b.errf(line, m.Column, "the times span more than %d bins of %s", tensor.MaxDim, m.Bin)
	}
	m.lo, m.hi = lo, hi
	b.idx = append(b.idx, int32(rel))
	return nil
}

// value appends the value text s.
func (b *builder) value(s string, line int) error {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		if s == "" {
			return b.errf(line, b.spec.Value, "empty value")
		}
		return b.errf(line, b.spec.Value, "value %s is not a number", tensor.Echo(s))
	}
	return b.valueFloat(x, line)
}

func (b *builder) valueFloat(x float64, line int) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return b.errf(line, b.spec.Value, "value %v is not finite", x)
	}
	if math.Abs(x) > tensor.MaxValue {
		return b.errf(line, b.spec.Value, "value %v is too large: its square overflows float32 (|value| must be at most %.8g); rescale the values", x, tensor.MaxValue)
	}
	b.val = append(b.val, x)
	return nil
}

// endRow ends the row on line (its first line).
func (b *builder) endRow(line int) {
	b.lines.Add(b.rows, line)
	b.rows++
	if len(b.val) == cap(b.val) {
		b.grow()
	}
}

// grow makes room for more cells. When the file's size is known, once 4
// MiB of it are read the rows still to come are estimated from the share
// read (5% over), so a file is usually sized once; else (a pipe, gzip)
// the capacity doubles, then grows by a quarter from 2²⁰ cells. The old
// arrays of a large growth are handed back to the operating system at
// once (debug.FreeOSMemory), so that the peak RSS is about the cells
// held at the last growth, not the sum of every growth.
func (b *builder) grow() {
	n := len(b.val)
	c := max(2*n, 4096)
	if n >= 1<<20 {
		c = n + n/4
	}
	if b.read != nil && b.size > 0 {
		if r := b.read(); r >= 4<<20 && r < b.size {
			est := float64(n) * float64(b.size) / float64(r) * 1.05
			if est < float64(tensor.MaxDim) {
				c = max(n+n/16+1024, int(est))
			}
		}
	}
	v := bigmem.Make[float64](n, c)
	copy(v, b.val)
	x := bigmem.Make[int32](len(b.idx), c*b.order)
	copy(x, b.idx)
	large := cap(b.val)*8 >= 64<<20
	b.val, b.idx = v, x
	if large {
		debug.FreeOSMemory()
	}
}

// finish turns the gathered cells into the tensor and its dictionaries.
func (b *builder) finish() (*tensor.COO, *Dicts, error) {
	if b.rows == 0 {
		return nil, nil, &tensor.ParseError{File: b.file, Msg: "no rows"}
	}
	d := &Dicts{Table: b.table, Value: b.spec.Value, Sorted: b.spec.Sorted}
	dims := make([]int, b.order)
	for n := range b.modes {
		m := &b.modes[n]
		switch {
		case m.known != nil:
			d.Modes = append(d.Modes, m.known)
		case m.Bin.IsTime():
			if m.lo != 0 {
				for k := n; k < len(b.idx); k += b.order {
					b.idx[k] -= int32(m.lo)
				}
			}
			d.Modes = append(d.Modes, &Dict{Column: m.Column, Kind: KindTime, Bin: m.Bin, First: m.base + m.lo, Size: int(m.hi-m.lo) + 1})
		default:
			if b.spec.Sorted {
				m.sortIDs(b.idx, n, b.order)
			}
			kind := m.kind
			if kind == "" || (kind == KindInt && !m.allInt) {
				// By content; or a typed integer column holding an ID
				// beyond int64 (a UINT64 above 2⁶³−1), kept exactly as
				// text, as a CSV table's would be.
				kind = KindString
				if m.allInt {
					kind = KindInt
				}
			}
			d.Modes = append(d.Modes, &Dict{Column: m.Column, Kind: kind, IDs: m.list, Size: len(m.list), index: m.ids})
		}
		dims[n] = d.Modes[n].Size
	}
	t := &tensor.COO{Dims: dims, Idx: b.idx[:b.rows*b.order], Val: b.val[:b.rows]}
	if !b.repeats {
		if k, first, dup := tensor.FindDuplicate(dims, t.Idx, b.rows); dup {
			var cell []string
			for n, i := range t.Cell(k) {
				cell = append(cell, d.Modes[n].Column+"="+tensor.Echo(d.Modes[n].Label(i)))
			}
			where := "line"
			if b.rowWord {
				where = "row"
			}
			return nil, nil, b.errf(b.lines.LineOf(k), "", "duplicate cell (%s), first on %s %d", strings.Join(cell, ", "), where, b.lines.LineOf(first))
		}
	}
	return t, d, nil
}

// sortIDs renumbers mode n's IDs in sorted order (numbers as numbers when
// every ID is one: integers exactly, of any size, others as float64 with
// ties by text; else by text) and its indices in idx.
func (m *modeState) sortIDs(idx []int32, n, order int) {
	perm := make([]int32, len(m.list)) // sorted position → old index
	for i := range perm {
		perm[i] = int32(i)
	}
	switch {
	case m.allInt:
		v := make([]int64, len(m.list))
		for i, s := range m.list {
			v[i], _ = strconv.ParseInt(s, 10, 64)
		}
		sort.Slice(perm, func(a, b int) bool { return v[perm[a]] < v[perm[b]] })
	case m.allDec: // integers beyond int64: exactly, by their text
		sort.Slice(perm, func(a, b int) bool { return intTextLess(m.list[perm[a]], m.list[perm[b]]) })
	case m.allNum:
		v := make([]float64, len(m.list))
		for i, s := range m.list {
			v[i], _ = strconv.ParseFloat(s, 64)
		}
		sort.Slice(perm, func(a, b int) bool {
			x, y := v[perm[a]], v[perm[b]]
			if x != y {
				return x < y
			}
			return m.list[perm[a]] < m.list[perm[b]]
		})
	default:
		sort.Slice(perm, func(a, b int) bool { return m.list[perm[a]] < m.list[perm[b]] })
	}
	newIdx := make([]int32, len(m.list)) // old index → new
	list := make([]string, len(m.list))
	for p, old := range perm {
		newIdx[old] = int32(p)
		list[p] = m.list[old]
		m.ids[list[p]] = int32(p)
	}
	m.list = list
	for k := n; k < len(idx); k += order {
		idx[k] = newIdx[idx[k]]
	}
}

// canonicalInt reports whether s is a decimal integer as
// strconv.FormatInt would write one, of any size: an optional '-', then
// "0" or digits without a leading 0 ("-0" is not one).
func canonicalInt(s string) bool {
	d := strings.TrimPrefix(s, "-")
	if d == "" || (d[0] == '0' && (len(d) > 1 || len(s) > 1)) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// intTextLess orders two canonical decimal integers (canonicalInt) of
// any size by value.
func intTextLess(a, b string) bool {
	na, nb := a[0] == '-', b[0] == '-'
	switch {
	case na != nb:
		return na
	case a == b:
		return false
	case len(a) != len(b):
		return (len(a) < len(b)) != na
	}
	return (a < b) != na
}

// openText opens path for reading, through gzip when its content is
// gzip; it returns the reader, a function giving the raw bytes read so
// far and the raw size (-1 when compressed, since the text's size is then
// not known).
func openText(path string) (io.Reader, func() int64, int64, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	size := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	cr := &countingReader{r: f}
	br := bufio.NewReaderSize(cr, 1<<16)
	closeAll := func() { f.Close() }
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, 0, nil, &tensor.ParseError{File: path, Msg: "corrupt gzip stream: " + err.Error()}
		}
		return z, nil, -1, func() { z.Close(); f.Close() }, nil
	}
	return br, func() int64 { return cr.n }, size, closeAll, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
