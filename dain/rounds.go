package dain

import (
	"context"
	"fmt"
	"slices"

	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/tensor"
)

// drawRound is the most candidate cells drawRounds draws, over every
// process, in one round (a variable for tests).
var drawRound = 1 << 20

// candidates is a cell maker that draws its new cells one candidate at a
// time from the training cells, rejecting observed and repeated ones
// (near-cells, entity replacement), for drawRounds.
type candidates struct {
	name string // for errors: "near-cells", "entity replacement"
	// cum holds the processes' cumulative shares of the candidates (of
	// Σ|α|, of the training cells), the same on every process.
	cum []float64
	// shares is the stream that draws each candidate's process (only
	// with several).
	shares uint64
	// draw appends this process's next candidate to rec (its cell, then
	// extra int32s) and returns it and true, or returns rec as it was
	// given and false for a candidate rejected where it is drawn (counted
	// as observed); it draws from its process's own stream, so that one
	// process draws candidate by candidate as one loop does.
	draw  func(rec []int32) ([]int32, bool)
	extra int // int32s after a candidate's cell (its value's bits, say)
	// observedIsRepeat counts an observed candidate as a repeat (entity
	// replacement's statistics), not as observed.
	observedIsRepeat bool
}

// drawRounds makes n new cells from c's candidates, spread over the
// processes, in rounds of at most drawRound candidates: candidate k's
// process is drawn by the shares c.cum (from one stream, every process
// alike; nothing is drawn with one process), that process draws it (c.draw),
// and the candidate goes to the process that owns its cell
// (sampling.Owner), which meets its candidates in candidate order and
// rejects one that is observed (train ∪ validation, partitioned by owner)
// or drawn before. The first n accepted in candidate order are kept, each
// on its owner, with their extras (in Val when c.extra is 2: the float64
// bits); e.augFirst is set. After 100·n + 10⁵ candidates it gives up. The
// statistics (st's Draws and rejections, over every process) count the
// candidates up to the n-th accepted. Memory is O(cells/P) plus a round.
func (e *Experiment) drawRounds(ctx context.Context, c candidates, n int, st *AugStats) (*tensor.COO, error) {
	cl, order := e.sp.cl, e.x.Order()
	size, rank := cl.Size(), cl.Rank()
	stride := 1 + order + c.extra
	owned := e.ownedObserved(nil)
	drawn := tensor.NewCellSet(e.x.Dims, max(n/size, 16))
	shared := rng(e.cfg.Seed, c.shares)
	aug := &tensor.COO{Dims: append([]int(nil), e.x.Dims...)}
	var extras []int32
	limit, kept := 100*n+100000, 0
	var cand []int32 // this process's candidates of the round: k, the cell, the extras
	var acc []int    // offsets in recv of the accepted candidates
	var rejHere, rejObs, rejRep []int32
	for kept < n {
		if st.Draws >= limit {
			return nil, e.agreeErr(fmt.Errorf("dain: %s gave up after %d draws with %d of %d new cells", c.name, st.Draws, kept, n))
		}
		m := min(drawRound, limit-st.Draws, max(2*(n-kept), 64))
		cand, rejHere = cand[:0], rejHere[:0]
		for k := range m {
			if size > 1 && spread.PickShare(c.cum, shared.Float64()*c.cum[size-1]) != rank {
				continue
			}
			var ok bool
			if cand, ok = c.draw(append(cand, int32(k))); !ok {
				cand = cand[:len(cand)-1]
				rejHere = append(rejHere, int32(k))
			}
		}
		recv := spread.ToOwners(cl, cand, stride, 1, order)
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
			case observed && !c.observedIsRepeat:
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
		cut, err := e.roundCut(ctx, accK, n-kept, m)
		if err != nil {
			return nil, err
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
	if c.extra == 2 {
		aug.Val = spread.BitsF64(extras)
	}
	e.augFirst = spread.CountBefore(cl, len(aug.Idx)/order)
	return aug, nil
}

// roundCut returns the cut of a round of m candidates whose accepted ones
// on this process are accK (sorted): m when the round's accepted, over
// every process, are at most need, else the least K with need accepted
// below it (found by bisection, one sum a step). A cancelled ctx on any
// process is every process's error.
func (e *Experiment) roundCut(ctx context.Context, accK []int32, need, m int) (int, error) {
	total := e.sumCounts(len(accK), ctx.Err() != nil)
	if total[1] > 0 {
		return 0, e.agreeErr(ctx.Err())
	}
	if int(total[0]) <= need {
		return m, nil
	}
	lo, hi := 0, m // the cut is in (lo, hi]
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if c := e.sumCounts(below(accK, mid), false); int(c[0]) >= need {
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
