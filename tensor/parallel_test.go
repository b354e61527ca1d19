package tensor

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// memGroup is a Group of goroutines in one process: SumI64 waits for every
// member's call of the same round and sums their vectors.
type memGroup struct {
	mu    sync.Mutex
	cond  *sync.Cond
	size  int
	round int
	n     int
	acc   []int64
	out   []int64
}

type memMember struct {
	g    *memGroup
	rank int
}

func newMemGroup(size int) []*memMember {
	g := &memGroup{size: size}
	g.cond = sync.NewCond(&g.mu)
	var ms []*memMember
	for r := range size {
		ms = append(ms, &memMember{g, r})
	}
	return ms
}

func (m *memMember) Rank() int { return m.rank }
func (m *memMember) Size() int { return m.g.size }
func (m *memMember) SumI64(x []int64) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		g.acc = make([]int64, len(x))
	}
	if len(x) != len(g.acc) {
		panic(fmt.Sprintf("SumI64 of %d and %d elements in one round", len(x), len(g.acc)))
	}
	for i, v := range x {
		g.acc[i] += v
	}
	round := g.round
	if g.n++; g.n == g.size {
		g.out, g.n, g.round = g.acc, 0, g.round+1
		g.cond.Broadcast()
	}
	for g.round == round {
		g.cond.Wait()
	}
	copy(x, g.out)
}

// split cuts t into p parts of consecutive cells (some possibly empty).
func split(t *COO, p int) []*COO {
	var parts []*COO
	for r := range p {
		lo, hi := r*t.NNZ()/p, (r+1)*t.NNZ()/p
		rows := make([]int, hi-lo)
		for i := range rows {
			rows[i] = lo + i
		}
		parts = append(parts, t.Subset(rows))
	}
	return parts
}

// runParallel writes parts to path with WriteFileParallel, one goroutine
// per member, and returns each member's error.
func runParallel(path string, parts []*COO, opt WriteOptions) []error {
	ms := newMemGroup(len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for r := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = WriteFileParallel(path, parts[r], opt, ms[r])
		}()
	}
	wg.Wait()
	return errs
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWriteFileParallel: for every format, with and without gzip, 1 to 4
// members (with empty parts) write WriteFile's bytes of the whole tensor
// (after decompression for .gz; byte for byte for text with one member),
// and leave no temporary file.
func TestWriteFileParallel(t *testing.T) {
	x := &COO{Dims: []int{5, 7, 3}}
	for k := range 11 {
		x.Idx = append(x.Idx, int32(k%5), int32((k*3)%7), int32(k%3))
		x.Val = append(x.Val, float64(k)/3) // not float32: 8-byte BIN values
	}
	y := &COO{Dims: x.Dims, Idx: x.Idx, Val: make([]float64, x.NNZ())}
	for k := range y.Val {
		y.Val[k] = float64(k) / 4 // exact float32: 4-byte BIN values
	}
	y.Val[9] = 0.1 // only in the last part: the members must agree on 8 bytes
	for _, ten := range []*COO{x, y} {
		for _, name := range []string{"a.tsv", "a.tns", "a.bin", "a.tsv.gz", "a.bin.gz"} {
			for p := 1; p <= 4; p++ {
				dir := t.TempDir()
				path := filepath.Join(dir, name)
				opt := WriteOptions{Format: FormatOf(name), IndexBase: -1}
				for r, err := range runParallel(path, split(ten, p), opt) {
					if err != nil {
						t.Fatalf("%s, %d members: rank %d: %v", name, p, r, err)
					}
				}
				want := filepath.Join(dir, "want-"+name)
				if err := WriteFile(want, ten, opt); err != nil {
					t.Fatal(err)
				}
				got, _ := os.ReadFile(path)
				wb, _ := os.ReadFile(want)
				if filepath.Ext(name) == ".gz" {
					if p == 1 && name == "a.tsv.gz" && !bytes.Equal(got, wb) {
						t.Errorf("%s, one member: not WriteFile's bytes", name)
					}
					got, wb = gunzip(t, got), gunzip(t, wb)
				}
				if !bytes.Equal(got, wb) {
					t.Errorf("%s, %d members: %d bytes differ from WriteFile's %d", name, p, len(got), len(wb))
				}
				if ents, _ := os.ReadDir(dir); len(ents) != 2 {
					t.Errorf("%s, %d members: %d files left in the directory, want 2", name, p, len(ents))
				}
				if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
					t.Errorf("%s: mode %v", name, st.Mode())
				}
			}
		}
	}
}

// TestWriteFileParallelFailures: a member with an invalid part, dims that
// differ, or an unwritable directory: the failing member returns its own
// error, the others ErrOtherRank, and no file (temporary or final) is left;
// an existing file at path is left as it was.
func TestWriteFileParallelFailures(t *testing.T) {
	x := &COO{Dims: []int{4, 4}, Idx: []int32{0, 1, 2, 3, 3, 0}, Val: []float64{1, 2, 3}}
	bad := &COO{Dims: []int{4, 4}, Idx: []int32{0, 9}, Val: []float64{1}}
	other := &COO{Dims: []int{4, 5}, Idx: []int32{0, 1}, Val: []float64{1}}
	for _, c := range []struct {
		name  string
		parts []*COO
		fails int // the member that fails on its own
	}{
		{"invalid part", []*COO{x, bad, x}, 1},
		{"different dims", []*COO{x, x, other}, -1},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "out.tsv")
		os.WriteFile(path, []byte("old\n"), 0o644)
		errs := runParallel(path, c.parts, WriteOptions{Format: TSV, IndexBase: -1})
		for r, err := range errs {
			switch {
			case err == nil:
				t.Errorf("%s: rank %d: no error", c.name, r)
			case r == c.fails && errors.Is(err, ErrOtherRank):
				t.Errorf("%s: rank %d: %v, want its own error", c.name, r, err)
			case c.fails >= 0 && r != c.fails && !errors.Is(err, ErrOtherRank):
				t.Errorf("%s: rank %d: %v, want ErrOtherRank", c.name, r, err)
			}
		}
		if b, _ := os.ReadFile(path); string(b) != "old\n" {
			t.Errorf("%s: the existing file was changed to %q", c.name, b)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%s: %d files in the directory, want the old one only", c.name, len(ents))
		}
	}
	errs := runParallel(filepath.Join(t.TempDir(), "no", "such", "dir", "out.tsv"), []*COO{x, x}, WriteOptions{Format: TSV, IndexBase: -1})
	if errs[0] == nil || errors.Is(errs[0], ErrOtherRank) || !errors.Is(errs[1], ErrOtherRank) {
		t.Errorf("missing directory: rank 0 %v, rank 1 %v", errs[0], errs[1])
	}
}

// TestWriteFileParallelDevNull: a path that is not a regular file is
// written in place, and left there.
func TestWriteFileParallelDevNull(t *testing.T) {
	x := &COO{Dims: []int{4, 4}, Idx: []int32{0, 1, 2, 3, 3, 0}, Val: []float64{1, 2, 3}}
	for r, err := range runParallel(os.DevNull, split(x, 3), WriteOptions{Format: BIN, IndexBase: -1}) {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if st, err := os.Stat(os.DevNull); err != nil || st.Mode().IsRegular() {
		t.Fatalf("%s: %v %v", os.DevNull, st, err)
	}
}
