package table

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/dainx/dainx/tensor"
)

// FuzzReadDicts checks that reading a dictionaries file never panics,
// that whatever it accepts is consistent (every mode's IDs as many as
// its size, unique, an int mode's integers) and reads again, written by
// WriteJSON, as the same dictionaries, also against its own mode sizes,
// and that one more entity in a mode of the model's is refused.
func FuzzReadDicts(f *testing.F) {
	good := `{"format": "dainx-dictionaries", "version": 1, "table": "csv", "value": "r", "ids": "first", "modes": [
    {"column": "u", "kind": "int", "size": 3, "ids": [-5,7,9007199254740993]},
    {"column": "i", "kind": "string", "size": 2, "ids": ["a","\u00fc"]},
    {"column": "t", "kind": "time", "size": 14, "bin": "month", "bin_seconds": 0, "first_bin": 600, "origin": "2020-01-01T00:00:00Z"}
  ]}`
	for _, s := range []string{
		good,
		strings.Replace(good, `"size": 3, "ids": [-5,7,9007199254740993]`, `"ids": [1,2,3,4], "size": 3`, 1),
		strings.Replace(good, `[-5,7,9007199254740993]`, `[-5,7,"9"]`, 1),
		strings.Replace(good, `"kind": "string"`, `"kind": "mixed", "kind": "mixed"`, 1),
		strings.Replace(good, `["a","\u00fc"]`, `["a",["b"]]`, 1),
		`{"format": "dainx-dictionaries", "version": 1, "modes": [{"column": "x", "kind": "mixed", "size": 2, "ids": [true, 1.5]}]}`,
		`{"modes": null}`, `[]`, `{"format": 1}`, `{"version": 1e400}`, `{} {}`, ``,
	} {
		f.Add([]byte(s))
	}
	bad := func(format string, a ...any) error { return fmt.Errorf("fuzz: "+format, a...) }
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := readDicts(bytes.NewReader(in), nil, bad)
		if err != nil {
			if _, err := readDicts(bytes.NewReader(in), []int{1, 2, 3}, bad); err == nil {
				t.Fatalf("accepted against dims, refused without")
			}
			return
		}
		total := 0
		for n, m := range d.Modes {
			total += m.Size
			if m.Kind == KindTime {
				continue
			}
			if len(m.IDs) != m.Size {
				t.Fatalf("mode %d: %d IDs, size %d", n, len(m.IDs), m.Size)
			}
			seen := map[string]bool{}
			for i, s := range m.IDs {
				if seen[s] {
					t.Fatalf("mode %d: ID %q twice", n, s)
				}
				seen[s] = true
				if j, ok := m.Lookup(s); !ok || int(j) != i {
					t.Fatalf("mode %d: Lookup(%q) = %d, %v, want %d", n, s, j, ok, i)
				}
				if _, ok := new(big.Int).SetString(s, 10); m.Kind == KindInt && !ok {
					t.Fatalf("mode %d: kind int with ID %q", n, s)
				}
			}
		}
		if total > tensor.MaxDim {
			t.Fatalf("%d entities in all", total)
		}
		var buf bytes.Buffer
		if err := d.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		again, err := readDicts(bytes.NewReader(buf.Bytes()), d.Dims(), bad)
		if err != nil {
			t.Fatalf("written back: %v\n%s", err, buf.Bytes())
		}
		for n, m := range d.Modes {
			a := again.Modes[n]
			if a.Column != m.Column || a.Kind != m.Kind || a.Size != m.Size || !slices.Equal(a.IDs, m.IDs) || a.First != m.First || a.Bin != m.Bin {
				t.Fatalf("mode %d: %+v, read back %+v", n, m, a)
			}
		}
		more := d.Dims()
		more[0]++
		if _, err := readDicts(bytes.NewReader(in), more, bad); err == nil {
			t.Fatalf("accepted against dims %v", more)
		}
	})
}

// pqIntTypes are the integer column types FuzzParquetIDs writes: the
// plain physical types, then INT(bits, signed) and INT(bits, unsigned).
var pqIntTypes = []struct {
	name string
	node parquet.Node
	phys int // 32 or 64
	bits int
	uns  bool
}{
	{"INT32", parquet.Leaf(parquet.Int32Type), 32, 32, false},
	{"INT64", parquet.Leaf(parquet.Int64Type), 64, 64, false},
	{"INT(8,true)", parquet.Int(8), 32, 8, false},
	{"INT(16,true)", parquet.Int(16), 32, 16, false},
	{"INT(32,true)", parquet.Int(32), 32, 32, false},
	{"INT(64,true)", parquet.Int(64), 64, 64, false},
	{"UINT_8", parquet.Uint(8), 32, 8, true},
	{"UINT_16", parquet.Uint(16), 32, 16, true},
	{"UINT_32", parquet.Uint(32), 32, 32, true},
	{"UINT_64", parquet.Uint(64), 64, 64, true},
}

// exactInt is the integer the raw physical value raw denotes in a column
// of the given width and signedness (math/big, the reference), and
// whether it is in the type's range.
func exactInt(raw int64, phys, bits int, uns bool) (*big.Int, bool) {
	x := big.NewInt(raw)
	if phys == 32 {
		x.SetInt64(int64(int32(raw)))
	}
	if uns && x.Sign() < 0 { // the physical bits read as unsigned
		x.Add(x, new(big.Int).Lsh(big.NewInt(1), uint(phys)))
	}
	lo, hi := new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), uint(bits-1))), new(big.Int).Lsh(big.NewInt(1), uint(bits-1))
	if uns {
		lo, hi = big.NewInt(0), new(big.Int).Lsh(big.NewInt(1), uint(bits))
	}
	return x, x.Cmp(lo) >= 0 && x.Cmp(hi) < 0
}

// FuzzParquetIDs checks the Parquet reader's integer conversion: a raw
// physical value of every integer type (plain INT32/INT64, INT(n,
// signed), INT(n, unsigned), and the converted types INT_8…UINT_64) is
// the exact integer (math/big) or, out of its type's range, an error; and
// a one-row file of that column read as a table gives that integer as
// its ID text, or an error naming the file, the row and the column.
func FuzzParquetIDs(f *testing.F) {
	for _, v := range []int64{0, 1, -1, 127, 128, 255, 256, -129, 32767, 65535, 65536, 1<<31 - 1, -1 << 31, 1 << 32, 1<<63 - 1, -1 << 63} {
		for k := range pqIntTypes {
			f.Add(v, uint8(k))
		}
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, raw int64, k uint8) {
		// The conversion, for the converted types too.
		cts := []deprecated.ConvertedType{deprecated.Int8, deprecated.Int16, deprecated.Int32, deprecated.Int64,
			deprecated.Uint8, deprecated.Uint16, deprecated.Uint32, deprecated.Uint64}
		for i, ct := range cts {
			bits, uns := 8<<(i%4), i >= 4
			phys := max(32, bits)
			c := pqColumn{name: "id", kind: colInt, bits: phys, typ: "converted"}
			c.intType(nil, &ct)
			var v parquet.Value
			if phys == 32 {
				v = parquet.Int32Value(int32(raw))
			} else {
				v = parquet.Int64Value(raw)
			}
			checkInt(t, c, v, raw, phys, bits, uns)
			// The same through the logical type.
			l := pqColumn{name: "id", kind: colInt, bits: phys, typ: "logical"}
			l.intType(&format.LogicalType{Value: &format.IntType{BitWidth: int8(bits), IsSigned: !uns}}, nil)
			checkInt(t, l, v, raw, phys, bits, uns)
		}
		// A file of one row of that value.
		ty := pqIntTypes[int(k)%len(pqIntTypes)]
		want, ok := exactInt(raw, ty.phys, ty.bits, ty.uns)
		v := parquet.Int64Value(raw)
		if ty.phys == 32 {
			v = parquet.Int32Value(int32(raw))
		}
		p := filepath.Join(dir, "f.parquet")
		fw, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		w := parquet.NewGenericWriter[any](fw, parquet.NewSchema("t", parquet.Group{"id": ty.node}))
		_, err = w.WriteRows([]parquet.Row{{v.Level(0, 0, 0)}})
		if err == nil {
			err = w.Close()
		}
		fw.Close()
		if err != nil {
			return // the writer refused the value
		}
		_, d, err := ReadFile(p, Spec{Modes: []Mode{{Column: "id"}}}, Options{})
		switch {
		case ok && err != nil:
			t.Fatalf("%s %d: %v", ty.name, raw, err)
		case ok && d.Modes[0].IDs[0] != want.String():
			t.Fatalf("%s %d: ID %s, want %s", ty.name, raw, d.Modes[0].IDs[0], want)
		case !ok && (err == nil || !strings.HasPrefix(err.Error(), p+`: row 1: column "id": value `)):
			t.Fatalf("%s %d (out of range): %v", ty.name, raw, err)
		}
		if err != nil {
			var pe *tensor.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v", err, err)
			}
		}
	})
}

// checkInt checks c.integer(v) against exactInt.
func checkInt(t *testing.T, c pqColumn, v parquet.Value, raw int64, phys, bits int, uns bool) {
	t.Helper()
	want, ok := exactInt(raw, phys, bits, uns)
	x, b, err := c.integer(v)
	got := big.NewInt(x)
	if b != 0 {
		got.SetUint64(b)
	}
	switch {
	case ok && err != nil:
		t.Fatalf("%s bits %d unsigned %v: %d: %v", c.typ, bits, uns, raw, err)
	case ok && got.Cmp(want) != 0:
		t.Fatalf("%s bits %d unsigned %v: %d is %s, want %s", c.typ, bits, uns, raw, got, want)
	case !ok && err == nil:
		t.Fatalf("%s bits %d unsigned %v: %d (%s) accepted as %s", c.typ, bits, uns, raw, want, got)
	}
}
