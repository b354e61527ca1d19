package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
	if nnz < 0 {
		panic(fmt.Sprintf("tensor: Split of %d rows", nnz))
	}
	if !(testFrac >= 0 && testFrac <= 1) || !(valFrac >= 0 && valFrac <= 1) {
		panic(fmt.Sprintf("tensor: Split fractions test %v, val %v outside [0, 1]", testFrac, valFrac))
	}
	nTest := min(int(math.Ceil(testFrac*float64(nnz))), nnz)
	nVal := min(int(math.Ceil(valFrac*float64(nnz-nTest))), nnz-nTest)
	perm := rand.New(rand.NewPCG(seed, splitStream)).Perm(nnz)
	test = slices.Clone(perm[:nTest])
	val = slices.Clone(perm[nTest : nTest+nVal])
	train = perm[nTest+nVal:]
	slices.Sort(test)
	slices.Sort(val)
	slices.Sort(train)
	return train, val, test
}
