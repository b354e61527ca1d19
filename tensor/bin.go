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

// readBin reads a SPLATT binary coordinate tensor from r; size is the number
// of bytes r holds, or -1 when unknown (then r is read into memory first, as
// far as the header says it should go, so that a short or lying file is
// found out before the tensor is allocated).
func readBin(r io.Reader, name string, base int64, size int64) (*COO, error) {
	fail := func(format string, args ...any) (*COO, error) {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf(format, args...)}
	}
	var off int64 // bytes consumed
	// read fills b; short is true when the input ended first.
	read := func(b []byte) (short bool, err error) {
		n, err := readFull(r, b)
		off += int64(n)
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, &ParseError{File: name, Msg: fmt.Sprintf("%s after byte %d: %v", gzipOrRead(err), off, err)}
		}
		return false, nil
	}

	var hdr [binHeaderSize]byte
	short, err := read(hdr[:])
	if err != nil {
		return nil, err
	}
	if off >= 4 { // a wrong magic number says more than a short file
		switch magic := int32(binary.LittleEndian.Uint32(hdr[0:])); magic {
		case binMagicCoord:
		case binMagicCSF:
			return fail("a SPLATT CSF binary file (magic 1): only the coordinate format (magic 0) is read")
		default:
			hint := ""
			if looksLikeText(hdr[:]) {
				hint = "; it looks like text: give the text format (-format tsv or tns)"
			}
			return fail("not a SPLATT binary coordinate file: magic number %d (first bytes % x), want 0%s", magic, hdr[:4], hint)
		}
	}
	if short {
		return fail("truncated SPLATT .bin file: want at least the %d-byte header, found %d bytes", binHeaderSize, off)
	}
	l := &binLayout{}
	for _, w := range []struct {
		v    uint64
		what string
		dst  *int
	}{{binary.LittleEndian.Uint64(hdr[4:]), "index", &l.iw}, {binary.LittleEndian.Uint64(hdr[12:]), "value", &l.vw}} {
		if w.v != 4 && w.v != 8 {
			return fail("unsupported %s width %d bytes in the header: want 4 or 8", w.what, w.v)
		}
		*w.dst = int(w.v)
	}
	word := make([]byte, 8)
	readIdx := func(what string) (uint64, error) {
		b := word[:l.iw]
		want := off + int64(l.iw)
		if short, err := read(b); err != nil {
			return 0, err
		} else if short {
			return 0, &ParseError{File: name, Msg: fmt.Sprintf("truncated SPLATT .bin file: it ends in %s: want at least %d bytes, found %d", what, want, off)}
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
		return fail("%d modes in the header: want 1..%d", nm, maxBinModes)
	}
	l.order = int(nm)
	l.dims = make([]int, l.order)
	for m := range l.dims {
		d, err := readIdx("the mode sizes")
		if err != nil {
			return nil, err
		}
		if d < 1 || d > MaxDim {
			return fail("mode %d has size %d in the header: want 1..%d", m+1, d, MaxDim)
		}
		l.dims[m] = int(d)
	}
	nnz, err := readIdx("the number of cells")
	if err != nil {
		return nil, err
	}
	if nnz == 0 {
		return fail("no cells")
	}
	// total = 20 + (2+N)·iw + nnz·(N·iw + vw), in uint64 with overflow checks.
	hi, perCells := bits.Mul64(nnz, uint64(l.order*l.iw+l.vw))
	total, carry := bits.Add64(perCells, uint64(off), 0)
	if hi != 0 || carry != 0 || total > math.MaxInt64 {
		return fail("the header promises %d cells of order %d: more bytes than a file can hold", nnz, l.order)
	}
	l.nnz, l.total = int(nnz), int64(total)
	switch { // size counts from the start of the file, as off does
	case size >= 0 && size < l.total:
		return fail("truncated SPLATT .bin file: the header (%v) promises %d bytes, found %d", l, l.total, size)
	case size > l.total:
		return fail("trailing data: the header (%v) promises %d bytes, found %d", l, l.total, size)
	case size < 0:
		// Read the rest into memory, one byte beyond what is promised.
		mem, err := readLimited(r, l.total-off+1)
		if err != nil {
			return fail("%s after byte %d: %v", gzipOrRead(err), off+int64(mem.Len()), err)
		}
		if got := off + int64(mem.Len()); got != l.total {
			if got < l.total {
				return fail("truncated SPLATT .bin file: the header (%v) promises %d bytes, found %d", l, l.total, got)
			}
			return fail("trailing data: the header (%v) promises %d bytes, found more", l, l.total)
		}
		r = mem
	}

	t := &COO{Dims: l.dims, Idx: bigmem.Make[int32](l.nnz * l.order), Val: bigmem.Make[float64](l.nnz)}
	buf := make([]byte, binChunk*max(l.iw, l.vw))
	for m := 0; m < l.order; m++ {
		for k := 0; k < l.nnz; k += binChunk {
			c := min(binChunk, l.nnz-k)
			at := off
			b := buf[:c*l.iw]
			if short, err := read(b); err != nil {
				return nil, err
			} else if short {
				return fail("truncated SPLATT .bin file: the header (%v) promises %d bytes, found %d", l, l.total, off)
			}
			if i := parDecode(c, func(i0, i1 int) int {
				return decodeIdx(t.Idx, b[i0*l.iw:i1*l.iw], l.iw, l.order, m, k+i0, base, int64(l.dims[m]))
			}); i >= 0 {
				var v uint64
				if l.iw == 4 {
					v = uint64(binary.LittleEndian.Uint32(b[4*i:]))
				} else {
					v = binary.LittleEndian.Uint64(b[8*i:])
				}
				return fail("cell %d of %d (byte %d): index %d in mode %d is out of range: the mode has size %d, so %d-based indices run %d..%d",
					k+i+1, l.nnz, at+int64(i*l.iw), v, m+1, l.dims[m], base, base, base+int64(l.dims[m])-1)
			}
		}
	}
	for k := 0; k < l.nnz; k += binChunk {
		c := min(binChunk, l.nnz-k)
		at := off
		b := buf[:c*l.vw]
		if short, err := read(b); err != nil {
			return nil, err
		} else if short {
			return fail("truncated SPLATT .bin file: the header (%v) promises %d bytes, found %d", l, l.total, off)
		}
		if i := parDecode(c, func(i0, i1 int) int {
			return decodeVal(t.Val[k+i0:k+i1], b[i0*l.vw:i1*l.vw], l.vw)
		}); i >= 0 {
			return fail("cell %d of %d (byte %d): value %v %s", k+i+1, l.nnz, at+int64(i*l.vw), t.Val[k+i], valueProblem(t.Val[k+i]))
		}
	}
	if k, first, dup := findDuplicate(t.Dims, t.Idx, l.nnz); dup {
		return fail("duplicate cell %s: cells %d and %d (counting from 1)", fmtCell(t.Cell(k), base), first+1, k+1)
	}
	return t, nil
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
	iw, vw = 4, 4
	if uint64(t.NNZ()) >= math.MaxUint32 {
		iw = 8
	}
	for _, v := range t.Val {
		if float64(float32(v)) != v {
			vw = 8
			break
		}
	}
	return iw, vw
}

// writeBin writes t (already validated) in SPLATT's binary coordinate
// format with base added to every index, widths chosen by binWidths.
func writeBin(w io.Writer, t *COO, base int64) error {
	iw, vw := binWidths(t)
	bw := bufio.NewWriterSize(w, 1<<20)
	le := binary.LittleEndian
	var hdr []byte
	hdr = le.AppendUint32(hdr, binMagicCoord)
	hdr = le.AppendUint64(hdr, uint64(iw))
	hdr = le.AppendUint64(hdr, uint64(vw))
	putIdx := func(b []byte, v uint64) []byte {
		if iw == 4 {
			return le.AppendUint32(b, uint32(v))
		}
		return le.AppendUint64(b, v)
	}
	n, nnz := t.Order(), t.NNZ()
	hdr = putIdx(hdr, uint64(n))
	for _, d := range t.Dims {
		hdr = putIdx(hdr, uint64(d))
	}
	hdr = putIdx(hdr, uint64(nnz))
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	buf := make([]byte, 0, 64<<10)
	flush := func() error {
		_, err := bw.Write(buf)
		buf = buf[:0]
		return err
	}
	for m := range n {
		for k := range nnz {
			buf = putIdx(buf, uint64(int64(t.Idx[k*n+m])+base))
			if len(buf) > cap(buf)-8 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	for _, v := range t.Val {
		if vw == 4 {
			buf = le.AppendUint32(buf, math.Float32bits(float32(v)))
		} else {
			buf = le.AppendUint64(buf, math.Float64bits(v))
		}
		if len(buf) > cap(buf)-8 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return bw.Flush()
}
