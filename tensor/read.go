package tensor

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// ReadOptions controls Read and ReadFile.
type ReadOptions struct {
	// Format of the input, as decided by the caller (usually
	// FormatOf(path)). It only sets the default index base.
	Format Format
	// IndexBase is the number that denotes the first entity of a mode in the
	// file: -1 means the format's default (TSV 0, TNS 1); otherwise any value
	// in 0..MaxDim. It is subtracted from every index read.
	IndexBase int
}

// maxLine is the longest line Read accepts.
const maxLine = 64 << 20

// ReadFile reads a tensor file (plain or gzip-compressed, detected by
// content). Bad content gives a *ParseError with File = path; failing to
// open the file gives the *fs.PathError from os.Open.
func ReadFile(path string, opt ReadOptions) (*COO, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path, opt)
}

// Read reads a tensor from r (plain or gzip-compressed, detected by content);
// name is used in error messages. Bad content (see the package doc) gives a
// *ParseError; an invalid opt.IndexBase gives a plain error. The result has
// Dims[n] = max index of mode n + 1 and the cells in file order.
func Read(r io.Reader, name string, opt ReadOptions) (*COO, error) {
	base, err := resolveBase(opt.Format, opt.IndexBase)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(r, 1<<16)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &ParseError{File: name, Msg: "corrupt gzip stream: " + err.Error()}
		}
		defer zr.Close()
		src = zr
	} else if _, err := br.Peek(1); err != nil && err != io.EOF {
		return nil, &ParseError{File: name, Msg: "read: " + err.Error()}
	}
	p := parser{name: name, base: base}
	if err := p.run(src); err != nil {
		return nil, err
	}
	if len(p.val) == 0 {
		return nil, &ParseError{File: name, Msg: "no cells"}
	}
	t := &COO{Dims: make([]int, p.order), Idx: p.idx, Val: p.val}
	for m, x := range p.maxIdx {
		t.Dims[m] = int(x) + 1
	}
	if k, first, dup := findDuplicate(t.Dims, t.Idx, len(t.Val)); dup {
		return nil, &ParseError{File: name, Line: p.lines[k],
			Msg: fmt.Sprintf("duplicate cell %s, first on line %d", fmtCell(t.Cell(k), base), p.lines[first])}
	}
	return t, nil
}

type parser struct {
	name   string
	base   int64
	order  int // 0 until the first data line
	idx    []int32
	val    []float64
	lines  []int // line number of each cell
	maxIdx []int32
	fields [][]byte
}

func (p *parser) errf(line int, format string, args ...any) error {
	return &ParseError{File: p.name, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) run(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), maxLine)
	line := 0
	for sc.Scan() {
		line++
		if err := p.line(sc.Bytes(), line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return p.errf(line+1, "line longer than %d bytes", maxLine)
		}
		var msg string
		switch {
		case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader),
			errors.Is(err, io.ErrUnexpectedEOF):
			msg = "corrupt gzip stream"
		default:
			msg = "read error"
		}
		return p.errf(0, "%s after line %d: %v", msg, line, err)
	}
	return nil
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// line parses one line (without its '\n').
func (p *parser) line(b []byte, line int) error {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	fs := p.fields[:0]
	for i := 0; i < len(b); {
		for i < len(b) && isBlank(b[i]) {
			i++
		}
		if i == len(b) {
			break
		}
		if len(fs) == 0 && b[i] == '#' {
			return nil // comment line
		}
		j := i
		for j < len(b) && !isBlank(b[j]) {
			j++
		}
		fs = append(fs, b[i:j])
		i = j
	}
	p.fields = fs
	if len(fs) == 0 {
		return nil // blank line
	}
	if p.order == 0 {
		if len(fs) < 2 {
			return p.errf(line, "want at least 2 fields (indices and a value), got %d", len(fs))
		}
		p.order = len(fs) - 1
		p.maxIdx = make([]int32, p.order)
	}
	if len(fs) != p.order+1 {
		what := "indices"
		if p.order == 1 {
			what = "index"
		}
		return p.errf(line, "want %d fields (%d %s and a value), got %d", p.order+1, p.order, what, len(fs))
	}
	for m, f := range fs[:p.order] {
		v, ok, big := parseInt(f)
		if !ok {
			return p.errf(line, "index %d (mode %d): %q is not an integer", m+1, m+1, f)
		}
		neg := len(f) > 0 && f[0] == '-'
		if big {
			if neg {
				return p.errf(line, "negative index %s in mode %d", f, m+1)
			}
			return p.errf(line, "index %s in mode %d does not fit in int32", f, m+1)
		}
		x := v - p.base
		if x < 0 {
			return p.errf(line, "negative index %d in mode %d (%d-based file has %s)", x, m+1, p.base, f)
		}
		if x > MaxDim-1 {
			return p.errf(line, "index %s in mode %d does not fit in int32", f, m+1)
		}
		p.idx = append(p.idx, int32(x))
		if int32(x) > p.maxIdx[m] {
			p.maxIdx[m] = int32(x)
		}
	}
	vf := fs[p.order]
	v, err := strconv.ParseFloat(string(vf), 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return p.errf(line, "value %q is out of range for float64", vf)
		}
		return p.errf(line, "value %q is not a number", vf)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return p.errf(line, "value %q is not finite", vf)
	}
	p.val = append(p.val, v)
	p.lines = append(p.lines, line)
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
