package tensor

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
)

// dupParallelMin is the number of cells from which findDuplicate first
// checks for duplicates on all cores.
const dupParallelMin = 1 << 16

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
// pieces of a few thousand, on all cores (a histogram pass, then a scatter
// pass into one array of nnz hashes: 8 bytes per cell while it runs), and
// each piece is checked for a repeated hash in a small open-addressing
// table that stays in cache.
func mayHaveDuplicate(dims []int, idx []int32, nnz int) bool {
	n := len(dims)
	strides, exact := radixStrides(dims)
	hash := func(cell []int32) uint64 {
		var h uint64
		if exact {
			for i, x := range cell {
				h += uint64(x) * strides[i]
			}
		} else {
			for _, x := range cell {
				h = (h ^ uint64(uint32(x))) * 0x100000001b3
				h ^= h >> 29
			}
		}
		return mix64(h)
	}
	pbits := 0
	for pbits < 10 && nnz>>(pbits+13) > 0 {
		pbits++
	}
	np := 1 << pbits
	part := func(h uint64) int { return int(h >> (64 - pbits) & uint64(np-1)) }
	if pbits == 0 {
		part = func(uint64) int { return 0 }
	}
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

	// Histogram of partitions per worker's rows.
	hist := make([][]int, workers)
	par(func(w int) {
		h := make([]int, np)
		for k := lo(w); k < lo(w+1); k++ {
			h[part(hash(idx[k*n:(k+1)*n]))]++
		}
		hist[w] = h
	})
	// Where each worker writes each partition, and where partitions start.
	starts := make([]int, np+1)
	pos := 0
	for p := range np {
		starts[p] = pos
		for w := range workers {
			c := hist[w][p]
			hist[w][p] = pos
			pos += c
		}
	}
	starts[np] = pos
	keys := make([]uint64, nnz)
	par(func(w int) {
		at := hist[w]
		for k := lo(w); k < lo(w+1); k++ {
			h := hash(idx[k*n : (k+1)*n])
			p := part(h)
			keys[at[p]] = h
			at[p]++
		}
	})
	// Each partition on its own.
	var next atomic.Int64
	var dup atomic.Bool
	par(func(int) {
		var table []uint64
		for !dup.Load() {
			p := int(next.Add(1) - 1)
			if p >= np {
				return
			}
			ks := keys[starts[p]:starts[p+1]]
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
	return dup.Load()
}
