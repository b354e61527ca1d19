package tensor

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dainx/dainx/internal/bigmem"
)

// MaxDim is the largest mode size a COO may have. Indices are int32 and a
// mode size must fit in int32 too, so the largest index is MaxDim-1.
const MaxDim = math.MaxInt32

// MaxValue is the largest magnitude a cell value may have: the square root
// of the largest float32, 1.8446743e19. The models train in float32 on
// squared errors, so a larger value overflows to +Inf in the first loss.
// Readers refuse larger values (with file and line), as Validate does.
const MaxValue = 1.8446743e19

// valueOK reports whether v is finite and at most MaxValue in magnitude.
func valueOK(v float64) bool { return v-v == 0 && math.Abs(v) <= MaxValue }

// valueProblem says why v is refused ("is not finite" or "is too large …").
func valueProblem(v float64) string {
	if v-v != 0 {
		return "is not finite"
	}
	return fmt.Sprintf("is too large: its square overflows float32 (|value| must be at most %.8g); rescale the values", MaxValue)
}

// COO is a sparse tensor in coordinate format.
//
// With N = len(Dims) (the order) and NNZ = len(Val), Idx has NNZ×N entries
// in row-major order: cell k is Idx[k*N : (k+1)*N], holding 0-based entity
// indices with 0 <= Idx[k*N+n] < Dims[n], and its value is Val[k].
type COO struct {
	Dims []int     // mode sizes I_1..I_N; N = len(Dims) is the order
	Idx  []int32   // NNZ×N indices, row-major, 0-based
	Val  []float64 // NNZ values
}

// Order returns the number of modes N = len(t.Dims).
func (t *COO) Order() int { return len(t.Dims) }

// NNZ returns the number of stored cells, len(t.Val).
func (t *COO) NNZ() int { return len(t.Val) }

// Cell returns the N indices of cell k as a view into t.Idx (not a copy;
// its capacity is limited to N so appending to it cannot clobber row k+1).
// It panics if k is out of range.
func (t *COO) Cell(k int) []int32 {
	n := len(t.Dims)
	return t.Idx[k*n : (k+1)*n : (k+1)*n]
}

// Subset returns a new COO holding copies of the cells at the given row
// numbers, in the order given, with a copy of the same Dims. It panics if a
// row is out of range.
func (t *COO) Subset(rows []int) *COO {
	n := len(t.Dims)
	nnz := t.NNZ()
	u := &COO{
		Dims: append([]int(nil), t.Dims...),
		Idx:  bigmem.Make[int32](0, len(rows)*n),
		Val:  bigmem.Make[float64](len(rows)),
	}
	for i, r := range rows {
		if r < 0 || r >= nnz {
			panic(fmt.Sprintf("tensor: Subset row %d out of range [0, %d)", r, nnz))
		}
		u.Idx = append(u.Idx, t.Idx[r*n:(r+1)*n]...)
		u.Val[i] = t.Val[r]
	}
	return u
}

// Partition returns k new COOs, each with a copy of t's Dims: out[p] holds
// copies of the cells r with part[r] == p, in t's order. Each part is
// allocated at its exact size, so the parts and t take twice t's memory
// and no more. It panics if len(part) is not t.NNZ() or a part is ≥ k.
func (t *COO) Partition(part []uint8, k int) []*COO {
	n := len(t.Dims)
	if len(part) != t.NNZ() {
		panic(fmt.Sprintf("tensor: Partition of %d cells by %d parts", t.NNZ(), len(part)))
	}
	counts := make([]int, k)
	for _, p := range part {
		if int(p) >= k {
			panic(fmt.Sprintf("tensor: Partition into %d parts: part %d", k, p))
		}
		counts[p]++
	}
	out := make([]*COO, k)
	for p, c := range counts {
		out[p] = &COO{Dims: append([]int(nil), t.Dims...), Idx: bigmem.Make[int32](0, c*n), Val: bigmem.Make[float64](0, c)}
	}
	for r, p := range part {
		u := out[p]
		u.Idx = append(u.Idx, t.Idx[r*n:(r+1)*n]...)
		u.Val = append(u.Val, t.Val[r])
	}
	return out
}

// Append returns a new COO holding the cells of t followed by those of u.
// Its Dims is the elementwise maximum of t.Dims and u.Dims. It panics if the
// orders differ. Duplicates between t and u are not checked (see Validate).
func (t *COO) Append(u *COO) *COO {
	if len(t.Dims) != len(u.Dims) {
		panic(fmt.Sprintf("tensor: Append of order %d to order %d", len(u.Dims), len(t.Dims)))
	}
	dims := append([]int(nil), t.Dims...)
	for i, d := range u.Dims {
		dims[i] = max(dims[i], d)
	}
	idx := bigmem.Make[int32](0, len(t.Idx)+len(u.Idx))
	idx = append(append(idx, t.Idx...), u.Idx...)
	val := bigmem.Make[float64](0, len(t.Val)+len(u.Val))
	val = append(append(val, t.Val...), u.Val...)
	return &COO{Dims: dims, Idx: idx, Val: val}
}

// Clone returns a deep copy of t.
func (t *COO) Clone() *COO {
	return &COO{
		Dims: append([]int(nil), t.Dims...),
		Idx:  append([]int32(nil), t.Idx...),
		Val:  append([]float64(nil), t.Val...),
	}
}

// Validate checks that t is well formed: order at least 1, every mode size in
// [1, MaxDim], len(Idx) == NNZ×N, every index within its mode, every value
// finite, and no cell stored twice. It returns nil or an error describing the
// first problem found (by row number).
func (t *COO) Validate() error {
	n := len(t.Dims)
	if n == 0 {
		return errors.New("tensor: order 0 (no dims)")
	}
	for i, d := range t.Dims {
		if d < 1 || d > MaxDim {
			return fmt.Errorf("tensor: mode %d has size %d, want 1..%d", i+1, d, MaxDim)
		}
	}
	nnz := len(t.Val)
	if len(t.Idx) != nnz*n {
		return fmt.Errorf("tensor: %d indices for %d cells of order %d, want %d", len(t.Idx), nnz, n, nnz*n)
	}
	for k := range nnz {
		for m, x := range t.Idx[k*n : (k+1)*n] {
			if x < 0 || int(x) >= t.Dims[m] {
				return fmt.Errorf("tensor: cell %d %s: index %d in mode %d out of range [0, %d)",
					k, fmtCell(t.Cell(k), 0), x, m+1, t.Dims[m])
			}
		}
		if v := t.Val[k]; !valueOK(v) {
			return fmt.Errorf("tensor: cell %d %s: value %v %s", k, fmtCell(t.Cell(k), 0), v, valueProblem(v))
		}
	}
	if k, first, ok := findDuplicate(t.Dims, t.Idx, nnz); ok {
		return fmt.Errorf("tensor: cell %d %s duplicates cell %d", k, fmtCell(t.Cell(k), 0), first)
	}
	return nil
}

// fmtCell formats a cell as "(i1, i2, ...)" with base added to every index.
func fmtCell(cell []int32, base int64) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, x := range cell {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(int64(x)+base, 10))
	}
	b.WriteByte(')')
	return b.String()
}

// findDuplicateSerial is findDuplicate on one goroutine, with a map or a
// bitset over the grid.
func findDuplicateSerial(dims []int, idx []int32, nnz int) (k, first int, found bool) {
	n := len(dims)
	if n == 0 || nnz < 2 {
		return 0, 0, false
	}
	if strides, ok := radixStrides(dims); ok {
		if total := strides[0] * uint64(dims[0]); total <= max(64*uint64(nnz), 1<<24) {
			// Dense enough for a bitset over the whole grid (at most 8 bytes
			// per cell, or 2 MiB); the earlier row is found only on a hit.
			bitset := make([]uint64, (total+63)/64)
			for k := range nnz {
				key := radixKey(strides, idx[k*n:(k+1)*n])
				w, b := key/64, uint64(1)<<(key%64)
				if bitset[w]&b != 0 {
					for f := range k {
						if radixKey(strides, idx[f*n:(f+1)*n]) == key {
							return k, f, true
						}
					}
				}
				bitset[w] |= b
			}
			return 0, 0, false
		}
		seen := make(map[uint64]int32, nnz)
		for k := range nnz {
			key := radixKey(strides, idx[k*n:(k+1)*n])
			if f, dup := seen[key]; dup {
				return k, int(f), true
			}
			seen[key] = int32(k)
		}
		return 0, 0, false
	}
	seen := make(map[string]int, nnz)
	buf := make([]byte, 0, 4*n)
	for k := range nnz {
		buf = bytesKey(buf[:0], idx[k*n:(k+1)*n])
		if f, dup := seen[string(buf)]; dup {
			return k, f, true
		}
		seen[string(buf)] = k
	}
	return 0, 0, false
}
