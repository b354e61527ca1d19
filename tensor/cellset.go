package tensor

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// CellSet is a set of cells (index tuples) of a tensor with fixed dims, for
// rejection sampling: "is this cell already observed / already drawn?".
//
// Cells are keyed by their mixed-radix number (a uint64) when the product of
// the dims is below 2^63, and by a string of their raw index bytes otherwise.
// A CellSet is not safe for concurrent use by multiple goroutines while one
// of them calls Add.
type CellSet struct {
	dims    []int
	strides []uint64 // nil when the string fallback is used
	ints    map[uint64]struct{}
	strs    map[string]struct{}
	buf     []byte
}

// NewCellSet returns an empty set for cells of a tensor with the given mode
// sizes, with room for about capacity cells before it grows. It panics if
// dims is empty or has a negative entry.
func NewCellSet(dims []int, capacity int) *CellSet {
	if len(dims) == 0 {
		panic("tensor: NewCellSet with no dims")
	}
	for i, d := range dims {
		if d < 0 {
			panic(fmt.Sprintf("tensor: NewCellSet: mode %d has negative size %d", i+1, d))
		}
	}
	capacity = max(capacity, 0)
	s := &CellSet{dims: append([]int(nil), dims...)}
	if strides, ok := radixStrides(dims); ok {
		s.strides = strides
		s.ints = make(map[uint64]struct{}, capacity)
	} else {
		s.strs = make(map[string]struct{}, capacity)
		s.buf = make([]byte, 0, 4*len(dims))
	}
	return s
}

// Add inserts cell and reports whether it was not in the set before. The
// cell is copied (the caller may reuse the slice). It panics if the cell has
// the wrong order or an index outside the set's dims.
func (s *CellSet) Add(cell []int32) bool {
	s.check(cell)
	if s.strides != nil {
		key := radixKey(s.strides, cell)
		if _, ok := s.ints[key]; ok {
			return false
		}
		s.ints[key] = struct{}{}
		return true
	}
	s.buf = bytesKey(s.buf[:0], cell)
	if _, ok := s.strs[string(s.buf)]; ok {
		return false
	}
	s.strs[string(s.buf)] = struct{}{}
	return true
}

// Has reports whether cell is in the set. It panics if the cell has the
// wrong order or an index outside the set's dims.
func (s *CellSet) Has(cell []int32) bool {
	s.check(cell)
	if s.strides != nil {
		_, ok := s.ints[radixKey(s.strides, cell)]
		return ok
	}
	var arr [64]byte
	_, ok := s.strs[string(bytesKey(arr[:0], cell))]
	return ok
}

// Len returns the number of cells in the set.
func (s *CellSet) Len() int {
	if s.strides != nil {
		return len(s.ints)
	}
	return len(s.strs)
}

func (s *CellSet) check(cell []int32) {
	if len(cell) != len(s.dims) {
		panic(fmt.Sprintf("tensor: CellSet: cell of order %d, want %d", len(cell), len(s.dims)))
	}
	for i, x := range cell {
		if x < 0 || int(x) >= s.dims[i] {
			panic(fmt.Sprintf("tensor: CellSet: index %d in mode %d out of range [0, %d)", x, i+1, s.dims[i]))
		}
	}
}

// radixStrides returns the mixed-radix strides of dims (last mode fastest)
// and true when the product of dims is below 2^63, so every cell within dims
// has a distinct uint64 key.
func radixStrides(dims []int) ([]uint64, bool) {
	strides := make([]uint64, len(dims))
	p := uint64(1)
	for i := len(dims) - 1; i >= 0; i-- {
		strides[i] = p
		hi, lo := bits.Mul64(p, uint64(max(dims[i], 0)))
		if hi != 0 || lo >= 1<<63 {
			return nil, false
		}
		p = lo
	}
	return strides, true
}

func radixKey(strides []uint64, cell []int32) uint64 {
	var k uint64
	for i, x := range cell {
		k += uint64(x) * strides[i]
	}
	return k
}

// bytesKey appends the little-endian bytes of every index of cell to buf.
func bytesKey(buf []byte, cell []int32) []byte {
	for _, x := range cell {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(x))
	}
	return buf
}
