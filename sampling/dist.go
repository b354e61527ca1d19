package sampling

import (
	"fmt"

	"github.com/dainx/dainx/tensor"
)

// This file is Cells spread over processes whose observed cells are
// partitioned by Owner: the draws are counter-based, so every process
// draws every candidate itself (cheap, and identical everywhere); the owner
// of a candidate alone knows whether it is observed or drawn before, and
// says so in one byte per candidate that the processes combine. The
// accepted cells, the counts and the errors are those of Cells on one
// process with every observed cell.

// Owner returns the process, of size, that owns cell in hash-partitioned
// cell sets (a fixed hash of the indices; the same on every process).
func Owner(cell []int32, size int) int {
	h := uint64(0x9e3779b97f4a7c15)
	for _, i := range cell {
		h ^= uint64(uint32(i))
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 31
	}
	return int(h % uint64(size))
}

// Reachable reports whether every entity of cell has positive weight.
func (t *Tables) Reachable(cell []int32) bool { return t.reachable(cell) }

// SupportSize returns the number of cells of positive probability,
// Πₙ |{i : pₙ(i) > 0}|, as a float64.
func (t *Tables) SupportSize() float64 { return t.supportSize() }

// Shared is what CellsShared needs from the processes.
type Shared struct {
	Rank, Size int
	// Or replaces b on every process by the bitwise or over the processes.
	Or func(b []byte)
}

// Candidate verdicts, one byte each.
const (
	verdictObserved = 1
	verdictRepeat   = 2
	verdictNew      = 3
)

// CellsShared is Cells for process sh.Rank of sh.Size: owned holds the
// observed cells this process owns (those with Owner = sh.Rank, every
// process's together being all of them) and inSupport the number of
// distinct observed cells over all processes whose entities all have
// positive weight. Every process gets the same cells, statistics and error.
func (t *Tables) CellsShared(owned *tensor.CellSet, inSupport int, n int, opt Options, sh Shared) ([]int32, Stats, error) {
	order := t.Order()
	var st Stats
	if n < 0 {
		panic(fmt.Sprintf("sampling: CellsShared(n = %d)", n))
	}
	support := t.supportSize()
	if support-float64(inSupport) < float64(n) {
		return nil, st, fmt.Errorf("sampling: cannot draw %d new cells: the entities of positive importance span %.0f cells, %d of them observed", n, support, inSupport)
	}
	maxDraws := opt.MaxDraws
	if maxDraws <= 0 {
		maxDraws = 100*n + 100000
	}
	round := opt.Round
	if round <= 0 {
		round = 1 << 18
	}
	out := make([]int32, 0, n*order)
	if n == 0 {
		return out, st, nil
	}
	dims := make([]int, order)
	for i, a := range t.host {
		dims[i] = len(a.Thresh)
	}
	drawn := tensor.NewCellSet(dims, n/max(sh.Size, 1)+16)
	buf := t.be.AllocI32(min(round, n+n/8+64) * order)
	defer buf.Free()
	host := make([]int32, buf.Len())
	verdict := make([]byte, buf.Len()/order)
	for len(out) < n*order {
		if st.Draws >= maxDraws {
			return nil, st, fmt.Errorf("sampling: gave up after %d draws with %d of %d new cells (%d observed and %d repeated candidates rejected); the reachable cells are nearly exhausted, ask for fewer", st.Draws, len(out)/order, n, st.Observed, st.Duplicate)
		}
		need := n - len(out)/order
		m := min(need+need/8+64, buf.Len()/order, maxDraws-st.Draws)
		b := buf.Slice(0, m*order)
		t.Draw(b, opt.Key, uint64(st.Draws))
		if err := t.be.DownloadI32(host[:m*order], b); err != nil {
			return nil, st, fmt.Errorf("sampling: %w", err)
		}
		// The owner's verdict on each of its candidates, as if the whole
		// round were taken; new cells of this round are kept apart until
		// the round's cut is known.
		v := verdict[:m]
		clear(v)
		pending := tensor.NewCellSet(dims, 0)
		for k := 0; k < m; k++ {
			cell := host[k*order : (k+1)*order]
			if Owner(cell, sh.Size) != sh.Rank {
				continue
			}
			switch {
			case owned.Has(cell):
				v[k] = verdictObserved
			case drawn.Has(cell) || !pending.Add(cell):
				v[k] = verdictRepeat
			default:
				v[k] = verdictNew
			}
		}
		if sh.Size > 1 {
			sh.Or(v)
		}
		for k := 0; k < m && len(out) < n*order; k++ {
			st.Draws++
			cell := host[k*order : (k+1)*order]
			switch v[k] {
			case verdictObserved:
				st.Observed++
			case verdictRepeat:
				st.Duplicate++
			case verdictNew:
				out = append(out, cell...)
				if Owner(cell, sh.Size) == sh.Rank {
					drawn.Add(cell)
				}
			default:
				panic(fmt.Sprintf("sampling: no verdict on candidate %d", st.Draws))
			}
		}
	}
	return out, st, nil
}
