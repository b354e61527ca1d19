package tensor

import (
	"bytes"
	"compress/gzip"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadBinPart: the shares of a .bin file, for every share count up to
// more shares than cells, are the file's cells in order, as Read gives
// them, for both widths and index bases; a bad cell is reported by the
// share that holds it with Read's message, and the lowest key over the
// shares picks Read's error; a gzip .bin is refused.
func TestReadBinPart(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	dims := []uint64{7, 5, 9}
	const nnz = 23
	idx := make([][]uint64, len(dims))
	vals := make([]float64, nnz)
	for k := 0; k < nnz; k++ {
		for m, d := range dims {
			// distinct cells: mode 1 and 2 from k, mode 3 random
			switch m {
			case 0:
				idx[m] = append(idx[m], uint64(k%7))
			case 1:
				idx[m] = append(idx[m], uint64(k/7))
			default:
				idx[m] = append(idx[m], uint64(rng.IntN(int(d))))
			}
		}
		vals[k] = rng.NormFloat64()
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, w := range []struct{ iw, vw uint64 }{{4, 8}, {8, 4}} {
		path := write("t.bin", binFile(0, w.iw, w.vw, dims, nnz, idx, vals))
		want, err := ReadFile(path, ReadOptions{Format: BIN})
		if err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= nnz+2; n++ {
			var gotIdx []int32
			var gotVal []float64
			for k := 0; k < n; k++ {
				p, key, err := ReadBinPart(path, 0, k, n)
				if err != nil || key != -1 {
					t.Fatalf("widths %v, share %d of %d: key %d, %v", w, k, n, key, err)
				}
				if p.First != len(gotVal) || p.NNZ != nnz || !slices.Equal(p.Cells.Dims, want.Dims) {
					t.Fatalf("share %d of %d: first %d (want %d), nnz %d, dims %v", k, n, p.First, len(gotVal), p.NNZ, p.Cells.Dims)
				}
				gotIdx, gotVal = append(gotIdx, p.Cells.Idx...), append(gotVal, p.Cells.Val...)
			}
			if !slices.Equal(gotIdx, want.Idx) || !slices.Equal(gotVal, want.Val) {
				t.Fatalf("widths %v, %d shares: the cells differ from Read's", w, n)
			}
		}
	}
	// 1-based indices: the same cells less one.
	one := make([][]uint64, len(idx))
	for m := range idx {
		for _, x := range idx[m] {
			one[m] = append(one[m], x+1)
		}
	}
	path := write("one.bin", binFile(0, 4, 8, dims, nnz, one, vals))
	want, _ := ReadFile(path, ReadOptions{Format: BIN, IndexBase: 1})
	p, _, err := ReadBinPart(path, 1, 0, 1)
	if err != nil || !slices.Equal(p.Cells.Idx, want.Idx) {
		t.Fatalf("base 1: %v", err)
	}

	// Bad cells: an index of mode 3 in cell 20, an index of mode 2 in cell
	// 18 (met first by Read: mode 2 before mode 3) and a value in cell 1
	// (met last: values after all indices).
	bad := func(mut func(idx [][]uint64, vals []float64)) string {
		bi := make([][]uint64, len(idx))
		for m := range idx {
			bi[m] = slices.Clone(idx[m])
		}
		bv := slices.Clone(vals)
		mut(bi, bv)
		return write("bad.bin", binFile(0, 4, 8, dims, nnz, bi, bv))
	}
	for _, c := range []struct {
		name string
		path string
	}{
		{"mode 3", bad(func(i [][]uint64, v []float64) { i[2][20] = 9 })},
		{"mode 2 before mode 3", bad(func(i [][]uint64, v []float64) { i[2][20] = 9; i[1][18] = 5 })},
		{"index before value", bad(func(i [][]uint64, v []float64) { i[2][20] = 9; v[1] = math.Inf(1) })},
		{"value", bad(func(i [][]uint64, v []float64) { v[1] = math.Inf(1) })},
	} {
		_, readErr := ReadFile(c.path, ReadOptions{Format: BIN})
		if readErr == nil {
			t.Fatalf("%s: Read found nothing wrong", c.name)
		}
		for _, n := range []int{1, 2, 3, 5} {
			best, bestKey := error(nil), int64(-1)
			for k := 0; k < n; k++ {
				_, key, err := ReadBinPart(c.path, 0, k, n)
				if (err == nil) != (key == -1) {
					t.Fatalf("%s, share %d of %d: key %d with error %v", c.name, k, n, key, err)
				}
				if err != nil && (bestKey < 0 || key < bestKey) {
					best, bestKey = err, key
				}
			}
			if best == nil || best.Error() != readErr.Error() {
				t.Errorf("%s, %d shares: %v, want Read's %v", c.name, n, best, readErr)
			}
		}
	}

	// A header error: every share gives it, with key 0.
	trunc := write("trunc.bin", binFile(0, 4, 8, dims, nnz, idx, vals)[:60])
	for k := 0; k < 2; k++ {
		if _, key, err := ReadBinPart(trunc, 0, k, 2); err == nil || key != 0 || !strings.Contains(err.Error(), "truncated SPLATT .bin file") {
			t.Errorf("truncated, share %d: key %d, %v", k, key, err)
		}
	}
	// gzip: refused with the reason.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(binFile(0, 4, 8, dims, nnz, idx, vals))
	zw.Close()
	if _, _, err := ReadBinPart(write("t.bin.gz", gz.Bytes()), 0, 0, 2); err == nil || !strings.Contains(err.Error(), "gunzip it first") {
		t.Errorf("gzip .bin: %v", err)
	}
}
