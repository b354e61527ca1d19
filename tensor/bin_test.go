package tensor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// binFile builds a .bin file by hand: header fields as given (so that bad
// ones can be made), dims, nnz, mode-major indices and values.
func binFile(magic int32, iw, vw uint64, dims []uint64, nnz uint64, idx [][]uint64, vals []float64) []byte {
	le := binary.LittleEndian
	var b []byte
	b = le.AppendUint32(b, uint32(magic))
	b = le.AppendUint64(b, iw)
	b = le.AppendUint64(b, vw)
	put := func(v uint64) {
		if iw == 4 {
			b = le.AppendUint32(b, uint32(v))
		} else {
			b = le.AppendUint64(b, v)
		}
	}
	put(uint64(len(dims)))
	for _, d := range dims {
		put(d)
	}
	put(nnz)
	for _, col := range idx {
		for _, x := range col {
			put(x)
		}
	}
	for _, v := range vals {
		if vw == 4 {
			b = le.AppendUint32(b, math.Float32bits(float32(v)))
		} else {
			b = le.AppendUint64(b, math.Float64bits(v))
		}
	}
	return b
}

// readBinBoth reads in from a reader that tells its size and from one that
// does not (the streaming path), and checks that they agree on success.
func readBinBoth(t *testing.T, in []byte, base int) (*COO, error, error) {
	t.Helper()
	opt := ReadOptions{Format: BIN, IndexBase: base}
	a, errA := Read(bytes.NewReader(in), "f.bin", opt)
	b, errB := Read(&trickle{r: bytes.NewReader(in), n: 1 << 30}, "f.bin", opt)
	if (errA == nil) != (errB == nil) {
		t.Fatalf("sized: %v; streamed: %v", errA, errB)
	}
	if errA == nil && !sameCOO(a, b) {
		t.Fatalf("sized and streamed reads differ: %+v %+v", a, b)
	}
	return a, errA, errB
}

func TestBinLayout(t *testing.T) {
	// The bytes of a 2-mode tensor with 2 cells, written by hand from
	// SPLATT's io.c: int32 magic 0, uint64 widths 4 and 4, uint32 nmodes,
	// dims, nnz, mode 1's indices, mode 2's, then float32 values.
	want := []byte{
		0, 0, 0, 0, // magic
		4, 0, 0, 0, 0, 0, 0, 0, // idx_width
		4, 0, 0, 0, 0, 0, 0, 0, // val_width
		2, 0, 0, 0, // nmodes
		3, 0, 0, 0, 5, 0, 0, 0, // dims
		2, 0, 0, 0, // nnz
		2, 0, 0, 0, 0, 0, 0, 0, // mode 1: 2, 0
		4, 0, 0, 0, 1, 0, 0, 0, // mode 2: 4, 1
		0, 0, 0xc0, 0x3f, 0, 0, 0x20, 0xc1, // 1.5, -10
	}
	c := &COO{Dims: []int{3, 5}, Idx: []int32{2, 4, 0, 1}, Val: []float64{1.5, -10}}
	var buf bytes.Buffer
	if err := Write(&buf, c, WriteOptions{Format: BIN, IndexBase: -1}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("wrote\n% x\nwant\n% x", buf.Bytes(), want)
	}
	got, err, _ := readBinBoth(t, want, -1)
	if err != nil || !sameCOO(got, c) {
		t.Errorf("read %+v, %v", got, err)
	}
	// The same with 8-byte values: 0.1 is not a float32.
	c.Val[0] = 0.1
	buf.Reset()
	if err := Write(&buf, c, WriteOptions{Format: BIN, IndexBase: -1}); err != nil {
		t.Fatal(err)
	}
	if w := binary.LittleEndian.Uint64(buf.Bytes()[12:]); w != 8 || buf.Len() != len(want)+8 {
		t.Errorf("val_width %d, %d bytes", w, buf.Len())
	}
}

func TestBinRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []*COO{sample(), big(3000), {Dims: []int{10, 20, 30}, Idx: []int32{9, 19, 29}, Val: []float64{-0.0}},
		{Dims: []int{MaxDim, 1}, Idx: []int32{MaxDim - 1, 0, 0, 0}, Val: []float64{MaxValue, math.SmallestNonzeroFloat64}}} {
		for _, base := range []int{-1, 0, 1, MaxDim} {
			var buf bytes.Buffer
			if err := Write(&buf, c, WriteOptions{Format: BIN, IndexBase: base}); err != nil {
				t.Fatal(err)
			}
			got, err, _ := readBinBoth(t, buf.Bytes(), base)
			if err != nil || !sameCOO(got, c) {
				t.Fatalf("base %d: %v\n%+v\n%+v", base, err, got, c)
			}
			gzGot, err := Read(bytes.NewReader(gz(t, buf.Bytes())), "f", ReadOptions{Format: BIN, IndexBase: base})
			if err != nil || !sameCOO(gzGot, c) {
				t.Fatalf("gzip, base %d: %v", base, err)
			}
		}
		for _, name := range []string{"a.bin", "a.BIN.gz"} {
			p := filepath.Join(dir, name)
			if FormatOf(p) != BIN {
				t.Fatalf("FormatOf(%s) = %v", p, FormatOf(p))
			}
			if err := WriteFile(p, c, WriteOptions{Format: BIN, IndexBase: -1}); err != nil {
				t.Fatal(err)
			}
			got, err := ReadFile(p, ReadOptions{Format: BIN, IndexBase: -1})
			if err != nil || !sameCOO(got, c) {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
	// A text file converted to .bin and back is the same text.
	txt := "0\t4\t1\t2.292604\n2\t0\t0\t-1e-300\n1\t1\t1\t0.30000000000000004\n"
	c, err := Read(strings.NewReader(txt), "t", ReadOptions{IndexBase: -1})
	if err != nil {
		t.Fatal(err)
	}
	var b, out bytes.Buffer
	if err := Write(&b, c, WriteOptions{Format: BIN, IndexBase: -1}); err != nil {
		t.Fatal(err)
	}
	d, err := Read(&b, "b", ReadOptions{Format: BIN, IndexBase: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(&out, d, WriteOptions{Format: TSV, IndexBase: -1}); err != nil || out.String() != txt {
		t.Errorf("text → bin → text: %q, %v", out.String(), err)
	}
}

func TestBinWidths(t *testing.T) {
	vals := []float64{1.5, -3}
	for _, iw := range []uint64{4, 8} {
		for _, vw := range []uint64{4, 8} {
			in := binFile(0, iw, vw, []uint64{4, 3}, 2, [][]uint64{{3, 0}, {1, 2}}, vals)
			got, err, _ := readBinBoth(t, in, -1)
			want := &COO{Dims: []int{4, 3}, Idx: []int32{3, 1, 0, 2}, Val: vals}
			if err != nil || !sameCOO(got, want) {
				t.Errorf("widths %d/%d: %+v, %v", iw, vw, got, err)
			}
		}
	}
}

func TestBadBin(t *testing.T) {
	ok := binFile(0, 4, 8, []uint64{4, 3}, 3, [][]uint64{{3, 0, 1}, {1, 2, 2}}, []float64{1, 2, 3})
	cases := []struct {
		name string
		in   []byte
		base int
		want string // substring of both errors (sized and streamed)
	}{
		{"empty", nil, -1, "truncated SPLATT .bin file: want at least the 20-byte header, found 0 bytes"},
		{"short header", ok[:13], -1, "want at least the 20-byte header, found 13 bytes"},
		{"text", []byte("1 2 3 4.5\n2 3 4 5.5\n"), -1, "not a SPLATT binary coordinate file: magic number"},
		{"text hint", []byte("1 2 3 4.5\n2 3 4 5.5\n"), -1, "-format tsv or tns"},
		{"magic", binFile(7, 4, 4, []uint64{2}, 1, [][]uint64{{1}}, []float64{1}), -1, "magic number 7 (first bytes 07 00 00 00), want 0"},
		{"csf", binFile(1, 4, 4, []uint64{2}, 1, [][]uint64{{1}}, []float64{1}), -1, "SPLATT CSF binary file (magic 1)"},
		{"idx width", binFile(0, 2, 4, nil, 0, nil, nil), -1, "unsupported index width 2 bytes in the header: want 4 or 8"},
		{"val width", binFile(0, 4, 16, []uint64{2}, 1, [][]uint64{{1}}, nil), -1, "unsupported value width 16 bytes"},
		{"no modes", binFile(0, 4, 4, []uint64{}, 1, nil, nil), -1, "0 modes in the header: want 1..1024"},
		{"many modes", binFile(0, 8, 4, make([]uint64, 2000), 1, nil, nil), -1, "2000 modes in the header"},
		{"dim 0", binFile(0, 4, 4, []uint64{2, 0}, 1, nil, nil), -1, "mode 2 has size 0 in the header: want 1..2147483647"},
		{"dim big", binFile(0, 8, 4, []uint64{1 << 31}, 1, nil, nil), -1, "mode 1 has size 2147483648 in the header"},
		{"no cells", binFile(0, 4, 4, []uint64{2}, 0, nil, nil), -1, "no cells"},
		{"ends in dims", ok[:28], -1, "it ends in the mode sizes: want at least 32 bytes, found 28"},
		{"ends in nnz", ok[:34], -1, "it ends in the number of cells: want at least 36 bytes, found 34"},
		{"truncated idx", ok[:40], -1, "truncated SPLATT .bin file: the header (2 modes, 3 cells, 4-byte indices, 8-byte values) promises 84 bytes, found 40"},
		{"truncated val", ok[:len(ok)-1], -1, "promises 84 bytes, found 83"},
		{"trailing", append(append([]byte{}, ok...), 0), -1, "trailing data: the header (2 modes, 3 cells, 4-byte indices, 8-byte values) promises 84 bytes"},
		{"huge nnz", binFile(0, 8, 8, []uint64{2}, 1<<62, nil, nil), -1, "promises 4611686018427387904 cells of order 1: more bytes than a file can hold"},
		{"big nnz", binFile(0, 8, 8, []uint64{2}, 1<<40, nil, nil), -1, "promises 17592186044460 bytes, found 44"},
		{"out of range", binFile(0, 4, 4, []uint64{4, 3}, 3, [][]uint64{{3, 0, 1}, {1, 3, 2}}, []float64{1, 2, 3}), -1,
			"cell 2 of 3 (byte 52): index 3 in mode 2 is out of range: the mode has size 3, so 0-based indices run 0..2"},
		{"out of range 64", binFile(0, 8, 4, []uint64{4}, 2, [][]uint64{{0, 1 << 63}}, []float64{1, 2}), -1,
			"cell 2 of 2 (byte 52): index 9223372036854775808 in mode 1 is out of range"},
		{"below base", binFile(0, 4, 4, []uint64{4, 3}, 2, [][]uint64{{1, 1}, {1, 0}}, []float64{1, 2}), 1,
			"cell 2 of 2 (byte 48): index 0 in mode 2 is out of range: the mode has size 3, so 1-based indices run 1..3"},
		{"nan", binFile(0, 4, 8, []uint64{4}, 2, [][]uint64{{0, 1}}, []float64{1, math.NaN()}), -1, "cell 2 of 2 (byte 48): value NaN is not finite"},
		{"inf32", binFile(0, 4, 4, []uint64{4}, 2, [][]uint64{{0, 1}}, []float64{math.Inf(-1), 1}), -1, "cell 1 of 2 (byte 40): value -Inf is not finite"},
		{"huge", binFile(0, 4, 8, []uint64{4}, 2, [][]uint64{{0, 1}}, []float64{1, 1e30}), -1, "cell 2 of 2 (byte 48): value 1e+30 is too large: its square overflows float32"},
		{"duplicate", binFile(0, 4, 4, []uint64{4, 3}, 3, [][]uint64{{3, 1, 3}, {1, 2, 1}}, []float64{1, 2, 3}), 1, "duplicate cell (3, 1): cells 1 and 3 (counting from 1)"},
		{"duplicate 0-based", binFile(0, 4, 4, []uint64{4, 3}, 3, [][]uint64{{3, 0, 3}, {1, 2, 1}}, []float64{1, 2, 3}), -1, "duplicate cell (3, 1): cells 1 and 3 (counting from 1)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errA, errB := readBinBoth(t, c.in, c.base)
			for i, err := range []error{errA, errB} {
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("read %d: %T %v is not a *ParseError", i, err, err)
				}
				msg := err.Error()
				if !strings.HasPrefix(msg, "f.bin: ") {
					t.Errorf("read %d: %q lacks the file name", i, msg)
				}
				want := c.want
				if i == 1 && strings.HasPrefix(c.name, "trailing") {
					want = strings.TrimSuffix(want, " bytes") // streamed: "found more"
				}
				if !strings.Contains(msg, want) {
					t.Errorf("read %d: %q\nwant it to contain %q", i, msg, want)
				}
			}
		})
	}
	// A corrupt gzip stream around a good file.
	z := gz(t, ok)
	_, err := Read(bytes.NewReader(z[:len(z)-10]), "f", ReadOptions{Format: BIN, IndexBase: -1})
	if err == nil || !strings.Contains(err.Error(), "corrupt gzip stream") {
		t.Errorf("truncated gzip: %v", err)
	}
	// A missing file.
	if _, err := ReadFile(filepath.Join(t.TempDir(), "x.bin"), ReadOptions{Format: BIN, IndexBase: -1}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
