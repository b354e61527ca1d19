package spread

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/tensor"
)

// DrawRound is the most candidate cells DrawRounds draws, over every
// process, in one round (a variable for tests).
var DrawRound = 1 << 20

// Candidates is a cell maker that draws its new cells one candidate at a
// time from the training cells, rejecting observed and repeated ones
// (near-cells, entity replacement), for DrawRounds.
type Candidates struct {
	Name string // for errors: "near-cells", "entity replacement"
	// Cum holds the processes' cumulative shares of the candidates (of
	// Σ|α|, of the training cells), the same on every process.
	Cum []float64
	// Draw appends this process's next candidate to rec (its cell, then
	// Extra int32s) and returns it and true, or returns rec as it was
	// given and false for a candidate rejected where it is drawn (counted
	// as observed); it draws from its process's own stream, so that one
	// process draws candidate by candidate as one loop does.
	Draw  func(rec []int32) ([]int32, bool)
	Extra int // int32s after a candidate's cell (its value's bits, say)
	// ObservedIsRepeat counts an observed candidate as a repeat (entity
	// replacement's statistics), not as observed.
	ObservedIsRepeat bool
}

// DrawStats are the candidates DrawRounds drew and rejected, over every
// process: the draws, and those rejected as observed or as repeated.
type DrawStats struct {
	Draws, RejectObserved, RejectRepeat int
}

// DrawRounds makes n new cells of dims from c's candidates, spread over
// the processes of cl, in rounds of at most DrawRound candidates:
// candidate k's process is drawn by the shares c.Cum (from shared, one
// stream, every process alike; nothing is drawn with one process), that
// process draws it (c.Draw), and the candidate goes to the process that
// owns its cell (sampling.Owner), which meets its candidates in candidate
// order and rejects one that is observed (in owned: train ∪ validation,
// partitioned by owner) or drawn before. The first n accepted in
// candidate order are kept, each on its owner, with their extras (in Val
// when c.Extra is 2: the float64 bits); first is the global number of
// this process's first. After 100·n + 10⁵ candidates it gives up, with an
// error naming c.Name on every process. The statistics st (over every
// process) count the candidates up to the n-th accepted, added to what st
// holds. A cancelled ctx on any process is every process's error. Memory
// is O(cells/P) plus a round.
func DrawRounds(ctx context.Context, cl cluster.Cluster, dims []int, owned *tensor.CellSet, shared *rand.Rand, c Candidates, n int, st *DrawStats) (aug *tensor.COO, first int, err error) {
	order := len(dims)
	size, rank := cl.Size(), cl.Rank()
	stride := 1 + order + c.Extra
	drawn := tensor.NewCellSet(dims, max(n/size, 16))
	aug = &tensor.COO{Dims: append([]int(nil), dims...)}
	var extras []int32
	limit, kept := 100*n+100000, 0
	var cand []int32 // this process's candidates of the round: k, the cell, the extras
	var acc []int    // offsets in recv of the accepted candidates
	var rejHere, rejObs, rejRep []int32
	for kept < n {
		if st.Draws >= limit {
			return nil, 0, agreeErr(cl, fmt.Errorf("dain: %s gave up after %d draws with %d of %d new cells", c.Name, st.Draws, kept, n))
		}
		m := min(DrawRound, limit-st.Draws, max(2*(n-kept), 64))
		cand, rejHere = cand[:0], rejHere[:0]
		for k := range m {
			if size > 1 && PickShare(c.Cum, shared.Float64()*c.Cum[size-1]) != rank {
				continue
			}
			var ok bool
			if cand, ok = c.Draw(append(cand, int32(k))); !ok {
				cand = cand[:len(cand)-1]
				rejHere = append(rejHere, int32(k))
			}
		}
		recv := ToOwners(cl, cand, stride, 1, order)
		// The owner meets its candidates in candidate order, so that of
		// two equal candidates the first is kept, as in one loop.
		offs := make([]int, 0, len(recv)/stride)
		for j := 0; j < len(recv); j += stride {
			offs = append(offs, j)
		}
		if size > 1 {
			slices.SortFunc(offs, func(a, b int) int { return int(recv[a] - recv[b]) })
		}
		acc, rejObs, rejRep = acc[:0], rejObs[:0], rejRep[:0]
		for _, j := range offs {
			k, cell := recv[j], recv[j+1:j+1+order]
			observed := owned.Has(cell)
			switch {
			case observed && !c.ObservedIsRepeat:
				rejObs = append(rejObs, k)
			case observed || !drawn.Add(cell):
				rejRep = append(rejRep, k)
			default:
				acc = append(acc, j)
			}
		}
		accK := make([]int32, len(acc))
		for i, j := range acc {
			accK[i] = recv[j]
		}
		cut, err := roundCut(ctx, cl, accK, n-kept, m)
		if err != nil {
			return nil, 0, err
		}
		na := below(accK, cut)
		for _, j := range acc[:na] {
			aug.Idx = append(aug.Idx, recv[j+1:j+1+order]...)
			extras = append(extras, recv[j+1+order:j+stride]...)
		}
		sums := []int64{int64(na), int64(below(rejObs, cut) + below(rejHere, cut)), int64(below(rejRep, cut))}
		cl.SumI64(sums)
		kept += int(sums[0])
		st.Draws += cut
		st.RejectObserved += int(sums[1])
		st.RejectRepeat += int(sums[2])
	}
	if c.Extra == 2 {
		aug.Val = BitsF64(extras)
	}
	return aug, CountBefore(cl, len(aug.Idx)/order), nil
}

// roundCut returns the cut of a round of m candidates whose accepted ones
// on this process are accK (sorted): m when the round's accepted, over
// every process, are at most need, else the least K with need accepted
// below it (found by bisection, one sum a step). A cancelled ctx on any
// process is every process's error.
func roundCut(ctx context.Context, cl cluster.Cluster, accK []int32, need, m int) (int, error) {
	total := sumCounts(cl, len(accK), ctx.Err() != nil)
	if total[1] > 0 {
		return 0, agreeErr(cl, ctx.Err())
	}
	if int(total[0]) <= need {
		return m, nil
	}
	lo, hi := 0, m // the cut is in (lo, hi]
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if c := sumCounts(cl, below(accK, mid), false); int(c[0]) >= need {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// below returns how many of the sorted ks are below k.
func below(ks []int32, k int) int {
	i, _ := slices.BinarySearch(ks, int32(k))
	return i
}

// agreeErr returns err unchanged in one process; spread over several, it
// returns err (cluster.Agree) on the processes that have one, an agreed
// cluster.ErrOtherProcess on the others when any has one, and nil when
// none has, so that every process returns at the same point.
func agreeErr(cl cluster.Cluster, err error) error {
	if cl.Size() == 1 {
		return err
	}
	return cluster.Agree(cl, err, "dain")
}

// sumCounts returns n summed over the processes of cl, and how many of
// them had flag set.
func sumCounts(cl cluster.Cluster, n int, flag bool) []int64 {
	v := []int64{int64(n), 0}
	if flag {
		v[1] = 1
	}
	cl.SumI64(v)
	return v
}
