package tensor

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/dainx/dainx/tensor/internal/linemap"
)

// This file is a process's share of a tensor (Part), the input of a run
// spread over several processes (dainx augment -dist mpi), and the reading
// of one share of a text tensor file: the file's bytes are cut into equal
// ranges, and a line belongs to the range that holds its first byte, so
// the shares partition the lines whatever the cut. The caller (cmd/dainx
// under -dist mpi) agrees the order, line numbers, dims and duplicates
// across the processes; nothing here communicates.

// Part is one process's share of a tensor's observed cells, the one type
// of a share (each rank's input to dain.RunOn): cells
// First … First+Cells.NNZ()−1, in file order, of the tensor's NNZ cells.
// Its Cells' Dims are the whole tensor's. A whole tensor t is the part
// {Cells: t, First: 0, NNZ: t.NNZ()}.
type Part struct {
	Cells *COO
	First int // the tensor's number (0-based) of the part's first cell
	NNZ   int // the tensor's cells
}

// PartLines are the lines of the byte range of a text file that ReadPart
// read.
type PartLines struct {
	N     int // lines that start in the range (the last may lack '\n')
	lines linemap.Map
}

// LineOf returns the line of cell k, counted from the range's first line (1).
func (l *PartLines) LineOf(k int) int { return l.lines.LineOf(k) }

// TextSize returns the size in bytes of the text of the file at path: the
// file's size, or for gzip the uncompressed size its trailer records
// (modulo 2³², so only a hint for larger or multi-member streams), and
// whether it is gzip.
func TextSize(path string) (size int64, gzipped bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	var magic [2]byte
	if n, _ := io.ReadFull(f, magic[:]); n < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return fi.Size(), false, nil
	}
	var tail [4]byte
	if fi.Size() < 18 {
		return 0, true, nil
	}
	if _, err := f.ReadAt(tail[:], fi.Size()-4); err != nil {
		return 0, true, err
	}
	return int64(binary.LittleEndian.Uint32(tail[:])), true, nil
}

// PartRange returns the byte range [lo, hi) of share k of n of a text of
// size bytes; the last share is open-ended (hi = MaxInt64), so that a size
// that is only a hint (gzip) still covers every line.
func PartRange(size int64, k, n int) (lo, hi int64) {
	lo = size / int64(n) * int64(k)
	if k == n-1 {
		return lo, math.MaxInt64
	}
	return lo, size / int64(n) * int64(k+1)
}

// section is a reader of the bytes of the lines that start in [lo, hi) of
// the text of a file (decompressed when gzip), counting the lines it
// delivers.
type section struct {
	f      *os.File
	zr     *gzip.Reader
	r      *bufio.Reader
	pos    int64 // text position of the next byte to deliver
	hi     int64
	done   bool
	nl     int  // '\n' delivered
	last   byte // the last byte delivered
	any    bool // whether a byte was delivered
	closer func()
}

// openSection opens the text of path at the first line that starts at or
// after lo.
func openSection(path string, lo, hi int64) (*section, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	s := &section{f: f, hi: hi}
	br := bufio.NewReaderSize(f, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, &ParseError{File: path, Msg: "corrupt gzip stream: " + err.Error()}
		}
		s.zr = zr
		s.r = bufio.NewReaderSize(zr, 1<<16)
	} else {
		if lo > 0 {
			if _, err := f.Seek(lo-1, io.SeekStart); err != nil {
				f.Close()
				return nil, err
			}
			br.Reset(f)
			s.pos = lo - 1
		}
		s.r = br
	}
	// Skip to lo−1, then to the start of the first line at or after lo.
	if lo > 0 {
		if n, err := io.CopyN(io.Discard, s.r, lo-1-s.pos); err != nil {
			s.pos += n
			s.done = true // the text ends before the range
			return s, s.readErr(err)
		}
		s.pos = lo - 1
		c, err := s.r.ReadByte()
		if err != nil {
			s.done = true
			return s, s.readErr(err)
		}
		s.pos++
		if c != '\n' {
			skip, err := s.r.ReadSlice('\n')
			for err == bufio.ErrBufferFull {
				s.pos += int64(len(skip))
				skip, err = s.r.ReadSlice('\n')
			}
			s.pos += int64(len(skip))
			if err != nil {
				s.done = true
				return s, s.readErr(err)
			}
		}
	}
	s.done = s.pos >= s.hi
	return s, nil
}

// readErr is nil for the end of the text, else the read error.
func (s *section) readErr(err error) error {
	if err == io.EOF {
		return nil
	}
	return &ParseError{File: s.f.Name(), Msg: fmt.Sprintf("%s: %v", gzipOrRead(err), err)}
}

// Read delivers the lines that start before hi.
func (s *section) Read(p []byte) (int, error) {
	if s.done {
		return 0, io.EOF
	}
	n, err := s.r.Read(p)
	// Cut after the first '\n' at or after hi−1: the next line starts at
	// or after hi.
	if cut := s.hi - 1 - s.pos; cut < int64(n) {
		from := max(cut, 0)
		if i := bytes.IndexByte(p[from:n], '\n'); i >= 0 {
			n = int(from) + i + 1
			s.done = true
			err = nil
		}
	}
	s.nl += bytes.Count(p[:n], []byte{'\n'})
	if n > 0 {
		s.last, s.any = p[n-1], true
	}
	s.pos += int64(n)
	if err == io.EOF {
		s.done = true
	}
	return n, err
}

// lineCount drains the section and returns its number of lines.
func (s *section) lineCount() (int, error) {
	if _, err := io.Copy(io.Discard, s); err != nil {
		return 0, s.readErr(err)
	}
	n := s.nl
	if s.any && s.last != '\n' {
		n++
	}
	return n, nil
}

func (s *section) Close() {
	if s.zr != nil {
		s.zr.Close()
	}
	s.f.Close()
}

// FirstOrder returns the order the first data line in the byte range
// [lo, hi) of path's text gives (its number of fields less one; -1 when
// that line has fewer than 2 fields or more than MaxOrder+1: ReadPart with
// order 0 reports it), or 0 when the range has no data line.
func FirstOrder(path string, lo, hi int64) (int, error) {
	s, err := openSection(path, lo, hi)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	sc := bufio.NewScanner(s)
	sc.Buffer(make([]byte, min(1<<20, maxLine)), maxLine)
	var fs [][]byte
	for sc.Scan() {
		var n int
		if fs, n = splitFields(sc.Bytes(), fs); n > 0 {
			if n < 2 || n-1 > MaxOrder {
				return -1, nil
			}
			return n - 1, nil
		}
	}
	return 0, nil // a line too long or a read error shows in ReadPart
}

// ReadPart parses the lines that start in the byte range [lo, hi) of the
// text of path (plain or gzip; text formats only) with the given tensor
// order (0: from the range's first data line), the index base of opt. It
// returns the range's cells as a Part and its lines, and on bad content a
// *ParseError whose Line counts from the range's first line; the lines'
// N is then still the number of lines of the whole range, so that the
// caller can number the lines of every range. What only the whole file
// tells is the range's own until the caller agrees it with the other
// ranges: the part's First is 0, its NNZ the range's cells, its Dims one
// more than the range's largest index of each mode (1 without cells).
func ReadPart(path string, opt ReadOptions, lo, hi int64, order int) (*Part, *PartLines, error) {
	if opt.Format == BIN {
		return nil, nil, fmt.Errorf("tensor: %s: a .bin file is not split by lines", path)
	}
	base, err := ResolveIndexBase(opt.Format, opt.IndexBase)
	if err != nil {
		return nil, nil, err
	}
	lines := &PartLines{}
	s, err := openSection(path, lo, hi)
	if s == nil {
		return nil, lines, err
	}
	defer s.Close()
	if err != nil {
		return nil, lines, err
	}
	p := parser{name: path, base: base}
	if order > 0 {
		p.order, p.maxIdx = order, make([]int32, order)
	}
	perr := p.run(s)
	n, cerr := s.lineCount()
	lines.N = n
	if perr != nil {
		return nil, lines, perr
	}
	if cerr != nil {
		return nil, lines, cerr
	}
	lines.lines = p.lines
	if p.order == 0 {
		p.order = order
	}
	dims := make([]int, p.order)
	for m := range dims {
		dims[m] = 1
		if p.maxIdx != nil {
			dims[m] = int(p.maxIdx[m]) + 1
		}
	}
	return &Part{Cells: &COO{Dims: dims, Idx: p.idx, Val: p.val}, NNZ: len(p.val)}, lines, nil
}

// DuplicateError is the error for cell (0-based indices) on line, which
// repeats the cell on line first: the one Read gives.
func DuplicateError(name string, base int64, line int, cell []int32, first int) error {
	return &ParseError{File: name, Line: line, Msg: fmt.Sprintf("duplicate cell %s, first on line %d", fmtCell(cell, base), first)}
}
