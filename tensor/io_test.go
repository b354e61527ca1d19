package tensor

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func sample() *COO {
	return &COO{
		Dims: []int{3, 5, 2},
		Idx: []int32{
			0, 4, 1,
			2, 0, 0,
			1, 1, 1,
			0, 0, 0,
		},
		Val: []float64{2.292604, -1e-300, 0.1 + 0.2, 12345678901234.5},
	}
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTripWriter(t *testing.T) {
	want := sample()
	for _, f := range []Format{TSV, TNS} {
		for _, base := range []int{-1, 0, 1, 7} {
			for _, zip := range []bool{false, true} {
				var buf bytes.Buffer
				if err := Write(&buf, want, WriteOptions{Format: f, IndexBase: base}); err != nil {
					t.Fatal(err)
				}
				text := buf.String()
				in := buf.Bytes()
				if zip {
					in = gz(t, in)
				}
				got, err := Read(bytes.NewReader(in), "mem", ReadOptions{Format: f, IndexBase: base})
				if err != nil {
					t.Fatalf("%v base %d gzip %v: %v\n%s", f, base, zip, err, text)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%v base %d gzip %v: got %+v, want %+v", f, base, zip, got, want)
				}
			}
		}
	}
}

func TestWriteText(t *testing.T) {
	c := &COO{Dims: []int{3, 2}, Idx: []int32{2, 0, 0, 1}, Val: []float64{0.5, 3}}
	var buf bytes.Buffer
	if err := Write(&buf, c, WriteOptions{Format: TSV, IndexBase: -1}); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "2\t0\t0.5\n0\t1\t3\n"; got != want {
		t.Errorf("TSV: got %q, want %q", got, want)
	}
	buf.Reset()
	if err := Write(&buf, c, WriteOptions{Format: TNS, IndexBase: -1}); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "3 1 0.5\n1 2 3\n"; got != want {
		t.Errorf("TNS: got %q, want %q", got, want)
	}
}

func TestReadLenient(t *testing.T) {
	in := "# header comment\r\n\n  1 2\t\t3  0.5\r\n   # indented comment\n\t\n2\t1 1 -4e2\n"
	got, err := Read(strings.NewReader(in), "x.tns", ReadOptions{Format: TNS, IndexBase: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := &COO{Dims: []int{2, 2, 3}, Idx: []int32{0, 1, 2, 1, 0, 0}, Val: []float64{0.5, -400}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// The same text read as TSV (0-based) and with an explicit base 1.
	got, err = Read(strings.NewReader(in), "x.tsv", ReadOptions{Format: TSV, IndexBase: -1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{3, 3, 4}; !reflect.DeepEqual(got.Dims, want) {
		t.Errorf("TSV dims %v, want %v", got.Dims, want)
	}
	got, err = Read(strings.NewReader(in), "x.tsv", ReadOptions{Format: TSV, IndexBase: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TSV base 1: got %+v, want %+v", got, want)
	}
	// No final newline; order 1.
	got, err = Read(strings.NewReader("4 1\n0 2"), "o1", ReadOptions{IndexBase: -1})
	if err != nil {
		t.Fatal(err)
	}
	if want := (&COO{Dims: []int{5}, Idx: []int32{4, 0}, Val: []float64{1, 2}}); !reflect.DeepEqual(got, want) {
		t.Errorf("order 1: got %+v, want %+v", got, want)
	}
}

func TestFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := sample()
	for _, name := range []string{"a.tsv", "a.tsv.gz", "a.tns", "a.TNS.GZ", "a.txt"} {
		path := filepath.Join(dir, name)
		f := FormatOf(path)
		if err := WriteFile(path, want, WriteOptions{Format: f, IndexBase: -1}); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		isGz := len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b
		if isGz != strings.HasSuffix(strings.ToLower(name), ".gz") {
			t.Errorf("%s: gzip = %v", name, isGz)
		}
		got, err := ReadFile(path, ReadOptions{Format: f, IndexBase: -1})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
		// Overwriting an existing file works too.
		if err := WriteFile(path, want.Subset([]int{1}), WriteOptions{Format: f, IndexBase: -1}); err != nil {
			t.Fatal(err)
		}
		got, err = ReadFile(path, ReadOptions{Format: f, IndexBase: -1})
		if err != nil || got.NNZ() != 1 {
			t.Fatalf("%s after overwrite: %v, %v", name, got, err)
		}
	}
	// A TNS file read as TSV with IndexBase 1 is the same tensor.
	got, err := ReadFile(filepath.Join(dir, "a.tns"), ReadOptions{Format: TSV, IndexBase: 1})
	if wantSub := (&COO{Dims: []int{3, 1, 1}, Idx: []int32{2, 0, 0}, Val: []float64{-1e-300}}); err != nil || !reflect.DeepEqual(got, wantSub) {
		t.Errorf("base override: %+v, %v", got, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 5 {
		t.Errorf("directory has %d entries, want 5 (temp files left?)", len(ents))
	}
	if fi, err := os.Stat(filepath.Join(dir, "a.tsv")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v", fi.Mode(), err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.tsv"), ReadOptions{IndexBase: -1}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	corrupt := gz(t, []byte("0\t0\t1\n1\t1\t2\n"))
	corrupt[len(corrupt)-6] ^= 0xff // break the CRC
	truncated := gz(t, bytes.Repeat([]byte("1\t2\t3\t4.5\n"), 1000))
	truncated = truncated[:len(truncated)/2]
	cases := []struct {
		name   string
		format Format
		base   int
		in     string
		prefix string // exact "file:line: " prefix
		reason string // substring of the message
	}{
		{"fields", TSV, -1, "0\t1\t2\t1.0\n0\t1\t1.0\n", "f:2: ", "want 4 fields (3 indices and a value), got 3"},
		{"fields more", TSV, -1, "# c\n0\t1\n1\t0\t1.0\n", "f:3: ", "want 2 fields (1 index and a value), got 3"},
		{"one field", TSV, -1, "\n5\n", "f:2: ", "want at least 2 fields"},
		{"float index", TSV, -1, "0 0 0 1\n1 1.5 1 2\n", "f:2: ", `index 2 (mode 2): "1.5" is not an integer`},
		{"exp index", TSV, -1, "1e3 0 1\n", "f:1: ", `index 1 (mode 1): "1e3" is not an integer`},
		{"alpha index", TSV, -1, "0 abc 1\n", "f:1: ", `"abc" is not an integer`},
		{"sign index", TSV, -1, "0 + 1\n", "f:1: ", `"+" is not an integer`},
		{"tns zero", TNS, -1, "# x\n1 1 1\n0 2 1\n", "f:3: ", "negative index -1 in mode 1 (1-based file has 0)"},
		{"tsv negative", TSV, -1, "0 -3 1\n", "f:1: ", "negative index -3 in mode 2"},
		{"base override", TSV, 1, "1 1 1\n1 0 1\n", "f:2: ", "negative index -1 in mode 2 (1-based file has 0)"},
		{"too big", TSV, -1, "3000000000 1 1\n", "f:1: ", "index 3000000000 in mode 1 is out of range: a 0-based file's indices go from 0 to 2147483646"},
		{"max+1", TSV, -1, "1 2147483647 1\n", "f:1: ", "index 2147483647 in mode 2 is out of range"},
		{"huge", TSV, -1, "1 99999999999999999999999999 1\n", "f:1: ", "index 99999999999999999999999999 in mode 2 is out of range"},
		{"1e20 index", TSV, -1, "1e20 1 1\n", "f:1: ", "index 1e20 in mode 1 is out of range: a 0-based file's indices go from 0 to 2147483646"},
		{"tns 10^20", TNS, -1, "100000000000000000000 1 1\n", "f:1: ", "index 100000000000000000000 in mode 1 is out of range: a 1-based file's indices go from 1 to 2147483647"},
		{"nan", TSV, -1, "0 0 1\n1 1 nan\n", "f:2: ", `value "nan" is not finite`},
		{"NaN", TSV, -1, "1 1 NaN\n", "f:1: ", `value "NaN" is not finite`},
		{"inf", TSV, -1, "1 1 +Inf\n", "f:1: ", `value "+Inf" is not finite`},
		{"-inf", TSV, -1, "1 1 -infinity\n", "f:1: ", "is not finite"},
		{"square overflows float32", TSV, -1, "0 0 1\n1 1 -2e19\n", "f:2: ", `value "-2e19" is too large: its square overflows float32`},
		{"range", TSV, -1, "1 1 1e999\n", "f:1: ", `value "1e999" is out of range`},
		{"bad value", TSV, -1, "1 1 x1\n", "f:1: ", `value "x1" is not a number`},
		{"duplicate", TSV, -1, "# c\n3 4 5 1\n0 0 0 1\n3 4 5 2\n", "f:4: ", "duplicate cell (3, 4, 5), first on line 2"},
		{"duplicate tns", TNS, -1, "1 1 1\n\n2 2 2\n2 3 3\n1 1 7\n", "f:5: ", "duplicate cell (1, 1), first on line 1"},
		{"duplicate map", TSV, -1, "999 999 999 1\n0 0 0 1\n5 6 7 1\n999 999 999 2\n", "f:4: ", "duplicate cell (999, 999, 999), first on line 1"},
		{"duplicate strings", TNS, -1, "2147483647 2147483647 2147483647 1\n1 1 1 1\n1 1 1 2\n", "f:3: ", "duplicate cell (1, 1, 1), first on line 2"},
		{"empty", TSV, -1, "", "f: ", "no cells"},
		{"comments only", TNS, -1, "# a\n\n   # b\n\t\n", "f: ", "no cells"},
		{"corrupt gzip crc", TSV, -1, string(corrupt), "f: ", "corrupt gzip stream"},
		{"truncated gzip", TSV, -1, string(truncated), "f: ", "truncated gzip stream (unexpected EOF) after line "},
		{"gzip header", TSV, -1, "\x1f\x8bnot really gzip", "f: ", "corrupt gzip stream"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(c.in), "f", ReadOptions{Format: c.format, IndexBase: c.base})
			if err == nil {
				t.Fatalf("no error; got %+v", got)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *ParseError", err, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, c.prefix) || (c.prefix == "f: " && pe.Line != 0) {
				t.Errorf("error %q: want prefix %q", msg, c.prefix)
			}
			if !strings.Contains(msg, c.reason) {
				t.Errorf("error %q: want it to contain %q", msg, c.reason)
			}
		})
	}
}

func BenchmarkRead1M(b *testing.B) {
	// 1M random cells of a 10000^3 tensor (the sparse, map-keyed path).
	rng := rand.New(rand.NewPCG(1, 2))
	set := NewCellSet([]int{10000, 10000, 10000}, 1<<20)
	c := &COO{Dims: []int{10000, 10000, 10000}}
	for c.NNZ() < 1<<20 {
		cell := []int32{rng.Int32N(10000), rng.Int32N(10000), rng.Int32N(10000)}
		if set.Add(cell) {
			c.Idx = append(c.Idx, cell...)
			c.Val = append(c.Val, float64(rng.IntN(10))/2)
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, c, WriteOptions{IndexBase: -1}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	for b.Loop() {
		if _, err := Read(bytes.NewReader(buf.Bytes()), "mem", ReadOptions{IndexBase: -1}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBadInputFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.tns.gz")
	if err := os.WriteFile(path, gz(t, []byte("1 1 1\n1 2 2\n1 1 3\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path, ReadOptions{Format: FormatOf(path), IndexBase: -1})
	if want := path + ":3: duplicate cell (1, 1), first on line 1"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	// gzip by content even without .gz; not gzip even with .gz.
	plain := filepath.Join(dir, "plain.tsv.gz")
	if err := os.WriteFile(plain, []byte("0\t1\t2.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := ReadFile(plain, ReadOptions{IndexBase: -1}); err != nil || c.NNZ() != 1 {
		t.Errorf("plain .gz: %v %v", c, err)
	}
}

func TestBadOptions(t *testing.T) {
	for _, b := range []int{-2, MaxDim + 1} {
		if _, err := Read(strings.NewReader("1 1\n"), "f", ReadOptions{IndexBase: b}); err == nil {
			t.Errorf("Read base %d: no error", b)
		}
		if err := Write(io.Discard, sample(), WriteOptions{IndexBase: b}); err == nil {
			t.Errorf("Write base %d: no error", b)
		}
	}
}

func TestParseErrorString(t *testing.T) {
	if got := (&ParseError{File: "a", Line: 3, Msg: "m"}).Error(); got != "a:3: m" {
		t.Error(got)
	}
	if got := (&ParseError{File: "a", Msg: "m"}).Error(); got != "a: m" {
		t.Error(got)
	}
}

func TestFormat(t *testing.T) {
	for path, want := range map[string]Format{
		"x.tns": TNS, "x.tns.gz": TNS, "dir.tns/x.TNS.GZ": TNS, "x.tsv": TSV, "x.tsv.gz": TSV,
		"x.tensor": TSV, "x": TSV, "x.gz": TSV, "dir.tns/x": TSV, "x.tns.bz2": TSV,
	} {
		if got := FormatOf(path); got != want {
			t.Errorf("FormatOf(%q) = %v, want %v", path, got, want)
		}
	}
	for _, f := range []Format{TSV, TNS} {
		g, err := ParseFormat(f.String())
		if err != nil || g != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f.String(), g, err)
		}
	}
	if g, err := ParseFormat("TNS"); err != nil || g != TNS {
		t.Errorf("ParseFormat(TNS) = %v, %v", g, err)
	}
	if _, err := ParseFormat("csv"); err == nil {
		t.Error("ParseFormat(csv): no error")
	}
	if s := Format(7).String(); s != "Format(7)" {
		t.Error(s)
	}
}

// failAfter fails every write once n bytes have been written.
type failAfter struct {
	w io.Writer
	n int
}

var errInjected = errors.New("injected write failure")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, errInjected
	}
	f.n -= len(p)
	return f.w.Write(p)
}

func big(n int) *COO {
	c := &COO{Dims: []int{n, 7}}
	for i := range n {
		c.Idx = append(c.Idx, int32(i), int32(i%7))
		c.Val = append(c.Val, float64(i)/3)
	}
	return c
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	// Missing directory: error, nothing created.
	missing := filepath.Join(dir, "nope", "x.tsv")
	if err := WriteFile(missing, sample(), WriteOptions{IndexBase: -1}); err == nil {
		t.Error("write into missing directory: no error")
	}
	if _, err := os.Stat(filepath.Dir(missing)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory appeared: %v", err)
	}

	const old = "old contents\n"
	existing := filepath.Join(dir, "existing.tsv")
	if err := os.WriteFile(existing, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh.tsv.gz")
	check := func(what string) {
		t.Helper()
		if b, err := os.ReadFile(existing); err != nil || string(b) != old {
			t.Errorf("%s: existing file changed: %q, %v", what, b, err)
		}
		if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: new file appeared: %v", what, err)
		}
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("%s: directory holds %v, want only existing.tsv", what, names)
		}
	}

	// Invalid tensors are refused before any file is created.
	bad := sample()
	bad.Val[2] = math.NaN()
	dup := sample()
	copy(dup.Cell(1), dup.Cell(0))
	out := sample()
	out.Idx[0] = 3
	for i, c := range []*COO{bad, dup, out} {
		for _, p := range []string{existing, fresh} {
			if err := WriteFile(p, c, WriteOptions{IndexBase: -1}); err == nil {
				t.Errorf("invalid tensor %d: no error", i)
			}
		}
	}
	check("invalid tensor")

	// A write failing midway (plain and gzip, early and late).
	c := big(50000)
	for _, n := range []int{0, 100, 70000, 150000} {
		for _, p := range []string{existing, fresh} {
			err := writeFile(p, c, WriteOptions{IndexBase: -1}, func(w io.Writer) io.Writer { return &failAfter{w, n} })
			if !errors.Is(err, errInjected) {
				t.Errorf("%s after %d bytes: got %v, want the injected error", p, n, err)
			}
		}
	}
	check("failed write")

	// And a successful one replaces the file.
	if err := WriteFile(existing, c, WriteOptions{IndexBase: -1}); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(existing, ReadOptions{IndexBase: -1}); err != nil || !reflect.DeepEqual(got, c) {
		t.Errorf("after replace: %v", err)
	}
}
