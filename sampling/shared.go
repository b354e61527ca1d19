package sampling

import (
	"fmt"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/tensor"
)

// This file is the drawing of new cells shared by the processes of a
// cluster (CellsShared; Cells is CellsShared on cluster.Local), whose
// observed cells are partitioned by Owner. The draws are counter-based,
// so each round's candidates are split into one contiguous range of
// counters per process, which draws its own; the owner of a candidate
// alone knows whether it is observed or drawn before, and the candidates
// and verdicts travel between drawing process and owner by all-to-all
// exchanges. Each process keeps the accepted cells of its ranges: in
// process order they are the cells, and the counts and errors those, of
// Cells on one process with every observed cell.

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

// Candidate verdicts.
const (
	verdictObserved = 1
	verdictRepeat   = 2
	verdictNew      = 3
)

// CellsShared is Cells for process cl.Rank() of the cl.Size() processes of
// a cluster (cluster.Local for one process): owned holds the
// observed cells this process owns (those with Owner = cl.Rank(), every
// process's together being all of them) and inSupport the number of
// distinct observed cells over all processes whose entities all have
// positive weight. It returns this process's share of the n new cells:
// Cells' cells first … first+len(mine)/N−1, with first = Rank·n/Size and
// the next process's share starting at (Rank+1)·n/Size. Every process
// gets the same statistics and error. Work and memory per process are
// O(n/Size) beyond owned: each round's candidates are drawn by the
// process whose range of counters they fall in and judged by their owner,
// and at the end of each round the accepted cells are sent to the process
// whose share holds their place, so a process holds its share (allocated
// once) and one round's cells, never a list of everything it accepted.
func (t *Tables) CellsShared(owned *tensor.CellSet, inSupport int, n int, opt Options, cl cluster.Cluster) (mine []int32, first int, st Stats, err error) {
	order := t.Order()
	if n < 0 {
		panic(fmt.Sprintf("sampling: CellsShared(n = %d)", n))
	}
	support := t.supportSize()
	if support-float64(inSupport) < float64(n) {
		return nil, 0, st, supportError(n, support, inSupport)
	}
	maxDraws := opt.MaxDraws
	if maxDraws <= 0 {
		maxDraws = 100*n + 100000
	}
	round := opt.Round
	if round <= 0 {
		round = 1 << 18
	}
	if n == 0 {
		return []int32{}, 0, st, nil
	}
	rank, size := cl.Rank(), cl.Size()
	dims := make([]int, order)
	for i, a := range t.host {
		dims[i] = len(a.Thresh)
	}
	// A round draws m ≤ mmax candidates; this process draws its range.
	mmax := min(round, n+n/8+64)
	drawn := tensor.NewCellSet(dims, n/size+16)
	buf := t.be.AllocI32((mmax/size + 1) * order)
	defer buf.Free()
	host := make([]int32, buf.Len())
	counts, back := make([]int32, size), make([]int32, size)
	accepted := 0 // over all processes, before this round
	// This process's share of the new cells, places first..: filled round
	// by round by the processes that accept them.
	first = rank * n / size
	mine = make([]int32, ((rank+1)*n/size-first)*order)
	var kept []int32 // the round's accepted cells of this process, each as (place, cell)
	for accepted < n {
		if st.Draws >= maxDraws {
			return nil, 0, st, fmt.Errorf("sampling: gave up after %d draws with %d of %d new cells (%d observed and %d repeated candidates rejected); the reachable cells are nearly exhausted, ask for fewer", st.Draws, accepted, n, st.Observed, st.Duplicate)
		}
		need := n - accepted
		m := min(need+need/8+64, mmax, maxDraws-st.Draws)
		lo, hi := rank*m/size, (rank+1)*m/size
		k := hi - lo
		if k > 0 {
			b := buf.Slice(0, k*order)
			t.Draw(b, opt.Key, uint64(st.Draws+lo))
			if err := t.be.DownloadI32(host[:k*order], b); err != nil {
				return nil, 0, st, fmt.Errorf("sampling: %w", err)
			}
		}
		// To each owner its candidates, as (round index, cell), grouped by
		// owner in increasing index.
		clear(counts)
		owner := make([]int32, k)
		for j := range k {
			owner[j] = int32(Owner(host[j*order:(j+1)*order], size))
			counts[owner[j]] += int32(1 + order)
		}
		next := Starts(counts, 1)
		send := make([]int32, k*(1+order))
		for j := range k {
			o := owner[j]
			send[next[o]] = int32(lo + j)
			copy(send[next[o]+1:], host[j*order:(j+1)*order])
			next[o] += int32(1 + order)
		}
		recv := cl.AlltoallI32(send, counts)
		// Verdicts in increasing index, which is the order received (the
		// senders' ranges increase with their rank), sent back to each
		// candidate's drawing process.
		clear(back)
		verdicts := make([]int32, len(recv)/(1+order))
		for j := range verdicts {
			e := recv[j*(1+order):]
			cell := e[1 : 1+order]
			switch {
			case owned.Has(cell):
				verdicts[j] = verdictObserved
			case !drawn.Add(cell):
				verdicts[j] = verdictRepeat
			default:
				verdicts[j] = verdictNew
			}
			back[ShareOf(int(e[0]), m, size)]++
		}
		got := cl.AlltoallI32(verdicts, back)
		// got holds, owner by owner, the verdicts on this process's
		// candidates in the order they were sent.
		v := make([]int32, k)
		pos := Starts(counts, int32(1+order))
		for j := range k {
			o := owner[j]
			v[j] = got[pos[o]]
			pos[o]++
		}
		// The round's cut: the candidate at which the n-th new cell over
		// all processes falls, if it does in this round.
		tally := make([]int64, size)
		nNew := 0
		for _, x := range v {
			if x == verdictNew {
				nNew++
			}
		}
		tally[rank] = int64(nNew)
		cl.SumI64(tally)
		before := accepted
		for r := range rank {
			before += int(tally[r])
		}
		total := accepted
		for _, c := range tally {
			total += int(c)
		}
		// cut: the round index after the last candidate taken (m when
		// the whole round is taken), found by the process holding it.
		cut := []int64{0}
		if total >= n {
			if before < n && before+nNew >= n {
				c := before
				for j, x := range v {
					if x == verdictNew {
						if c++; c == n {
							cut[0] = int64(lo + j + 1)
							break
						}
					}
				}
			}
			cl.SumI64(cut)
		} else {
			cut[0] = int64(m)
		}
		// This process's candidates before the cut, and the counts.
		kept = kept[:0]
		c := []int64{0, 0}
		for j, x := range v {
			if lo+j >= int(cut[0]) {
				break
			}
			switch x {
			case verdictObserved:
				c[0]++
			case verdictRepeat:
				c[1]++
			case verdictNew:
				kept = append(kept, int32(before))
				kept = append(kept, host[j*order:(j+1)*order]...)
				before++
			default:
				panic(fmt.Sprintf("sampling: no verdict on candidate %d", st.Draws+lo+j))
			}
		}
		cl.SumI64(c)
		st.Draws += int(cut[0])
		st.Observed += int(c[0])
		st.Duplicate += int(c[1])
		accepted = min(total, n)
		// Each accepted cell to the process whose share holds its place
		// (kept is in increasing place), so that no process holds more than
		// its share and a round's cells.
		clear(counts)
		for j := 0; j < len(kept); j += 1 + order {
			counts[ShareOf(int(kept[j]), n, size)] += int32(1 + order)
		}
		recv = cl.AlltoallI32(kept, counts)
		for j := 0; j < len(recv); j += 1 + order {
			copy(mine[(int(recv[j])-first)*order:], recv[j+1:j+1+order])
		}
	}
	return mine, first, st, nil
}

// Starts returns where each process's part begins in a buffer grouped by
// process, part p holding counts[p] values: the exclusive prefix sums of
// counts, divided by per (to count records of per values each).
func Starts(counts []int32, per int32) []int32 {
	s := make([]int32, len(counts))
	for r := 1; r < len(counts); r++ {
		s[r] = s[r-1] + counts[r-1]/per
	}
	return s
}

// ShareOf returns the process whose share holds item i of m items split
// over size processes in contiguous ranges [r·m/size, (r+1)·m/size): the
// process that draws round index i of a round of m candidates, or that
// holds new cell i of m.
func ShareOf(i, m, size int) int {
	r := i * size / m
	for r+1 < size && (r+1)*m/size <= i {
		r++
	}
	for r > 0 && r*m/size > i {
		r--
	}
	return r
}
