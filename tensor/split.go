package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dainx/dainx/internal/keyperm"
)

// splitStream is the second PCG seed word used by Split, so that Split's
// stream differs from other users of the same seed.
const splitStream = 0x7e57_5b1d_da1e_0000

// Split divides the row numbers 0..nnz-1 into train, validation and test
// sets (DAIN step 0). A permutation of the rows is drawn from a PCG
// generator seeded with (seed, a fixed constant); with
// nTest = ceil(testFrac·nnz) (as scikit-learn's train_test_split) and
// nVal = ceil(valFrac·(nnz−nTest)), the first nTest permuted rows are the
// test set, the next nVal the validation set and the rest the training set.
// Each slice is sorted ascending, so COO.Subset keeps file order. The result
// depends only on (nnz, testFrac, valFrac, seed). The defaults 0.1 and 0.2
// give 72/18/10.
//
// Split panics if nnz < 0 or a fraction is NaN or outside [0, 1]; callers
// validate user-supplied fractions (and decide whether an empty training
// set is acceptable).
func Split(nnz int, testFrac, valFrac float64, seed uint64) (train, val, test []int) {
	nTest, nVal := splitSizes("Split", nnz, testFrac, valFrac)
	perm := rand.New(rand.NewPCG(seed, splitStream)).Perm(nnz)
	test = slices.Clone(perm[:nTest])
	val = slices.Clone(perm[nTest : nTest+nVal])
	train = perm[nTest+nVal:]
	slices.Sort(test)
	slices.Sort(val)
	slices.Sort(train)
	return train, val, test
}

// splitSizes returns the test and validation sizes of a split of nnz
// cells (see Split), panicking, in op's name, on a negative nnz or a
// fraction that is NaN or outside [0, 1].
func splitSizes(op string, nnz int, testFrac, valFrac float64) (nTest, nVal int) {
	if nnz < 0 {
		panic(fmt.Sprintf("tensor: %s of %d rows", op, nnz))
	}
	if !(testFrac >= 0 && testFrac <= 1) || !(valFrac >= 0 && valFrac <= 1) {
		panic(fmt.Sprintf("tensor: %s fractions test %v, val %v outside [0, 1]", op, testFrac, valFrac))
	}
	nTest = min(int(math.Ceil(testFrac*float64(nnz))), nnz)
	nVal = min(int(math.Ceil(valFrac*float64(nnz-nTest))), nnz-nTest)
	return nTest, nVal
}

// keyedSplitStream is the keyperm stream of KeyedSplit.
const keyedSplitStream = 0x6b65_7965_6473_706c

// KeyedSplit is DAIN's split (step 0) by a keyed, stateless permutation π
// of the cell numbers 0..nnz−1 (internal/keyperm): cell c is a test cell
// if π(c) < nTest, a validation cell if π(c) < nTest+nVal, and a training
// cell otherwise, with nTest and nVal as Split computes them, so the parts
// have Split's exact sizes. Any cell's part is found in O(1) time and
// memory, so each process of a distributed run finds its own cells' parts
// without the split of the whole tensor, and the result is the same for
// every number of processes. It is a different random split from Split's
// for the same seed (dainx -split legacy keeps Split).
type KeyedSplit struct {
	p           keyperm.Perm
	nTest, nVal int
}

// The parts of a split.
const (
	PartTrain = iota
	PartVal
	PartTest
)

// NewKeyedSplit returns the keyed split of nnz cells. It panics as Split
// does.
func NewKeyedSplit(nnz int, testFrac, valFrac float64, seed uint64) KeyedSplit {
	nTest, nVal := splitSizes("KeyedSplit", nnz, testFrac, valFrac)
	return KeyedSplit{p: keyperm.New(nnz, seed, keyedSplitStream), nTest: nTest, nVal: nVal}
}

// Counts returns the sizes of the three parts.
func (s KeyedSplit) Counts() (train, val, test int) {
	return s.p.Len() - s.nTest - s.nVal, s.nVal, s.nTest
}

// Part returns the part of cell c (PartTrain, PartVal or PartTest). It
// panics if c is outside [0, nnz).
func (s KeyedSplit) Part(c int) int {
	switch q := s.p.At(c); {
	case q < s.nTest:
		return PartTest
	case q < s.nTest+s.nVal:
		return PartVal
	}
	return PartTrain
}

// Parts sets part[i] to the part of cell lo+i (PartTrain, PartVal or
// PartTest) for every i < len(part): one byte per cell, where Cells holds
// a cell number (8 bytes, and the slices' growth) per cell. It panics if a
// cell is outside [0, nnz).
func (s KeyedSplit) Parts(part []uint8, lo int) {
	for i := range part {
		part[i] = uint8(s.Part(lo + i))
	}
}

// Cells returns the cells of [lo, hi) in each part, ascending (file order).
// The global number of the first training cell returned (the training
// cells before lo) is the sum of the training counts of the ranges before
// this one, which a distributed caller adds up over its processes.
func (s KeyedSplit) Cells(lo, hi int) (train, val, test []int) {
	for c := lo; c < hi; c++ {
		switch s.Part(c) {
		case PartTest:
			test = append(test, c)
		case PartVal:
			val = append(val, c)
		default:
			train = append(train, c)
		}
	}
	return train, val, test
}
