package tensor

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzRead checks that Read never panics, that every failure is a
// *ParseError, that the parallel parser (with small blocks too) gives the
// serial parser's tensor or error, and that whatever it accepts is valid
// and survives a Write/Read round trip.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		"0\t1\t2\t0.5\n", "# c\n1 1 1\n2 2 2\n", "1 1 1\n1 1 2\n", "", "0 x 1", "3 nan\n",
		"2147483646 0 1e300\n", "-0 +0 -0\n", "\x1f\x8b\x08\x00", "1\t2\r\n3\t4\r\n",
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, in []byte, tns bool) {
		format := TSV
		if tns {
			format = TNS
		}
		c, err := Read(bytes.NewReader(in), "fuzz", ReadOptions{Format: format, IndexBase: -1})
		for _, opt := range []ReadOptions{{serial: true}, {blockSize: 7}} {
			opt.Format, opt.IndexBase = format, -1
			o, oerr := Read(bytes.NewReader(in), "fuzz", opt)
			if (err == nil) != (oerr == nil) || (err != nil && err.Error() != oerr.Error()) || (err == nil && !sameCOO(c, o)) {
				t.Fatalf("%+v: %v / %v", opt, err, oerr)
			}
		}
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted an invalid tensor: %v", err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, c, WriteOptions{Format: format, IndexBase: -1}); err != nil {
			t.Fatal(err)
		}
		d, err := Read(&buf, "again", ReadOptions{Format: format, IndexBase: -1})
		if err != nil || !reflect.DeepEqual(c, d) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, c, d)
		}
	})
}

// FuzzReadBin checks that reading SPLATT .bin input never panics, that
// every failure is a *ParseError, that a reader that tells its size and
// one that does not (the streaming path) agree, and that whatever is
// accepted is valid and survives a Write/Read round trip.
func FuzzReadBin(f *testing.F) {
	for _, c := range []*COO{sample(), big(20), {Dims: []int{2}, Idx: []int32{1}, Val: []float64{0.5}}} {
		var buf bytes.Buffer
		if err := Write(&buf, c, WriteOptions{Format: BIN, IndexBase: -1}); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes(), uint8(0))
		f.Add(buf.Bytes()[:len(buf.Bytes())-3], uint8(1))
	}
	f.Add(binFile(0, 8, 4, []uint64{3, 3}, 2, [][]uint64{{0, 2}, {1, 1}}, []float64{1, 2}), uint8(0))
	f.Add(binFile(0, 4, 8, []uint64{3}, 2, [][]uint64{{1, 1}}, []float64{1, 2}), uint8(0))
	f.Add(binFile(1, 4, 4, []uint64{3}, 1, [][]uint64{{1}}, []float64{1}), uint8(0))
	f.Add([]byte("0 1 2\n"), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, base uint8) {
		opt := ReadOptions{Format: BIN, IndexBase: int(base % 3)}
		c, err := Read(bytes.NewReader(in), "fuzz", opt)
		c2, err2 := Read(&trickle{r: bytes.NewReader(in), n: 1 + int(base)}, "fuzz", opt)
		if (err == nil) != (err2 == nil) || (err == nil && !sameCOO(c, c2)) {
			t.Fatalf("sized and streamed reads disagree: %v / %v", err, err2)
		}
		if err != nil {
			for _, e := range []error{err, err2} {
				var pe *ParseError
				if !errors.As(e, &pe) {
					t.Fatalf("error %T %v", e, e)
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted an invalid tensor: %v", err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, c, WriteOptions{Format: BIN, IndexBase: opt.IndexBase}); err != nil {
			t.Fatal(err)
		}
		d, err := Read(&buf, "again", opt)
		if err != nil || !sameCOO(c, d) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, c, d)
		}
	})
}
