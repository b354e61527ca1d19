package tensor

import (
	"bytes"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/dainx/dainx/internal/bigmem"
	"github.com/dainx/dainx/tensor/internal/linemap"
)

// defaultBlock is the size of the blocks the parallel text parser cuts its
// input into (at line ends).
const defaultBlock = 4 << 20

// textJob is one block of whole lines for a worker.
type textJob struct {
	seq     int
	buf     []byte // the buffer to recycle
	data    []byte // whole lines; only the last block may lack a final '\n'
	order   int    // the tensor order, or 0 while not known (see readParallel)
	tooLong bool   // the block's first line is longer than maxLine
	read    int64  // raw input bytes read when the block was cut
}

// textResult is what a worker makes of a block.
type textResult struct {
	seq    int
	idx    []int32
	val    []float64
	maxIdx []int32
	order  int         // as set by the block's lines (differs from the job's only when that was 0)
	lines  int         // lines in the block
	runs   linemap.Map // cell → line, both counted from the block's start (lines from 1)
	err    error       // the block's first bad line (*ParseError, Line within the block)
	read   int64
}

// readParallel parses text on GOMAXPROCS goroutines. A reader goroutine
// cuts the input into blocks at line ends; before any data line is
// dispatched it fixes the order from the first data line, so every worker
// parses its block with the same order, as the serial parser would. Workers
// parse blocks independently (line numbers counted from the block's start);
// this goroutine joins the results in block order, appending cells to the
// result, and the first block with an error gives the error, its line
// shifted by the lines of the blocks before. A read error (a corrupt gzip
// stream) counts only when no line is bad, as in the serial parser, which
// sees every line delivered before the error. cr counts the raw bytes read
// and size is the raw input size (-1 unknown; compressed when gzipped):
// together they size the result from the first blocks, so it is rarely
// reallocated.
func readParallel(src io.Reader, name string, base int64, block int, cr *countingReader, size int64, gzipped bool) (*COO, error) {
	if block <= 0 {
		block = defaultBlock
		if size >= 0 && !gzipped {
			block = int(min(int64(block), max(4096, size+1))) // small input, small buffers
		}
	}
	// No buffer is longer than maxLine, so a line in a block (ended by
	// '\n' or the input's end) is never too long: a partial line that fills
	// a maxLine buffer is reported as too long instead.
	block = min(block, maxLine)
	workers := runtime.GOMAXPROCS(0)
	nbuf := workers + 2
	jobs := make(chan textJob, nbuf)
	results := make(chan *textResult, nbuf)
	freeBufs := make(chan []byte, nbuf)
	spare := make(chan *textResult, nbuf+workers)
	var stop atomic.Bool
	var readErrV error
	var readLines bool // whether readErrV is set (read only after jobs is closed)

	// Reader.
	go func() {
		defer close(jobs)
		allocated := 0
		getBuf := func() []byte {
			select {
			case b := <-freeBufs:
				return b
			default:
			}
			if allocated < nbuf {
				allocated++
				return make([]byte, block)
			}
			return <-freeBufs
		}
		var carry []byte // a partial line: the bytes after the last '\n'
		order := 0
		orderKnown := false
		fs := make([][]byte, 0, 16)
		empty := 0
		for seq := 0; !stop.Load(); seq++ {
			buf := getBuf()
			if len(carry) > len(buf) {
				buf = make([]byte, min(max(2*len(buf), len(carry)), maxLine))
			}
			n := copy(buf, carry)
			scanned := n // buf[:scanned] holds no '\n'
			var rerr error
			var data []byte
			for {
				for n < len(buf) && rerr == nil {
					k, err := src.Read(buf[n:])
					n += k
					if err != nil {
						rerr = err
					} else if k == 0 {
						if empty++; empty >= 100 {
							rerr = io.ErrNoProgress
						}
					} else {
						empty = 0
					}
				}
				if i := bytes.LastIndexByte(buf[scanned:n], '\n'); i >= 0 && rerr == nil {
					data = buf[:scanned+i+1]
					carry = append(carry[:0], buf[scanned+i+1:n]...)
					break
				}
				if rerr != nil {
					data = buf[:n] // the rest: whole lines and maybe a final partial one
					if rerr != io.EOF {
						// A failed read (a truncated gzip stream): the
						// bytes after the last '\n' are a line cut short,
						// not a line (as NewLineScanner drops them).
						data = data[:bytes.LastIndexByte(data, '\n')+1]
					}
					carry = carry[:0]
					break
				}
				// One partial line fills the buffer.
				if n >= maxLine {
					jobs <- textJob{seq: seq, buf: buf, tooLong: true}
					return
				}
				scanned = n
				bigger := make([]byte, min(2*len(buf), maxLine))
				copy(bigger, buf[:n])
				buf = bigger
			}
			// A partial line that reached maxLine before a read error.
			if rerr != nil {
				if j := bytes.LastIndexByte(data, '\n'); len(data)-j-1 >= maxLine {
					if j >= 0 {
						jobs <- textJob{seq: seq, buf: nil, data: data[:j+1], order: order, read: cr.n}
						seq++
					}
					jobs <- textJob{seq: seq, buf: buf, tooLong: true}
					return
				}
			}
			last := false
			if !orderKnown {
				switch o := firstOrder(data, fs); {
				case o > 0:
					order, orderKnown = o, true
				case o < 0:
					last = true // the first data line is bad: nothing after it matters
				}
			}
			if len(data) > 0 {
				jobs <- textJob{seq: seq, buf: buf, data: data, order: order, read: cr.n}
			}
			if last {
				return
			}
			if rerr != nil {
				if rerr != io.EOF {
					readErrV, readLines = rerr, true
				}
				return
			}
		}
	}()

	// Workers.
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				var r *textResult
				select {
				case r = <-spare:
				default:
					r = new(textResult)
				}
				r.seq = j.seq
				r.read = j.read
				if stop.Load() {
					r.err = errSkipped // only after the first error: never reported
				} else {
					parseBlock(r, j, name, base)
				}
				if j.buf != nil {
					freeBufs <- j.buf[:cap(j.buf)]
				}
				results <- r
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()

	// Join in block order.
	var (
		idx     []int32
		val     []float64
		maxIdx  []int32
		order   int
		lines   int
		runs    linemap.Map
		firstE  error
		pending = map[int]*textResult{}
		next    = 0
	)
	for r := range results {
		pending[r.seq] = r
		for {
			r, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if firstE == nil {
				if r.err != nil {
					pe := r.err.(*ParseError)
					pe.Line += lines
					firstE = pe
					stop.Store(true)
				} else {
					if order == 0 && r.order > 0 {
						order = r.order
						maxIdx = make([]int32, order)
					}
					if len(r.val) > 0 {
						idx, val = grow(idx, val, order, len(r.val), r.read, size)
						k0 := len(val)
						idx = append(idx, r.idx...)
						val = append(val, r.val...)
						for m, x := range r.maxIdx {
							maxIdx[m] = max(maxIdx[m], x)
						}
						runs.Append(&r.runs, k0, lines)
					}
					lines += r.lines
				}
			}
			r.idx, r.val, r.maxIdx, r.err = r.idx[:0], r.val[:0], r.maxIdx[:0], nil
			r.runs.Reset()
			select {
			case spare <- r:
			default:
			}
		}
	}
	if firstE != nil {
		return nil, firstE
	}
	if readLines {
		return nil, ReadError(name, lines, readErrV)
	}
	return finish(name, base, order, idx, val, maxIdx, &runs)
}

// errSkipped marks a block not parsed because an earlier one failed.
var errSkipped = &ParseError{Msg: "skipped"}

// grow makes room for add more cells in idx and val. When the raw input
// size is known, the new capacity is the cells so far scaled by the share of
// the input read (plus 2%), so a file is usually sized once, from its first
// block; it is at least 1.0625 times what is needed then, and 1.25 times
// when the size is unknown.
func grow(idx []int32, val []float64, order, add int, read, size int64) ([]int32, []float64) {
	need := len(val) + add
	if need <= cap(val) {
		return idx, val
	}
	c := need + need/4
	if size > 0 && read > 0 && read < size {
		est := float64(need) * float64(size) / float64(read) * 1.02
		if est < float64(1<<62)/float64(order+1) {
			c = max(need+need/16, int(est)+1024)
		}
	}
	v := bigmem.Make[float64](len(val), c)
	copy(v, val)
	x := bigmem.Make[int32](len(idx), c*order)
	copy(x, idx)
	return x, v
}

// firstOrder returns the order given by the first data line of data: its
// fields less one, 0 when data has no data line, or -1 when that line has
// fewer than 2 fields or more than MaxOrder+1 (an error the worker
// reports, before anything is sized by the order).
func firstOrder(data []byte, fs [][]byte) int {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		var b []byte
		if i < 0 {
			b, data = data, nil
		} else {
			b, data = data[:i], data[i+1:]
		}
		var n int
		fs, n = splitFields(dropCR(b), fs)
		switch {
		case n-1 > MaxOrder || n == 1:
			return -1
		case n >= 2:
			return n - 1
		}
	}
	return 0
}

// parseBlock parses the lines of j into r: common lines on a fast path,
// every other line (blank, comment, unusual spacing, signs, a bad field)
// through parser.line, the serial parser's code.
func parseBlock(r *textResult, j textJob, name string, base int64) {
	p := parser{name: name, base: base, order: j.order, idx: r.idx[:0], val: r.val[:0], maxIdx: r.maxIdx[:0]}
	if p.order > 0 {
		p.maxIdx = append(p.maxIdx, make([]int32, p.order)...)
	}
	runs := &r.runs
	if j.tooLong {
		r.err = p.errf(1, "line longer than the limit of %d bytes", maxLine)
		return
	}
	data := j.data
	line := 0
	for pos := 0; pos < len(data); {
		line++
		if p.order > 0 {
			if np, ok := p.fast(data, pos); ok {
				runs.Add(len(p.val)-1, line)
				pos = np
				continue
			}
		}
		var b []byte
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			b, pos = data[pos:pos+i], pos+i+1
		} else {
			b, pos = data[pos:], len(data)
		}
		n := len(p.val)
		if err := p.line(dropCR(b), line); err != nil {
			r.err = err
			break
		}
		if len(p.val) > n {
			runs.Add(n, line)
		}
	}
	r.idx, r.val, r.maxIdx, r.order, r.lines = p.idx, p.val, p.maxIdx, p.order, line
}

// fast parses the line at data[pos:] when it has the common shape: order
// unsigned indices of at most 9 digits, a value, runs of blanks between
// them, no leading or trailing blanks, at most one '\r' before the '\n' (or
// the end of data). It appends the cell and returns the position after the
// line and true, or returns false having appended nothing (maxIdx may have
// grown by an index of the line, which the general path then adds again or
// rejects the line).
func (p *parser) fast(data []byte, pos int) (int, bool) {
	n := len(data)
	i := pos
	k0 := len(p.idx)
	for m := 0; m < p.order; m++ {
		s := i
		var v int64
		for i < n && i-s < 10 {
			c := data[i] - '0'
			if c > 9 {
				break
			}
			v = v*10 + int64(c)
			i++
		}
		if i == s || i-s == 10 || i == n || !isBlank(data[i]) {
			p.idx = p.idx[:k0]
			return 0, false
		}
		for i++; i < n && isBlank(data[i]); i++ {
		}
		x := v - p.base
		if x < 0 {
			p.idx = p.idx[:k0]
			return 0, false
		}
		p.idx = append(p.idx, int32(x))
		if int32(x) > p.maxIdx[m] {
			p.maxIdx[m] = int32(x)
		}
	}
	s := i
	for i < n {
		c := data[i]
		if c == '\n' || c == '\r' || c == ' ' || c == '\t' {
			break
		}
		i++
	}
	e := i
	if i < n && data[i] == '\r' {
		i++
	}
	if e == s || (i < n && data[i] != '\n') {
		p.idx = p.idx[:k0]
		return 0, false
	}
	v, err := strconv.ParseFloat(unsafe.String(&data[s], e-s), 64)
	if err != nil || !valueOK(v) { // the serial path words the error
		p.idx = p.idx[:k0]
		return 0, false
	}
	p.val = append(p.val, v)
	if i < n {
		i++
	}
	return i, true
}
