package tensor

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"runtime"
	"sync"

	"github.com/dainx/dainx/internal/bigmem"
)

// SPLATT's binary coordinate format, as SPLATT's src/io.c writes it
// (tt_write_binary_file) and reads it (tt_read_binary_file). Every number is
// in the writing machine's byte order, which for every platform SPLATT runs
// on is little-endian; this package reads and writes little-endian. There
// is no padding:
//
//	int32       magic       0 (SPLATT_BIN_COORD); 1 is SPLATT_BIN_CSF, not read
//	uint64      idx_width   4 or 8: the size of every integer below
//	uint64      val_width   4 (float32) or 8 (float64)
//	idx         nmodes      the order N
//	idx         dims[N]     the mode sizes
//	idx         nnz         the number of cells
//	idx         ind[N][nnz] the indices, mode by mode: all of mode 1, then mode 2, …
//	val         vals[nnz]   the values
//
// where idx is an unsigned integer of idx_width bytes and val a float of
// val_width bytes. Indices are 0-based (SPLATT stores its in-memory indices
// as they are; its text reader shifts 1-based files to 0-based).

const (
	binHeaderSize = 20   // magic, idx_width, val_width
	binMagicCoord = 0    // SPLATT_BIN_COORD
	binMagicCSF   = 1    // SPLATT_BIN_CSF
	maxBinModes   = 1024 // the most modes readBin accepts (SPLATT's default build takes 8)
	binChunk      = 1 << 20
)

// binLayout is what a .bin header says.
type binLayout struct {
	iw, vw int   // index and value widths in bytes
	order  int   // N
	dims   []int // mode sizes
	nnz    int
	total  int64 // the file's size in bytes
}

func (l *binLayout) String() string {
	return fmt.Sprintf("%d modes, %d cells, %d-byte indices, %d-byte values", l.order, l.nnz, l.iw, l.vw)
}

// binInput is a .bin file being read in order: the reader and the bytes
// consumed so far, for messages.
type binInput struct {
	r    io.Reader
	name string
	off  int64
}

// fail returns the *ParseError of the file with the message.
func (in *binInput) fail(format string, args ...any) error {
	return &ParseError{File: in.name, Msg: fmt.Sprintf(format, args...)}
}

// read fills b; short is true when the input ended first.
func (in *binInput) read(b []byte) (short bool, err error) {
	n, err := readFull(in.r, b)
	in.off += int64(n)
	if err == io.EOF {
		return true, nil
	}
	if err != nil {
		return false, &ParseError{File: in.name, Msg: fmt.Sprintf("%s after byte %d: %v", gzipOrRead(err), in.off, err)}
	}
	return false, nil
}

// readBinHeader reads and checks the header of a .bin file: magic, widths,
// order, dims and nnz, and, when size (the file's bytes, or -1 when
// unknown) is known, that the file holds exactly the bytes the header
// promises. It leaves in just past the header.
func readBinHeader(in *binInput, size int64) (*binLayout, error) {
	var hdr [binHeaderSize]byte
	short, err := in.read(hdr[:])
	if err != nil {
		return nil, err
	}
	if in.off >= 4 { // a wrong magic number says more than a short file
		switch magic := int32(binary.LittleEndian.Uint32(hdr[0:])); magic {
		case binMagicCoord:
		case binMagicCSF:
			return nil, in.fail("a SPLATT CSF binary file (magic 1): only the coordinate format (magic 0) is read")
		default:
			hint := ""
			if looksLikeText(hdr[:]) {
				hint = "; it looks like text: give the text format (-format tsv or tns)"
			}
			return nil, in.fail("not a SPLATT binary coordinate file: magic number %d (first bytes % x), want 0%s", magic, hdr[:4], hint)
		}
	}
	if short {
		return nil, in.fail("truncated SPLATT .bin file: want at least the %d-byte header, found %d bytes", binHeaderSize, in.off)
	}
	l := &binLayout{}
	for _, w := range []struct {
		v    uint64
		what string
		dst  *int
	}{{binary.LittleEndian.Uint64(hdr[4:]), "index", &l.iw}, {binary.LittleEndian.Uint64(hdr[12:]), "value", &l.vw}} {
		if w.v != 4 && w.v != 8 {
			return nil, in.fail("unsupported %s width %d bytes in the header: want 4 or 8", w.what, w.v)
		}
		*w.dst = int(w.v)
	}
	word := make([]byte, 8)
	readIdx := func(what string) (uint64, error) {
		b := word[:l.iw]
		want := in.off + int64(l.iw)
		if short, err := in.read(b); err != nil {
			return 0, err
		} else if short {
			return 0, in.fail("truncated SPLATT .bin file: it ends in %s: want at least %d bytes, found %d", what, want, in.off)
		}
		if l.iw == 4 {
			return uint64(binary.LittleEndian.Uint32(b)), nil
		}
		return binary.LittleEndian.Uint64(b), nil
	}
	nm, err := readIdx("the number of modes")
	if err != nil {
		return nil, err
	}
	if nm < 1 || nm > maxBinModes {
		return nil, in.fail("%d modes in the header: want 1..%d", nm, maxBinModes)
	}
	l.order = int(nm)
	l.dims = make([]int, l.order)
	for m := range l.dims {
		d, err := readIdx("the mode sizes")
		if err != nil {
			return nil, err
		}
		if d < 1 || d > MaxDim {
			return nil, in.fail("mode %d has size %d in the header: want 1..%d", m+1, d, MaxDim)
		}
		l.dims[m] = int(d)
	}
	nnz, err := readIdx("the number of cells")
	if err != nil {
		return nil, err
	}
	if nnz == 0 {
		return nil, in.fail("no cells")
	}
	// total = 20 + (2+N)·iw + nnz·(N·iw + vw), in uint64 with overflow checks.
	hi, perCells := bits.Mul64(nnz, uint64(l.order*l.iw+l.vw))
	total, carry := bits.Add64(perCells, uint64(in.off), 0)
	if hi != 0 || carry != 0 || total > math.MaxInt64 {
		return nil, in.fail("the header promises %d cells of order %d: more bytes than a file can hold", nnz, l.order)
	}
	l.nnz, l.total = int(nnz), int64(total)
	switch { // size counts from the start of the file, as off does
	case size >= 0 && size < l.total:
		return nil, in.fail("truncated SPLATT .bin file: the header (%v) promises %d bytes, found %d", l, l.total, size)
	case size > l.total:
		return nil, in.fail("trailing data: the header (%v) promises %d bytes, found %d", l, l.total, size)
	}
	return l, nil
}

// readBin reads a SPLATT binary coordinate tensor from r; size is the number
// of bytes r holds, or -1 when unknown (then r is read into memory first, as
// far as the header says it should go, so that a short or lying file is
// found out before the tensor is allocated).
func readBin(r io.Reader, name string, base int64, size int64) (*COO, error) {
	in := &binInput{r: r, name: name}
	l, err := readBinHeader(in, size)
	if err != nil {
		return nil, err
	}
	if size < 0 {
		// Read the rest into memory, one byte beyond what is promised.
		mem, err := readLimited(r, l.total-in.off+1)
		if err != nil {
			return nil, in.fail("%s after byte %d: %v", gzipOrRead(err), in.off+int64(mem.Len()), err)
		}
		if got := in.off + int64(mem.Len()); got != l.total {
			if got < l.total {
				return nil, in.fail("truncated SPLATT .bin file: the header (%v) promises %d bytes, found %d", l, l.total, got)
			}
			return nil, in.fail("trailing data: the header (%v) promises %d bytes, found more", l, l.total)
		}
		in.r = mem
	}
	t := &COO{Dims: l.dims, Idx: bigmem.Make[int32](l.nnz * l.order), Val: bigmem.Make[float64](l.nnz)}
	if _, err := readBinCells(in, l, base, t.Idx, t.Val, 0, l.nnz, nil); err != nil {
		return nil, err
	}
	if k, first, dup := findDuplicate(t.Dims, t.Idx, l.nnz); dup {
		return nil, BinDuplicateError(name, base, t.Cell(k), first, k)
	}
	return t, nil
}

// BinDuplicateError is the error for cell k (0-based cell number in the
// file; cell holds its 0-based indices), which repeats cell first: the one
// Read gives for a .bin file.
func BinDuplicateError(name string, base int64, cell []int32, first, k int) error {
	return &ParseError{File: name, Msg: fmt.Sprintf("duplicate cell %s: cells %d and %d (counting from 1)", fmtCell(cell, base), first+1, k+1)}
}

// readBinCells decodes cells [lo, hi) of every mode's index column and of
// the values into idx ((hi−lo)×order, 0-based) and val, checking each
// index against its mode's size and each value as Read does; the first
// bad one in Read's order (indices mode by mode, then values) is the
// error, and key its place in that order (m·nnz + cell for an index of
// mode m, order·nnz + cell for a value; -1 with no error or for a read
// error). With seek nil, in is positioned at the first index of mode 1
// and lo is 0, hi nnz: the columns are read in turn. Otherwise seek moves
// in to a byte offset of the file before each column's range.
func readBinCells(in *binInput, l *binLayout, base int64, idx []int32, val []float64, lo, hi int, seek func(off int64) error) (key int64, err error) {
	header := l.total - int64(l.nnz)*int64(l.order*l.iw+l.vw)
	buf := make([]byte, min(binChunk, max(hi-lo, 1))*max(l.iw, l.vw))
	truncated := func() error {
		return in.fail("truncated SPLATT .bin file: the header (%v) promises %d bytes, found %d", l, l.total, in.off)
	}
	for m := 0; m <= l.order; m++ {
		w := l.iw
		if m == l.order {
			w = l.vw
		}
		if seek != nil {
			at := header + int64(m)*int64(l.nnz)*int64(l.iw) + int64(lo)*int64(w)
			if err := seek(at); err != nil {
				return -1, err
			}
		}
		for k := lo; k < hi; k += binChunk {
			c := min(binChunk, hi-k)
			at := in.off
			b := buf[:c*w]
			if short, err := in.read(b); err != nil {
				return -1, err
			} else if short {
				return -1, truncated()
			}
			if m == l.order {
				if i := parDecode(c, func(i0, i1 int) int {
					return decodeVal(val[k-lo+i0:k-lo+i1], b[i0*w:i1*w], w)
				}); i >= 0 {
					v := val[k-lo+i]
					return int64(l.order)*int64(l.nnz) + int64(k+i), in.fail("cell %d of %d (byte %d): value %v %s", k+i+1, l.nnz, at+int64(i*w), v, valueProblem(v))
				}
				continue
			}
			if i := parDecode(c, func(i0, i1 int) int {
				return decodeIdx(idx, b[i0*w:i1*w], w, l.order, m, k-lo+i0, base, int64(l.dims[m]))
			}); i >= 0 {
				var v uint64
				if w == 4 {
					v = uint64(binary.LittleEndian.Uint32(b[4*i:]))
				} else {
					v = binary.LittleEndian.Uint64(b[8*i:])
				}
				return int64(m)*int64(l.nnz) + int64(k+i), in.fail("cell %d of %d (byte %d): index %d in mode %d is out of range: the mode has size %d, so %d-based indices run %d..%d",
					k+i+1, l.nnz, at+int64(i*w), v, m+1, l.dims[m], base, base, base+int64(l.dims[m])-1)
			}
		}
	}
	return -1, nil
}

// ReadBinPart reads share k of n of the cells of the plain (not gzip)
// SPLATT .bin file at path, cells [k·nnz/n, (k+1)·nnz/n) in file order,
// as a Part (its Dims the header's):
// the header, checked as Read checks it, then that range of every mode's
// index column and of the values, each by one seek, so no reader of a
// share reads the whole file. Indices are less base. Errors are Read's,
// with cell numbers and byte offsets counted over the whole file; key
// orders a bad cell's error as Read would meet it (see readBinCells: the
// lowest key over all shares is the error Read gives; 0 for an error of
// the header or file, which every share meets alike, and -1 with no
// error). Duplicate cells are not looked for: that needs every share
// (BinDuplicateError gives Read's message).
func ReadBinPart(path string, base int64, k, n int) (*Part, int64, error) {
	if n < 1 || k < 0 || k >= n {
		panic(fmt.Sprintf("tensor: ReadBinPart share %d of %d", k, n))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		return nil, 0, &ParseError{File: path, Msg: "a gzip-compressed .bin file cannot be read in shares: gunzip it first (a plain .bin file is read by every rank at its own offsets)"}
	}
	in := &binInput{r: br, name: path}
	l, err := readBinHeader(in, st.Size())
	if err != nil {
		return nil, 0, err
	}
	lo, hi := int(int64(l.nnz)*int64(k)/int64(n)), int(int64(l.nnz)*int64(k+1)/int64(n))
	p := &Part{Cells: &COO{Dims: l.dims, Idx: bigmem.Make[int32]((hi - lo) * l.order), Val: bigmem.Make[float64](hi - lo)}, First: lo, NNZ: l.nnz}
	seek := func(off int64) error {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return &ParseError{File: path, Msg: fmt.Sprintf("seek to byte %d: %v", off, err)}
		}
		br.Reset(f)
		in.off = off
		return nil
	}
	key, err := readBinCells(in, l, base, p.Cells.Idx, p.Cells.Val, lo, hi, seek)
	if err != nil {
		if key < 0 {
			key = 0
		}
		return nil, key, err
	}
	return p, -1, nil
}

// parDecode runs f over [0, c) split into GOMAXPROCS pieces [i0, i1) at
// once, each returning the position in its piece of the first bad item or
// -1, and returns the first bad position overall, or -1.
func parDecode(c int, f func(i0, i1 int) int) int {
	w := min(runtime.GOMAXPROCS(0), max(1, c/(64<<10)))
	if w == 1 {
		return f(0, c)
	}
	bad := make([]int, w)
	var wg sync.WaitGroup
	for j := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i0, i1 := c*j/w, c*(j+1)/w
			if i := f(i0, i1); i >= 0 {
				bad[j] = i0 + i
			} else {
				bad[j] = -1
			}
		}()
	}
	wg.Wait()
	for _, i := range bad {
		if i >= 0 {
			return i
		}
	}
	return -1
}

// decodeIdx decodes the indices of mode m of cells k, k+1, … from b (width
// iw) into idx (row-major, order n), less base. It returns the position in
// b of the first index outside [base, base+dim), or -1.
func decodeIdx(idx []int32, b []byte, iw, n, m, k int, base, dim int64) int {
	dst := idx[k*n+m:]
	if iw == 4 {
		c := len(b) / 4
		b = b[:4*c]
		lim := uint64(dim)
		for i := 0; i < c; i++ {
			x := int64(binary.LittleEndian.Uint32(b[4*i:])) - base
			if uint64(x) >= lim {
				return i
			}
			dst[i*n] = int32(x)
		}
		return -1
	}
	c := len(b) / 8
	b = b[:8*c]
	for i := 0; i < c; i++ {
		v := binary.LittleEndian.Uint64(b[8*i:])
		x := int64(v) - base
		if v > math.MaxInt64 || x < 0 || x >= dim {
			return i
		}
		dst[i*n] = int32(x)
	}
	return -1
}

// decodeVal decodes the values in b (width vw) into val and returns the
// position of the first one that is not finite or exceeds MaxValue, or -1.
func decodeVal(val []float64, b []byte, vw int) int {
	if vw == 4 {
		b = b[:4*len(val)]
		for i := range val {
			v := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
			val[i] = v
			if !valueOK(v) {
				return i
			}
		}
		return -1
	}
	b = b[:8*len(val)]
	for i := range val {
		v := math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		val[i] = v
		if !valueOK(v) {
			return i
		}
	}
	return -1
}

// gzipOrRead names a read error: "corrupt gzip stream" or "read error".
func gzipOrRead(err error) string {
	if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "corrupt gzip stream"
	}
	return "read error"
}

// readFull is io.ReadFull that leaves the reader's error as it is: io.EOF
// (possibly after some bytes) when the input ends before b is full.
func readFull(r io.Reader, b []byte) (int, error) {
	n := 0
	empty := 0
	for n < len(b) {
		k, err := r.Read(b[n:])
		n += k
		if err != nil {
			if n == len(b) && err == io.EOF {
				return n, nil
			}
			return n, err
		}
		if k == 0 {
			if empty++; empty >= 100 {
				return n, io.ErrNoProgress
			}
		}
	}
	return n, nil
}

// readLimited reads at most limit bytes of r into memory, in pieces (so
// that memory grows only with what r really holds).
func readLimited(r io.Reader, limit int64) (*chunkReader, error) {
	cr := &chunkReader{}
	piece := int64(64 << 10)
	for limit > 0 {
		b := make([]byte, min(limit, piece))
		piece = min(2*piece, 8<<20)
		n, err := readFull(r, b)
		if n > 0 {
			cr.chunks = append(cr.chunks, b[:n])
			cr.n += int64(n)
			limit -= int64(n)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return cr, err
		}
	}
	return cr, nil
}

// chunkReader reads a list of byte slices in turn.
type chunkReader struct {
	chunks [][]byte
	n      int64
}

func (c *chunkReader) Len() int { return int(c.n) }

func (c *chunkReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && len(c.chunks) > 0 {
		k := copy(p[n:], c.chunks[0])
		n += k
		c.chunks[0] = c.chunks[0][k:]
		if len(c.chunks[0]) == 0 {
			c.chunks[0] = nil
			c.chunks = c.chunks[1:]
		}
	}
	c.n -= int64(n)
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// looksLikeText reports whether b starts like a text tensor file.
func looksLikeText(b []byte) bool {
	for _, c := range b[:4] {
		if !(c >= '0' && c <= '9' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '#' || c == '.' || c == '-' || c == '+') {
			return false
		}
	}
	return true
}

// binWidths returns the widths writeBin uses for t, SPLATT's own choice
// (p_write_tt_binary_header): 4-byte indices unless nnz ≥ 2^32−1, and
// 4-byte values when every value is exactly a float32, else 8.
func binWidths(t *COO) (iw, vw int) {
	return binIndexWidth(t.NNZ()), binValueWidth(t)
}

// binIndexWidth is binWidths' index width for a file of nnz cells.
func binIndexWidth(nnz int) int {
	if uint64(nnz) >= math.MaxUint32 {
		return 8
	}
	return 4
}

// binValueWidth is binWidths' value width for t's values alone.
func binValueWidth(t *COO) int {
	for _, v := range t.Val {
		if float64(float32(v)) != v {
			return 8
		}
	}
	return 4
}

// writeBin writes t (already validated) in SPLATT's binary coordinate
// format with base added to every index, widths chosen by binWidths.
func writeBin(w io.Writer, t *COO, base int64) error {
	iw, vw := binWidths(t)
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.Write(binHeader(t.Dims, t.NNZ(), iw, vw)); err != nil {
		return err
	}
	for s := 1; s <= t.Order()+1; s++ {
		if err := writeBinSection(bw, t, s, base, iw, vw); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// binHeader returns the header of a .bin file of nnz cells with the given
// mode sizes and widths: everything before the first index.
func binHeader(dims []int, nnz, iw, vw int) []byte {
	le := binary.LittleEndian
	var hdr []byte
	hdr = le.AppendUint32(hdr, binMagicCoord)
	hdr = le.AppendUint64(hdr, uint64(iw))
	hdr = le.AppendUint64(hdr, uint64(vw))
	hdr = binPutIdx(hdr, uint64(len(dims)), iw)
	for _, d := range dims {
		hdr = binPutIdx(hdr, uint64(d), iw)
	}
	return binPutIdx(hdr, uint64(nnz), iw)
}

func binPutIdx(b []byte, v uint64, iw int) []byte {
	if iw == 4 {
		return binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return binary.LittleEndian.AppendUint64(b, v)
}

// writeBinSection writes section s of t's cells in the .bin layout: for
// 1 ≤ s ≤ N the indices of mode s (plus base), for s = N+1 the values,
// NNZ·iw or NNZ·vw bytes.
func writeBinSection(w io.Writer, t *COO, s int, base int64, iw, vw int) error {
	n, nnz := t.Order(), t.NNZ()
	le := binary.LittleEndian
	buf := make([]byte, 0, 64<<10)
	flush := func() error {
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	for k := range nnz {
		if s <= n {
			buf = binPutIdx(buf, uint64(int64(t.Idx[k*n+s-1])+base), iw)
		} else if vw == 4 {
			buf = le.AppendUint32(buf, math.Float32bits(float32(t.Val[k])))
		} else {
			buf = le.AppendUint64(buf, math.Float64bits(t.Val[k]))
		}
		if len(buf) > cap(buf)-8 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
