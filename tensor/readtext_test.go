package tensor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// sameCOO reports whether a and b are equal, values compared bit for bit.
func sameCOO(a, b *COO) bool {
	if len(a.Dims) != len(b.Dims) || len(a.Idx) != len(b.Idx) || len(a.Val) != len(b.Val) {
		return false
	}
	for i := range a.Dims {
		if a.Dims[i] != b.Dims[i] {
			return false
		}
	}
	for i := range a.Idx {
		if a.Idx[i] != b.Idx[i] {
			return false
		}
	}
	for i := range a.Val {
		if math.Float64bits(a.Val[i]) != math.Float64bits(b.Val[i]) {
			return false
		}
	}
	return true
}

var blockSizes = []int{1, 2, 5, 17, 64, 300, 4096, 0}

// checkSame reads in with the serial parser and with the parallel one at
// every block size, and fails unless all give the same tensor or the same
// error string. It returns the serial result.
func checkSame(t *testing.T, what string, in []byte, opt ReadOptions) (*COO, error) {
	t.Helper()
	so := opt
	so.serial = true
	want, werr := Read(bytes.NewReader(in), "f", so)
	for _, bs := range blockSizes {
		po := opt
		po.blockSize = bs
		for _, r := range []io.Reader{bytes.NewReader(in), &trickle{r: bytes.NewReader(in), n: 3}} {
			got, gerr := Read(r, "f", po)
			switch {
			case (werr == nil) != (gerr == nil):
				t.Fatalf("%s, block %d, %T: serial %v, parallel %v\ninput %q", what, bs, r, werr, gerr, clip(in))
			case werr != nil && werr.Error() != gerr.Error():
				t.Fatalf("%s, block %d, %T: serial error\n  %v\nparallel error\n  %v\ninput %q", what, bs, r, werr, gerr, clip(in))
			case werr == nil && !sameCOO(want, got):
				t.Fatalf("%s, block %d, %T: tensors differ\nserial %+v\nparallel %+v\ninput %q", what, bs, r, want, got, clip(in))
			}
			if werr != nil {
				var pe *ParseError
				if !errors.As(gerr, &pe) {
					t.Fatalf("%s: error %T is not a *ParseError", what, gerr)
				}
			}
		}
	}
	return want, werr
}

func clip(b []byte) []byte {
	if len(b) > 600 {
		return append(append([]byte{}, b[:300]...), append([]byte("…"), b[len(b)-300:]...)...)
	}
	return b
}

// trickle returns at most n bytes per Read and hides the reader's size.
type trickle struct {
	r io.Reader
	n int
}

func (t *trickle) Read(p []byte) (int, error) {
	if len(p) > t.n {
		p = p[:t.n]
	}
	return t.r.Read(p)
}

// randText writes a random valid text tensor of the given order with nnz
// distinct cells, in a random mix of layouts: tabs or runs of blanks,
// leading and trailing blanks, CRLF (and CRCR LF), comments, blank lines,
// signs, exponents, hex floats, with or without a final newline.
func randText(rng *rand.Rand, order, nnz int, base int64, messy bool) []byte {
	var b bytes.Buffer
	seen := map[string]bool{}
	sep := func() string {
		if !messy {
			return "\t"
		}
		return []string{"\t", " ", "  ", " \t", "\t\t"}[rng.IntN(5)]
	}
	for k := 0; k < nnz; {
		if messy {
			switch rng.IntN(12) {
			case 0:
				b.WriteString("# a comment 1 2 3\n")
				continue
			case 1:
				b.WriteString([]string{"\n", "  \n", "\t\r\n", "\r\n", "   # indented\n"}[rng.IntN(5)])
				continue
			}
		}
		cell := make([]string, order)
		for m := range cell {
			x := int64(rng.IntN([]int{3, 50, 100000, 2000000000}[rng.IntN(4)])) + base
			cell[m] = fmt.Sprint(x)
			if messy && rng.IntN(30) == 0 {
				cell[m] = "000" + cell[m]
			}
			if messy && rng.IntN(20) == 0 {
				cell[m] = "+" + cell[m]
			}
		}
		norm := make([]string, order)
		for m, c := range cell {
			norm[m] = strings.TrimLeft(c, "+0")
		}
		key := strings.Join(norm, ",")
		if seen[key] {
			continue
		}
		seen[key] = true
		k++
		if messy && rng.IntN(15) == 0 {
			b.WriteString(" ")
		}
		for _, c := range cell {
			b.WriteString(c)
			b.WriteString(sep())
		}
		var v string
		switch rng.IntN(8) {
		case 0:
			v = fmt.Sprint(rng.IntN(10))
		case 1:
			v = fmt.Sprintf("%.3e", rng.NormFloat64()*1e10)
		case 2:
			v = "-0"
		case 3:
			if messy {
				v = "0x1.8p-3"
			} else {
				v = "0.5"
			}
		default:
			v = fmt.Sprint(rng.NormFloat64())
		}
		b.WriteString(v)
		if messy {
			switch rng.IntN(10) {
			case 0:
				b.WriteString("\r")
			case 1:
				b.WriteString("\r\r")
			case 2:
				b.WriteString(" \t")
			}
		}
		if k < nnz || rng.IntN(2) == 0 {
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

func TestParallelMatchesSerialValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 1))
	n := 0
	for iter := range 120 {
		order := 1 + rng.IntN(4)
		nnz := 1 + rng.IntN(300)
		f := []Format{TSV, TNS}[rng.IntN(2)]
		base := int64(f.DefaultIndexBase())
		in := randText(rng, order, nnz, base, iter%3 != 0)
		if iter%5 == 0 {
			in = gz(t, in)
		}
		c, err := checkSame(t, fmt.Sprintf("iter %d", iter), in, ReadOptions{Format: f, IndexBase: -1})
		if err != nil {
			t.Fatalf("iter %d: valid input rejected: %v\n%q", iter, err, in)
		}
		if c.NNZ() != nnz {
			t.Fatalf("iter %d: %d cells, want %d", iter, c.NNZ(), nnz)
		}
		n++
	}
	t.Logf("%d inputs", n)
}

// badLines are lines each of which makes a 3-mode file fail.
var badLines = []string{
	"1\t2\n", "1 2 3 4 5\n", "1 x 3 4\n", "1 1.5 3 4\n", "-1 2 3 4\n", "1 2 3 nan\n",
	"1 2 3 Inf\n", "1 2 3 1e999\n", "1 2 3 x\n", "3000000000 1 1 1\n", "1 2147483647 1 1\n",
	"1 99999999999999999999 1 1\n", "1 2 3 4\r\r\r\n", "1 2 3\r 4\n", "1 2 3 4 #c\n", "1 + 3 4\n",
	"5\n", "1 2 3 4x\n", "1\v2 3 4\n",
}

var kindRE = regexp.MustCompile(`"[^"]*"|[-+]?[0-9]+|\([^)]*\)`)

func TestParallelMatchesSerialBad(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 2))
	errs := map[string]bool{}
	for iter := range 300 {
		nnz := 5 + rng.IntN(200)
		lines := strings.SplitAfter(string(randText(rng, 3, nnz, 0, iter%2 == 0)), "\n")
		if !strings.HasSuffix(lines[len(lines)-1], "\n") {
			lines[len(lines)-1] += "\n"
		}
		// One to three bad lines, or a duplicate of an earlier line.
		for range 1 + rng.IntN(3) {
			at := rng.IntN(len(lines) + 1)
			var bad string
			if rng.IntN(4) == 0 {
				bad = lines[rng.IntN(len(lines))]
				if strings.TrimSpace(bad) == "" || strings.HasPrefix(strings.TrimSpace(bad), "#") {
					continue
				}
			} else {
				bad = badLines[rng.IntN(len(badLines))]
			}
			lines = append(lines[:at], append([]string{bad}, lines[at:]...)...)
		}
		in := []byte(strings.Join(lines, ""))
		if iter%7 == 0 {
			in = gz(t, in)
		}
		_, err := checkSame(t, fmt.Sprintf("iter %d", iter), in, ReadOptions{Format: TSV, IndexBase: -1})
		if err != nil {
			errs[kindRE.ReplaceAllString(err.(*ParseError).Msg, "#")] = true
		}
	}
	if len(errs) < 8 {
		t.Errorf("only %d kinds of error seen: %v", len(errs), errs)
	}
}

func TestParallelMatchesSerialCases(t *testing.T) {
	many := randText(rand.New(rand.NewPCG(3, 3)), 3, 500, 0, false)
	corrupt := gz(t, many)
	corrupt[len(corrupt)-6] ^= 0xff
	badThenCorrupt := gz(t, append([]byte("1 2 3 4\n1 2\n"), many...))
	badThenCorrupt[len(badThenCorrupt)-6] ^= 0xff
	trunc := gz(t, many)
	cases := map[string][]byte{
		"empty":            nil,
		"newline":          []byte("\n"),
		"comments only":    []byte("# a\n\n  # b\r\n\t\n"),
		"no final newline": []byte("1 2 3\n4 5 6"),
		"cr at eof":        []byte("1 2 3\n4 5 6\r"),
		"crcr at eof":      []byte("1 2 3\n4 5 6\r\r"),
		"first line bad":   []byte("# c\n\n7\n1 2 3\n"),
		"first line bad 2": append([]byte("# c\n\n7\n"), many...),
		"order 1":          []byte("4 1\n0 2\n3 -1e-300\n"),
		"dup far":          append(append([]byte("0\t0\t0\t1\n"), many...), []byte("0\t0\t0\t2\n")...),
		"dup of last":      append(append([]byte{}, many...), many[len(many)-30:]...),
		"corrupt crc":      corrupt,
		"bad then corrupt": badThenCorrupt,
		"gzip header":      []byte("\x1f\x8bnot really gzip"),
		"comment then gz":  gz(t, append([]byte("# x\n\n"), many...)),
		"crlf":             bytes.ReplaceAll(many, []byte("\n"), []byte("\r\n")),
		"sign and zeros":   []byte("+1 -0 00 5\n"),
	}
	for cut := len(trunc) / 4; cut < len(trunc); cut += len(trunc) / 9 {
		cases[fmt.Sprintf("truncated gzip %d", cut)] = trunc[:cut]
	}
	for name, in := range cases {
		for _, f := range []Format{TSV, TNS} {
			checkSame(t, name, in, ReadOptions{Format: f, IndexBase: -1})
		}
	}
}

func TestParallelLongLines(t *testing.T) {
	defer func(old int) { maxLine = old }(maxLine)
	maxLine = 40
	long := strings.Repeat("1", 30)
	cases := []string{
		"1 2 3\n" + strings.Repeat("9", 39) + "\n4 5 6\n",
		"1 2 3\n" + strings.Repeat("9", 40) + "\n4 5 6\n",
		"1 2 3\n" + strings.Repeat("9", 41) + "\n4 5 6\n",
		"1 2 3\n" + strings.Repeat("9", 100) + "\n4 5 6\n",
		"1 2 3\n" + strings.Repeat("9", 100),
		"1 2 3\n" + strings.Repeat("9", 39),
		"1 2 3\n1 2\n" + strings.Repeat("9", 100) + "\n",
		"1 2 3\n" + long + " 1 1\n" + strings.Repeat(" ", 45) + "\n",
		"# " + strings.Repeat("c", 50) + "\n1 2 3\n",
		strings.Repeat("1 2 3\n", 3) + strings.Repeat("#", 39) + "\n" + "1 2 3\n",
	}
	for i, c := range cases {
		for _, in := range [][]byte{[]byte(c), gz(t, []byte(c))} {
			checkSame(t, fmt.Sprint("long ", i), in, ReadOptions{IndexBase: -1})
		}
	}
}

// failingReader returns its data, then err.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestParallelReadError(t *testing.T) {
	boom := errors.New("boom")
	for _, in := range []string{"", "1 2 3\n", "1 2 3\n4 5", "1 2 3\n4 5 6\n", "1 2 3\n1 2 3\n", "7\n"} {
		so := ReadOptions{IndexBase: -1, serial: true}
		_, werr := Read(&failingReader{[]byte(in), boom}, "f", so)
		for _, bs := range blockSizes {
			_, gerr := Read(&failingReader{[]byte(in), boom}, "f", ReadOptions{IndexBase: -1, blockSize: bs})
			if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
				t.Errorf("%q block %d: serial %v, parallel %v", in, bs, werr, gerr)
			}
		}
	}
}

func TestFindDuplicateParallel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for i, dims := range [][]int{{300, 300, 300}, {MaxDim, MaxDim, MaxDim}, {1 << 22}, {5000, 5000}} {
		n := len(dims)
		nnz := 3 * dupParallelMin
		if i == 2 {
			nnz = 1<<20 + 3 // in rounds
		}
		set := NewCellSet(dims, nnz)
		idx := make([]int32, 0, nnz*n)
		for len(idx) < nnz*n {
			cell := make([]int32, n)
			for m := range cell {
				cell[m] = rng.Int32N(int32(min(dims[m], 1<<24)))
			}
			if set.Add(cell) {
				idx = append(idx, cell...)
			}
		}
		if k, f, ok := findDuplicate(dims, idx, nnz); ok {
			t.Fatalf("%v: distinct cells: duplicate %d %d", dims, k, f)
		}
		for range 5 {
			a, b := rng.IntN(nnz), rng.IntN(nnz)
			if a == b {
				continue
			}
			d := append([]int32(nil), idx...)
			copy(d[b*n:(b+1)*n], d[a*n:(a+1)*n])
			k, f, ok := findDuplicate(dims, d, nnz)
			if wk, wf, _ := findDuplicateSerial(dims, d, nnz); !ok || k != wk || f != wf || k != max(a, b) || f != min(a, b) {
				t.Fatalf("%v: copy of %d at %d: got %d %d %v, serial %d %d", dims, a, b, k, f, ok, wk, wf)
			}
		}
	}
}
