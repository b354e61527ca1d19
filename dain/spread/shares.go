// Package spread is the arithmetic of a dainx run spread over the
// processes of a cluster (package dain's RunOn): which process's share
// holds a draw (PickShare, DistinctShares), prefix counts over the
// processes (CountBefore, Counts), records sent to the process that owns
// their cell (ToOwners), float64s carried through an int32 exchange,
// reductions of per-mode weights (SumModes, MaxModes), the check that the
// model replicas agree (Replicas), the choice of dain-agree's cells over
// the processes (AgreeKeep), and the report of the ranks' times and memory
// (Report, Recorder). On one process (cluster.Local) every function is
// the one-process arithmetic and calls no collective unless it says so.
// Functions that take a cluster.Cluster are collective: every process
// calls them at the same point with arguments of the same shape.
package spread

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
)

// PickShare returns the process whose share of a total holds u: the first
// p with cum[p] > u, cum being the processes' cumulative shares (u below
// the last, so that a process with no share is never picked).
func PickShare(cum []float64, u float64) int {
	p, _ := slices.BinarySearchFunc(cum, u, func(c, u float64) int {
		if c <= u {
			return -1
		}
		return 1
	})
	return min(p, len(cum)-1)
}

// ToOwners sends each record of stride int32s in recs, whose cell (order
// indices) starts at offset at, to the process that owns the cell
// (sampling.Owner) and returns the records this process owns, from every
// process in process order, each process's in the order it sent them. In
// one process it returns recs.
func ToOwners(cl cluster.Cluster, recs []int32, stride, at, order int) []int32 {
	size := cl.Size()
	if size == 1 {
		return recs
	}
	counts := make([]int32, size)
	for j := 0; j < len(recs); j += stride {
		counts[sampling.Owner(recs[j+at:j+at+order], size)] += int32(stride)
	}
	next := sampling.Starts(counts, 1)
	send := make([]int32, len(recs))
	for j := 0; j < len(recs); j += stride {
		o := sampling.Owner(recs[j+at:j+at+order], size)
		copy(send[next[o]:], recs[j:j+stride])
		next[o] += int32(stride)
	}
	return cl.AlltoallI32(send, counts)
}

// CountBefore returns the sum of the n of the processes before this one
// (an exclusive prefix sum over the processes).
func CountBefore(cl cluster.Cluster, n int) int {
	return Sum(Counts(cl, n)[:cl.Rank()])
}

// Sum returns the sum of v.
func Sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}

// Counts returns every process's n, in process order (one sum of
// len Size int64s).
func Counts(cl cluster.Cluster, n int) []int {
	v := make([]int64, cl.Size())
	v[cl.Rank()] = int64(n)
	cl.SumI64(v)
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// DistinctShares splits n draws of distinct cells, cycling (every cell
// drawn ⌊n/N⌋ times, then n mod N distinct ones more, at random), among
// processes holding sizes[p] of the N = Σ sizes cells: process p's number
// is ⌊n/N⌋·sizes[p] plus its count in a uniformly random (n mod N)-subset
// of the N cells, which follows the multivariate hypergeometric law and is
// drawn from r (process by process, each count conditioned on those before
// it). The same r on every process gives every process the same shares.
// With one process it returns [n] and draws nothing from r. It panics if
// n > 0 while N = 0, or n < 0.
func DistinctShares(r *rand.Rand, n int, sizes []int) []int {
	out := make([]int, len(sizes))
	if n < 0 {
		panic(fmt.Sprintf("dain: distinctShares: n %d", n))
	}
	if len(sizes) == 1 {
		out[0] = n
		return out
	}
	total := Sum(sizes)
	if total == 0 {
		if n > 0 {
			panic(fmt.Sprintf("dain: distinctShares: %d draws from no cells", n))
		}
		return out
	}
	q, rem, left := n/total, n%total, total
	for p, s := range sizes {
		k := rem
		if p < len(sizes)-1 {
			k = hypergeometric(r, rem, s, left)
		}
		out[p] = q*s + k
		rem, left = rem-k, left-s
	}
	return out
}

// hypergeometric draws the number of marked items among draws items taken
// without replacement from pop items of which marked are marked (draws,
// marked ≤ pop), exactly, in O(min(draws, marked)) steps: by the law's
// symmetry in draws and marked, it walks the fewer of the two, each item
// of which lands among the other's with probability (those left)/(items
// left).
func hypergeometric(r *rand.Rand, draws, marked, pop int) int {
	walk, other := min(draws, marked), max(draws, marked)
	k := 0
	for i := 0; i < walk && other > 0; i++ {
		if r.IntN(pop) < other {
			k++
			other--
		}
		pop--
	}
	return k
}

// F64Bits and BitsF64 carry float64s through an int32 exchange, two int32s
// each (the low half first), bit for bit.
func F64Bits(v []float64) []int32 {
	out := make([]int32, 2*len(v))
	for i, x := range v {
		b := math.Float64bits(x)
		out[2*i], out[2*i+1] = int32(uint32(b)), int32(uint32(b>>32))
	}
	return out
}

func BitsF64(b []int32) []float64 {
	out := make([]float64, len(b)/2)
	for i := range out {
		out[i] = math.Float64frombits(uint64(uint32(b[2*i])) | uint64(uint32(b[2*i+1]))<<32)
	}
	return out
}

// Replicas returns an error unless the model replicas m of every process
// agree (the data-parallel training keeps them equal).
func Replicas(cl cluster.Cluster, m *nn.Net) error {
	sum, err := m.ParamsChecksum()
	if err != nil {
		return err
	}
	gathered := cl.GatherF64([]float64{float64(sum >> 32), float64(sum & 0xffffffff)})
	for i := 2; i < len(gathered); i += 2 {
		if gathered[i] != gathered[0] || gathered[i+1] != gathered[1] {
			return fmt.Errorf("dain: the model replicas differ across ranks after training (rank %d's parameters differ from rank 0's); the MPI library's reductions gave ranks different sums", i/2)
		}
	}
	return nil
}

// SumModes sums each mode's entity weights w (w[mode][entity]) over the
// processes of cl, in place; nothing on one process.
func SumModes(cl cluster.Cluster, w [][]float64) {
	overModes(cl, w, cl.SumF64)
}

// MaxModes replaces each mode's entity weights w by their maximum over the
// processes of cl, in place; nothing on one process.
func MaxModes(cl cluster.Cluster, w [][]float64) {
	overModes(cl, w, func(flat []float64) {
		all := cl.GatherF64(flat)
		for r := 0; r < cl.Size(); r++ {
			for i, v := range all[r*len(flat) : (r+1)*len(flat)] {
				flat[i] = max(flat[i], v)
			}
		}
	})
}

// overModes applies reduce, a collective over the processes, to every
// mode's weights concatenated, in place; nothing on one process.
func overModes(cl cluster.Cluster, w [][]float64, reduce func(flat []float64)) {
	if cl.Size() <= 1 {
		return
	}
	var flat []float64
	for _, m := range w {
		flat = append(flat, m...)
	}
	reduce(flat)
	for _, m := range w {
		n := copy(m, flat)
		flat = flat[n:]
	}
}

// AgreeKeep is dain-agree's choice over the processes of cl, each holding
// its share of the candidate cells cand (of len(dims) indices each; the
// shares in process order being the draw order) with their predictions a
// and b: the n candidates of smallest |a − b| over every process, ties by
// draw order, valued by a, exactly as one process keeps them from all the
// candidates; each process receives its share of them in draw order (cells
// Rank·n/Size onwards), as cells of dims. No process holds more than its
// own candidates: the n-th smallest |a − b| is found by bisection over its
// bits (non-negative floats order as their bits), 64 sums of one count,
// and the kept cells are then sent to the processes whose shares hold
// them. n must not exceed the candidates over every process.
func AgreeKeep(cl cluster.Cluster, dims []int, cand []int32, a, b []float64, n int) *tensor.COO {
	order, size := len(dims), cl.Size()
	key := make([]uint64, len(a))
	for i := range a {
		key[i] = math.Float64bits(math.Abs(a[i] - b[i]))
	}
	// t: the smallest key with at least n keys ≤ it over every process.
	lo, hi := uint64(0), uint64(math.MaxUint64)
	for lo < hi {
		mid := lo + (hi-lo)/2
		c := []int64{0}
		for _, k := range key {
			if k <= mid {
				c[0]++
			}
		}
		cl.SumI64(c)
		if c[0] >= int64(n) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	t := lo
	// Every key below t is kept; of the keys equal to t, the first in draw
	// order until n are kept.
	per := make([]int64, 2*size)
	for _, k := range key {
		if k < t {
			per[2*cl.Rank()]++
		} else if k == t {
			per[2*cl.Rank()+1]++
		}
	}
	cl.SumI64(per)
	take := int64(n)
	for r := range size {
		take -= per[2*r]
		if r < cl.Rank() {
			take -= per[2*r+1]
		}
	}
	var idx []int32
	var val []float64
	for i, k := range key {
		if k < t || (k == t && take > 0) {
			if k == t {
				take--
			}
			idx = append(idx, cand[i*order:(i+1)*order]...)
			val = append(val, a[i])
		}
	}
	// The kept cells' positions among the n, and the processes whose
	// shares hold them.
	pos := CountBefore(cl, len(val))
	ci, cv := make([]int32, size), make([]int32, size)
	for p := pos; p < pos+len(val); p++ {
		r := sampling.ShareOf(p, n, size)
		ci[r] += int32(order)
		cv[r] += 2
	}
	out := &tensor.COO{Dims: append([]int(nil), dims...), Idx: cl.AlltoallI32(idx, ci)}
	out.Val = BitsF64(cl.AlltoallI32(F64Bits(val), cv))
	return out
}
