package tensor

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"unsafe"

	"github.com/dainx/dainx/tensor/internal/linemap"
)

// ReadOptions controls Read and ReadFile.
type ReadOptions struct {
	// Format of the input, as decided by the caller (usually
	// FormatOf(path)). For TSV and TNS it only sets the default index base
	// (the text reader accepts either layout); BIN selects the binary
	// reader.
	Format Format
	// IndexBase is the number that denotes the first entity of a mode in the
	// file: -1 means the format's default (TSV 0, TNS 1, BIN 0); otherwise
	// any value in 0..MaxDim. It is subtracted from every index read.
	IndexBase int

	// serial selects the single-goroutine text parser (tests compare the
	// two); blockSize overrides the parallel parser's block size.
	serial    bool
	blockSize int
}

// maxLine is the longest line Read accepts (a variable for tests).
var maxLine = 64 << 20

// MaxOrder is the largest order (number of modes) of a tensor that Read
// accepts, in text as in .bin (and model.MaxOrder): a first data line of
// more than MaxOrder+1 fields is refused before anything is sized by it.
const MaxOrder = 1024

// maxFields is the most fields splitFields keeps of a line: enough to
// tell a line of too many fields from one of MaxOrder+1; the rest are
// only counted, so no line sizes a slice by its fields.
const maxFields = MaxOrder + 2

// ReadFile reads a tensor file (plain or gzip-compressed, detected by
// content) in the format opt.Format. Bad content gives a *ParseError with
// File = path; failing to open the file gives the *fs.PathError from
// os.Open.
func ReadFile(path string, opt ReadOptions) (*COO, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path, opt)
}

// Read reads a tensor from r (plain or gzip-compressed, detected by content)
// in the format opt.Format; name is used in error messages. Bad content (see
// the package doc) gives a *ParseError; an invalid opt.IndexBase gives a
// plain error. For the text formats the result has Dims[n] = max index of
// mode n + 1; for BIN, Dims are the mode sizes stored in the file. The cells
// are in file order.
//
// Text is parsed on all cores (GOMAXPROCS goroutines, blocks of a few MiB
// cut at line ends); the result and the error, the first bad line in file
// order, are those of a line-by-line parse.
func Read(r io.Reader, name string, opt ReadOptions) (*COO, error) {
	base, err := ResolveIndexBase(opt.Format, opt.IndexBase)
	if err != nil {
		return nil, err
	}
	size := sizeOf(r)
	cr := &countingReader{r: r}
	br := bufio.NewReaderSize(cr, 1<<16)
	var src io.Reader = br
	gzipped := false
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &ParseError{File: name, Msg: "corrupt gzip stream: " + err.Error()}
		}
		defer zr.Close()
		src = zr
		gzipped = true
	} else if _, err := br.Peek(1); err != nil && err != io.EOF {
		return nil, &ParseError{File: name, Msg: "read: " + err.Error()}
	}
	if opt.Format == BIN {
		if gzipped {
			size = -1
		}
		return readBin(src, name, base, size)
	}
	if opt.serial {
		return readSerial(src, name, base)
	}
	return readParallel(src, name, base, opt.blockSize, cr, size, gzipped)
}

// sizeOf returns the number of bytes left in r when r can tell (an
// *os.File on a regular file, a *bytes.Reader, a *strings.Reader), else -1.
func sizeOf(r io.Reader) int64 {
	switch v := r.(type) {
	case interface{ Len() int }:
		return int64(v.Len())
	case *os.File:
		fi, err := v.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return -1
		}
		off, err := v.Seek(0, io.SeekCurrent)
		if err != nil || off > fi.Size() {
			return -1
		}
		return fi.Size() - off
	}
	return -1
}

// countingReader counts the bytes read through it (the parallel parser
// uses the count to size its result from the bytes still to come).
type countingReader struct {
	r io.Reader
	n int64 // read by one goroutine at a time (Read happens-before the use)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// readSerial is the line-by-line parser: the reference the parallel one
// must match.
func readSerial(src io.Reader, name string, base int64) (*COO, error) {
	p := parser{name: name, base: base}
	if err := p.run(src); err != nil {
		return nil, err
	}
	return finish(name, base, p.order, p.idx, p.val, p.maxIdx, &p.lines)
}

// finish builds the COO of a parsed text file and checks it for duplicate
// cells, naming both lines through lines.
func finish(name string, base int64, order int, idx []int32, val []float64, maxIdx []int32, lines *linemap.Map) (*COO, error) {
	if len(val) == 0 {
		return nil, &ParseError{File: name, Msg: "no cells"}
	}
	t := &COO{Dims: make([]int, order), Idx: idx, Val: val}
	for m, x := range maxIdx {
		t.Dims[m] = int(x) + 1
	}
	if k, first, dup := findDuplicate(t.Dims, t.Idx, len(t.Val)); dup {
		return nil, &ParseError{File: name, Line: lines.LineOf(k),
			Msg: fmt.Sprintf("duplicate cell %s, first on line %d", fmtCell(t.Cell(k), base), lines.LineOf(first))}
	}
	return t, nil
}

type parser struct {
	name   string
	base   int64
	order  int // 0 until the first data line
	idx    []int32
	val    []float64
	lines  linemap.Map
	maxIdx []int32
	fields [][]byte
}

func (p *parser) errf(line int, format string, args ...any) error {
	return &ParseError{File: p.name, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) run(r io.Reader) error {
	sc := NewLineScanner(r, maxLine)
	line := 0
	for sc.Scan() {
		line++
		n := len(p.val)
		if err := p.line(sc.Bytes(), line); err != nil {
			return err
		}
		if len(p.val) > n {
			p.lines.Add(n, line)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return p.errf(line+1, "line longer than the limit of %d bytes", maxLine)
		}
		return ReadError(p.name, line, err)
	}
	return nil
}

// ReadError is the *ParseError (line 0) for input name whose reading
// failed, other than at its end, after line whole lines: "truncated gzip
// stream (unexpected EOF) after line N" when the input ends inside a
// gzip stream (a file cut short, a download stopped), "corrupt gzip
// stream after line N: …" for a bad checksum or header, else "read error
// after line N: …". A reader gives no partial line before such an error
// (NewLineScanner), so that a truncated file is not reported as a short
// line.
func ReadError(name string, line int, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &ParseError{File: name, Msg: fmt.Sprintf("truncated gzip stream (unexpected EOF) after line %d", line)}
	}
	return &ParseError{File: name, Msg: fmt.Sprintf("%s after line %d: %v", gzipOrRead(err), line, err)}
}

// NewLineScanner returns a scanner of the lines of r (bufio.ScanLines:
// without '\n' and one '\r') of at most max bytes (longer: Err is
// bufio.ErrTooLong). Unlike a bufio.Scanner's, its last token is never
// the partial line before a failed read (Err other than the input's end,
// e.g. a truncated gzip stream): those bytes are not a line, and Err
// reports the failure after the whole lines (ReadError).
func NewLineScanner(r io.Reader, max int) *bufio.Scanner {
	er := &errRecorder{r: r}
	sc := bufio.NewScanner(er)
	sc.Buffer(make([]byte, min(1<<20, max)), max)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if atEOF && er.err != nil && er.err != io.EOF && bytes.IndexByte(data, '\n') < 0 {
			return 0, nil, nil // a partial line cut by the failure
		}
		return bufio.ScanLines(data, atEOF)
	})
	return sc
}

// errRecorder keeps the last error of reading r.
type errRecorder struct {
	r   io.Reader
	err error
}

func (e *errRecorder) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// dropCR drops one trailing '\r' (what bufio.ScanLines does to a line).
func dropCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

// splitFields appends the blank-separated fields of line b (without its
// '\n' and with one '\r' already dropped) to fs[:0], at most maxFields of
// them, and returns them and the number of fields of the line: none for a
// blank or comment line.
func splitFields(b []byte, fs [][]byte) ([][]byte, int) {
	b = dropCR(b)
	fs = fs[:0]
	n := 0
	for i := 0; i < len(b); {
		for i < len(b) && isBlank(b[i]) {
			i++
		}
		if i == len(b) {
			break
		}
		if n == 0 && b[i] == '#' {
			return fs[:0], 0 // comment line
		}
		j := i
		for j < len(b) && !isBlank(b[j]) {
			j++
		}
		if n < maxFields {
			fs = append(fs, b[i:j])
		}
		n++
		i = j
	}
	return fs, n
}

// line parses one line (without its '\n' and with one '\r' dropped).
func (p *parser) line(b []byte, line int) error {
	fs, nf := splitFields(b, p.fields)
	p.fields = fs
	if nf == 0 {
		return nil // blank or comment line
	}
	if p.order == 0 {
		if nf < 2 {
			return p.errf(line, "want at least 2 fields (indices and a value), got %d", nf)
		}
		if nf-1 > MaxOrder {
			return p.errf(line, "%d fields: a tensor has at most %d modes (%d indices and a value per line)", nf, MaxOrder, MaxOrder)
		}
		p.order = nf - 1
		p.maxIdx = make([]int32, p.order)
	}
	if nf != p.order+1 {
		what := "indices"
		if p.order == 1 {
			what = "index"
		}
		return p.errf(line, "want %d fields (%d %s and a value), got %d", p.order+1, p.order, what, nf)
	}
	for m, f := range fs[:p.order] {
		v, ok, big := parseInt(f)
		if !ok {
			if x, err := strconv.ParseFloat(string(f[:min(len(f), 64)]), 64); err == nil && len(f) <= 64 && x == math.Trunc(x) && math.Abs(x) >= MaxDim {
				// An integer in a number's notation (1e20), too large
				// for an index even if it were written as one.
				return p.errf(line, "index %s in mode %d is out of range: a %d-based file's indices go from %d to %d", echo(f, false), m+1, p.base, p.base, MaxDim-1+p.base)
			}
			return p.errf(line, "index %d (mode %d): %s is not an integer", m+1, m+1, echo(f, true))
		}
		neg := len(f) > 0 && f[0] == '-'
		if big {
			if neg {
				return p.errf(line, "negative index %s in mode %d", echo(f, false), m+1)
			}
			return p.errf(line, "index %s in mode %d is out of range: a %d-based file's indices go from %d to %d", echo(f, false), m+1, p.base, p.base, MaxDim-1+p.base)
		}
		x := v - p.base
		if x < 0 {
			return p.errf(line, "negative index %d in mode %d (%d-based file has %s)", x, m+1, p.base, echo(f, false))
		}
		if x > MaxDim-1 {
			return p.errf(line, "index %s in mode %d is out of range: a %d-based file's indices go from %d to %d", echo(f, false), m+1, p.base, p.base, MaxDim-1+p.base)
		}
		p.idx = append(p.idx, int32(x))
		if int32(x) > p.maxIdx[m] {
			p.maxIdx[m] = int32(x)
		}
	}
	vf := fs[p.order]
	// The string does not outlive the call on success; on failure only
	// errors.Is looks at the error, before vf's bytes can change.
	v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(vf), len(vf)), 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return p.errf(line, "value %s is out of range for float64", echo(vf, true))
		}
		return p.errf(line, "value %s is not a number", echo(vf, true))
	}
	if !valueOK(v) {
		return p.errf(line, "value %s %s", echo(vf, true), valueProblem(v))
	}
	p.val = append(p.val, v)
	return nil
}

// parseInt parses an optionally signed base-10 integer. ok is false when b
// is not such an integer; big is true when its magnitude exceeds 2^62 (v is
// then meaningless).
func parseInt(b []byte) (v int64, ok, big bool) {
	i := 0
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		i = 1
	}
	if i == len(b) {
		return 0, false, false
	}
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false, false
		}
		if v > (1<<62)/10 {
			big = true
			continue
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true, big
}
