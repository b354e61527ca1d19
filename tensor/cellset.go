package tensor

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/dainx/dainx/internal/bigmem"
)

// CellSet is a set of cells (index tuples) of a tensor with fixed dims, for
// rejection sampling: "is this cell already observed / already drawn?".
//
// Cells are keyed by their mixed-radix number (a uint64) when the product of
// the dims is below 2^63, and by a string of their raw index bytes otherwise.
// The uint64 keys live in an open-addressing table with linear probing, 8
// bytes a slot, with about 1.5 slots per cell (12 bytes a cell; a Go map
// takes 20 to 40): the set of every observed cell of a large tensor is one
// of the larger things a run holds. A CellSet is not safe for concurrent use
// by multiple goroutines while one of them calls Add.
type CellSet struct {
	dims    []int
	strides []uint64 // nil when the string fallback is used
	slots   []uint64 // key+1 of each cell, 0 an empty slot
	n       int      // cells in slots
	strs    map[string]struct{}
	buf     []byte
}

// Slots per cell of a CellSet's table: slotsFor(capacity) slots hold
// capacity cells at a load of 2/3, and the table doubles when a cell would
// take it past 4/5.
func slotsFor(cells int) int { return max(cells+cells/2+1, 16) }

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
		s.slots = bigmem.Make[uint64](slotsFor(capacity))
	} else {
		s.strs = make(map[string]struct{}, capacity)
		s.buf = make([]byte, 0, 4*len(dims))
	}
	return s
}

// find returns the slot of key in slots: the one holding key+1, or the
// empty slot where it would go.
func find(slots []uint64, key uint64) int {
	hi, _ := bits.Mul64(mix64(key), uint64(len(slots)))
	i := int(hi)
	for {
		switch slots[i] {
		case key + 1, 0:
			return i
		}
		if i++; i == len(slots) {
			i = 0
		}
	}
}

// addKey inserts key and reports whether it was not there.
func (s *CellSet) addKey(key uint64) bool {
	i := find(s.slots, key)
	if s.slots[i] != 0 {
		return false
	}
	if 5*(s.n+1) > 4*len(s.slots) {
		old := s.slots
		s.slots = bigmem.Make[uint64](2 * len(old))
		for _, k := range old {
			if k != 0 {
				s.slots[find(s.slots, k-1)] = k
			}
		}
		i = find(s.slots, key)
	}
	s.slots[i] = key + 1
	s.n++
	return true
}

// Add inserts cell and reports whether it was not in the set before. The
// cell is copied (the caller may reuse the slice). It panics if the cell has
// the wrong order or an index outside the set's dims.
func (s *CellSet) Add(cell []int32) bool {
	s.check(cell)
	if s.strides != nil {
		return s.addKey(radixKey(s.strides, cell))
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
		return s.slots[find(s.slots, radixKey(s.strides, cell))] != 0
	}
	var arr [64]byte
	_, ok := s.strs[string(bytesKey(arr[:0], cell))]
	return ok
}

// Len returns the number of cells in the set.
func (s *CellSet) Len() int {
	if s.strides != nil {
		return s.n
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
