package tensor

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/dainx/dainx/internal/bigmem"
)

// dupParallelMin is the number of cells from which findDuplicate first
// checks for duplicates on all cores.
const dupParallelMin = 1 << 16

// FindDuplicate reports the first row k (in row order) of idx (nnz cells
// of order len(dims), 0-based, each within dims) whose cell equals an
// earlier row's, and the first such earlier row; found is false if every
// cell is distinct. It is the search Read does.
func FindDuplicate(dims []int, idx []int32, nnz int) (k, first int, found bool) {
	return findDuplicate(dims, idx, nnz)
}

// findDuplicate reports the first row k (in row order) whose cell equals an
// earlier row's cell, and the first such earlier row. Indices must lie
// within dims.
//
// From dupParallelMin cells on, a parallel check that can only err towards
// "maybe" runs first (mayHaveDuplicate); the exact serial search runs only
// when it says maybe, that is when there is a duplicate (or, for grids too
// large for an exact 64-bit key, a 64-bit hash collision).
func findDuplicate(dims []int, idx []int32, nnz int) (k, first int, found bool) {
	if len(dims) == 0 || nnz < 2 {
		return 0, 0, false
	}
	if nnz >= dupParallelMin && !mayHaveDuplicate(dims, idx, nnz) {
		return 0, 0, false
	}
	return findDuplicateSerial(dims, idx, nnz)
}

// mix64 is a bijection of uint64 that spreads every input bit over the
// output (the splitmix64 finalizer).
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// mayHaveDuplicate reports false only when the nnz cells of idx are
// distinct. Each cell gets a 64-bit hash, one-to-one when the grid has
// fewer than 2^63 cells (the mixed-radix key, mixed) and a hash of the
// indices otherwise. The hashes are partitioned by their top bits into
// pieces of about 16K, on all cores, and each piece is checked for a
// repeated hash in a small open-addressing table that stays in cache.
//
// From 2^20 cells on the partitions are handled in 2 rounds of a half
// each, so the array the hashes are gathered into holds about half of them
// (4 bytes per cell instead of 8, while it runs): fresh memory is slow to
// touch on some machines (page faults in a virtual machine: 4–8 ms per MB
// on the 2-core development VM), about as slow as hashing every cell again.
// Each round hashes every cell and keeps those of its partitions (a scatter
// pass); a first pass counts the cells of every partition per worker.
func mayHaveDuplicate(dims []int, idx []int32, nnz int) bool {
	n := len(dims)
	strides, exact := radixStrides(dims)
	pbits := 0
	for pbits < 10 && nnz>>(pbits+14) > 0 {
		pbits++
	}
	rounds := 1
	if nnz >= 1<<20 {
		rounds = 2 // pbits ≥ 6 here
	}
	np := 1 << pbits
	shift := uint(64 - pbits) // h >> 64 is 0 in Go: one partition when pbits is 0
	workers := min(runtime.GOMAXPROCS(0), max(1, nnz/dupParallelMin))
	lo := func(w int) int { return nnz * w / workers }
	par := func(f func(w int)) {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() { defer wg.Done(); f(w) }()
		}
		wg.Wait()
	}
	// each calls f with the hashes of the worker's rows, a batch at a time.
	each := func(w int, f func(hs []uint64)) {
		var buf [1024]uint64
		for k := lo(w); k < lo(w+1); k += len(buf) {
			c := min(len(buf), lo(w+1)-k)
			hashCells(buf[:c], idx[k*n:(k+c)*n], n, strides, exact)
			f(buf[:c])
		}
	}

	// Cells per partition per worker's rows.
	hist := make([][]int, workers)
	par(func(w int) {
		c := make([]int, np)
		each(w, func(hs []uint64) {
			for _, h := range hs {
				c[h>>shift]++
			}
		})
		hist[w] = c
	})
	// Where each worker writes each partition (within its round), where
	// partitions start, and the largest round.
	at := make([][]int, workers)
	for w := range at {
		at[w] = make([]int, np)
	}
	starts := make([]int, np)
	roundEnd := make([]int, rounds)
	most := 0
	for r := range rounds {
		pos := 0
		for p := r * np / rounds; p < (r+1)*np/rounds; p++ {
			starts[p] = pos
			for w := range workers {
				at[w][p] = pos
				pos += hist[w][p]
			}
		}
		roundEnd[r] = pos
		most = max(most, pos)
	}
	keys := bigmem.Make[uint64](most)
	var dup atomic.Bool
	for r := range rounds {
		p0, p1 := r*np/rounds, (r+1)*np/rounds
		par(func(w int) {
			at := at[w]
			each(w, func(hs []uint64) {
				for _, h := range hs {
					if p := int(h >> shift); p >= p0 && p < p1 {
						keys[at[p]] = h
						at[p]++
					}
				}
			})
		})
		// Each partition on its own (its end is the next one's start, or
		// the round's end).
		end := func(p int) int {
			if p+1 == p1 {
				return roundEnd[r]
			}
			return starts[p+1]
		}
		var next atomic.Int64
		next.Store(int64(p0))
		par(func(int) {
			var table []uint64
			for !dup.Load() {
				p := int(next.Add(1) - 1)
				if p >= p1 {
					return
				}
				ks := keys[starts[p]:end(p)]
				size := 1 << max(4, bits.Len(uint(2*len(ks))))
				if cap(table) < size {
					table = make([]uint64, size)
				}
				table = table[:size]
				clear(table)
				mask := uint64(size - 1)
				zero := false
				for _, h := range ks {
					if h == 0 {
						if zero {
							dup.Store(true)
							return
						}
						zero = true
						continue
					}
					for s := h & mask; ; s = (s + 1) & mask {
						if table[s] == 0 {
							table[s] = h
							break
						}
						if table[s] == h {
							dup.Store(true)
							return
						}
					}
				}
			}
		})
		if dup.Load() {
			return true
		}
	}
	return false
}

// hashCells sets dst[i] to the hash of cell i of idx (order n): the
// mixed-radix key when exact, else a hash of the indices, then mix64.
func hashCells(dst []uint64, idx []int32, n int, strides []uint64, exact bool) {
	idx = idx[:len(dst)*n]
	switch {
	case exact && n == 3:
		s0, s1 := strides[0], strides[1]
		for i := range dst {
			c := idx[3*i : 3*i+3 : 3*i+3]
			dst[i] = mix64(uint64(c[0])*s0 + uint64(c[1])*s1 + uint64(c[2]))
		}
	case exact && n == 2:
		s0 := strides[0]
		for i := range dst {
			c := idx[2*i : 2*i+2 : 2*i+2]
			dst[i] = mix64(uint64(c[0])*s0 + uint64(c[1]))
		}
	case exact:
		for i := range dst {
			var h uint64
			for m, x := range idx[i*n : (i+1)*n] {
				h += uint64(x) * strides[m]
			}
			dst[i] = mix64(h)
		}
	default:
		for i := range dst {
			var h uint64
			for _, x := range idx[i*n : (i+1)*n] {
				h = (h ^ uint64(uint32(x))) * 0x100000001b3
				h ^= h >> 29
			}
			dst[i] = mix64(h)
		}
	}
}
