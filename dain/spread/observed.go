package spread

import (
	"fmt"
	"slices"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
)

// ObservedSet returns the set of the cells of train ∪ val (cells of
// dims), with room for extra cells more.
func ObservedSet(dims []int, train, val *tensor.COO, extra int) *tensor.CellSet {
	order := len(dims)
	s := tensor.NewCellSet(dims, train.NNZ()+val.NNZ()+extra)
	for _, part := range [][]int32{train.Idx, val.Idx} {
		for k := 0; k < len(part); k += order {
			s.Add(part[k : k+order])
		}
	}
	return s
}

// ExchangeRound is the most observed cells a process sends its owners in
// one round of OwnedObserved's exchange (a variable for tests): the
// round's buffers, not the whole share, are what the exchange adds to a
// process's memory.
var ExchangeRound = 1 << 20

// OwnedObserved returns the observed cells (train ∪ val, this process's
// share of them, cells of dims) that this process owns (sampling.Owner),
// from every process: the observed set of one process. The cells travel to
// their owners in rounds of at most ExchangeRound cells a process; added,
// if not nil, sees each cell the first time it enters the set.
func OwnedObserved(cl cluster.Cluster, dims []int, train, val *tensor.COO, added func(cell []int32)) *tensor.CellSet {
	order := len(dims)
	size := cl.Size()
	if size == 1 && added == nil {
		return ObservedSet(dims, train, val, 0)
	}
	nt, local := train.NNZ(), train.NNZ()+val.NNZ()
	cell := func(k int) []int32 { // observed cell k of this process: train, then validation
		if k < nt {
			return train.Idx[k*order : (k+1)*order]
		}
		k -= nt
		return val.Idx[k*order : (k+1)*order]
	}
	rounds := make([]int64, size)
	rounds[cl.Rank()] = int64((local + ExchangeRound - 1) / ExchangeRound)
	cl.SumI64(rounds)
	owned := tensor.NewCellSet(dims, local) // about a share of train ∪ validation
	batch := make([]int32, 0, min(local, ExchangeRound)*order)
	for r := 0; r < int(slices.Max(rounds)); r++ {
		lo, hi := min(r*ExchangeRound, local), min((r+1)*ExchangeRound, local)
		batch = batch[:0]
		for k := lo; k < hi; k++ {
			batch = append(batch, cell(k)...)
		}
		recv := ToOwners(cl, batch, order, 0, order)
		for k := 0; k < len(recv); k += order {
			if owned.Add(recv[k:k+order]) && added != nil {
				added(recv[k : k+order])
			}
		}
	}
	return owned
}

// SampleShared draws, from the alias tables dev with key, this process's
// share of n new cells of dims over the processes of cl (Rank·n/Size
// onwards: first is its first's global number), with the observed cells
// (train ∪ val, this process's share) partitioned by owner
// (sampling.CellsShared); the observed cells travel to their owners in
// rounds of at most ExchangeRound cells a process. An error is
// sampling.CellsShared's.
func SampleShared(cl cluster.Cluster, dims []int, train, val *tensor.COO, dev *sampling.Tables, key uint64, n int) (cells []int32, first int, st sampling.Stats, err error) {
	support := []int64{0}
	owned := OwnedObserved(cl, dims, train, val, func(c []int32) {
		if dev.Reachable(c) {
			support[0]++
		}
	})
	cl.SumI64(support)
	return dev.CellsShared(owned, int(support[0]), n, sampling.Options{Key: key}, cl)
}

// SplitPrint is a fingerprint of a split: over every cell c (its number in
// the file) of part p (0 train, 1 validation, 2 test), three sums of 24-bit
// pieces of a 64-bit hash of 4c+p. Sums do not depend on the order in
// which cells are added, so processes add their own cells and sum the
// lanes; 24-bit pieces keep the sums exact past 10¹⁰ cells.
type SplitPrint [3]int64

// Add adds the cells lo, lo+1, … whose parts part holds.
func (s *SplitPrint) Add(part []uint8, lo int) {
	for i, p := range part {
		h := uint64(lo+i)*4 + uint64(p)
		h ^= h >> 30
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 27
		h *= 0x94d049bb133111eb
		h ^= h >> 31
		s[0] += int64(h & 0xffffff)
		s[1] += int64(h >> 24 & 0xffffff)
		s[2] += int64(h >> 48)
	}
}

// String returns the three sums in hexadecimal, dot-separated
// (Report.SplitFingerprint).
func (s SplitPrint) String() string { return fmt.Sprintf("%x.%x.%x", s[0], s[1], s[2]) }
