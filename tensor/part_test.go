package tensor

import (
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadPart: the parts of every split of a file, read with the order of
// its first data line, hold the file's cells in order, and their line
// counts number the file's lines.
func TestReadPart(t *testing.T) {
	var b strings.Builder
	b.WriteString("# comment\n\n")
	for i := 0; i < 300; i++ {
		if i%37 == 5 {
			b.WriteString("# another\n")
		}
		fmt.Fprintf(&b, "%d\t%d\t%d\t%d.5\r\n", i%7, i%11, i, i)
	}
	b.WriteString("1\t2\t999\t3") // no final newline
	text := b.String()
	dir := t.TempDir()
	plain := filepath.Join(dir, "x.tsv")
	if err := os.WriteFile(plain, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(dir, "x.tsv.gz")
	f, _ := os.Create(gz)
	zw := gzip.NewWriter(f)
	zw.Write([]byte(text))
	zw.Close()
	f.Close()
	want, err := ReadFile(plain, ReadOptions{Format: TSV, IndexBase: -1})
	if err != nil {
		t.Fatal(err)
	}
	totalLines := strings.Count(text, "\n") + 1
	for _, path := range []string{plain, gz} {
		size, _, err := TextSize(path)
		if err != nil || size != int64(len(text)) {
			t.Fatalf("%s: size %d, %v", path, size, err)
		}
		for n := 1; n <= 7; n++ {
			var idx []int32
			var val []float64
			lines := 0
			for k := 0; k < n; k++ {
				lo, hi := PartRange(size, k, n)
				o, err := FirstOrder(path, lo, hi)
				if err != nil || (o != 3 && o != 0) {
					t.Fatalf("%s %d/%d: order %d, %v", path, k, n, o, err)
				}
				p, l, err := ReadPart(path, ReadOptions{Format: TSV, IndexBase: -1}, lo, hi, 3)
				if err != nil {
					t.Fatalf("%s %d/%d: %v", path, k, n, err)
				}
				idx, val = append(idx, p.Cells.Idx...), append(val, p.Cells.Val...)
				lines += l.N
			}
			if !slices.Equal(idx, want.Idx) || !slices.Equal(val, want.Val) || lines != totalLines {
				t.Fatalf("%s in %d parts: %d cells, %d lines; want %d, %d", path, n, len(val), lines, want.NNZ(), totalLines)
			}
		}
	}
}

// TestReadPartError: a bad line is reported with its line in the part, and
// the part still counts all of its lines.
func TestReadPartError(t *testing.T) {
	text := "0\t0\t1\n1\t1\t2\n2\tx\t3\n3\t3\t4\n"
	path := filepath.Join(t.TempDir(), "bad.tsv")
	os.WriteFile(path, []byte(text), 0o644)
	lo, hi := int64(6), int64(len(text)) // from inside line 1: lines 2–4
	_, l, err := ReadPart(path, ReadOptions{Format: TSV, IndexBase: -1}, lo, hi, 2)
	pe, ok := err.(*ParseError)
	if !ok || pe.Line != 2 || l.N != 3 {
		t.Fatalf("%v (lines %d): want line 2 of the part, 3 lines", err, l.N)
	}
}
