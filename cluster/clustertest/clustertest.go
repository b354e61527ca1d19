// Package clustertest is a cluster.Cluster of goroutines for tests: P
// ranks in one process that meet at every collective (a cyclic barrier),
// each depositing its part and reading everyone's. It gives the same
// results, in the same process order, as an MPI job of P ranks, so that
// tests of nn, sampling and dain compare P ranks with one process without
// MPI.
package clustertest

import (
	"fmt"
	"slices"
	"sync"

	"github.com/dainx/dainx/cluster"
)

// group is the shared state of P ranks.
type group struct {
	n             int
	mu            sync.Mutex
	cond          *sync.Cond
	arrived, gen  int
	slots, posted []any
}

func (g *group) barrier() {
	g.mu.Lock()
	defer g.mu.Unlock()
	gen := g.gen
	if g.arrived++; g.arrived == g.n {
		g.arrived, g.gen = 0, g.gen+1
		g.posted = slices.Clone(g.slots)
		g.cond.Broadcast()
		return
	}
	for gen == g.gen {
		g.cond.Wait()
	}
}

// Rank is one rank of a group of ranks made by Run.
type Rank struct {
	g    *group
	rank int
}

var _ cluster.Cluster = Rank{}

// Run runs f on p ranks of one group, each in a goroutine of its own, and
// waits for them all. Every rank must call the same collectives in the
// same order (or the group deadlocks, as an MPI job would).
func Run(p int, f func(r Rank)) {
	g := &group{n: p, slots: make([]any, p)}
	g.cond = sync.NewCond(&g.mu)
	var wg sync.WaitGroup
	for i := 0; i < p; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			f(Rank{g, i})
		}(i)
	}
	wg.Wait()
}

// exchange deposits x and returns every rank's deposit in rank order.
func (r Rank) exchange(x any) []any {
	r.g.mu.Lock()
	r.g.slots[r.rank] = x
	r.g.mu.Unlock()
	r.g.barrier()
	out := r.g.posted
	r.g.barrier() // nobody deposits the next part before all have read
	return out
}

func (r Rank) Rank() int            { return r.rank }
func (r Rank) Size() int            { return r.g.n }
func (r Rank) CommSeconds() float64 { return 0 }
func (r Rank) Describe() string     { return fmt.Sprintf("%d goroutines (clustertest)", r.g.n) }

func sum[T float32 | float64 | int64](r Rank, x []T) {
	all := r.exchange(slices.Clone(x))
	clear(x)
	for _, a := range all {
		for i, v := range a.([]T) {
			x[i] += v
		}
	}
}

func gather[T any](r Rank, x []T) []T {
	var out []T
	for _, a := range r.exchange(slices.Clone(x)) {
		out = append(out, a.([]T)...)
	}
	return out
}

type a2a[T any] struct {
	send   []T
	counts []int32
}

func alltoallv[T any](r Rank, send []T, counts []int32) ([]T, []int32) {
	if len(counts) != r.g.n {
		panic(fmt.Sprintf("clustertest: rank %d: %d counts for %d ranks", r.rank, len(counts), r.g.n))
	}
	out := []T{}
	got := make([]int32, r.g.n)
	for q, a := range r.exchange(a2a[T]{slices.Clone(send), slices.Clone(counts)}) {
		m := a.(a2a[T])
		off := int32(0)
		for _, c := range m.counts[:r.rank] {
			off += c
		}
		out = append(out, m.send[off:off+m.counts[r.rank]]...)
		got[q] = m.counts[r.rank]
	}
	return out, got
}

func (r Rank) SumF32(x []float32)              { sum(r, x) }
func (r Rank) SumF64(x []float64)              { sum(r, x) }
func (r Rank) SumI64(x []int64)                { sum(r, x) }
func (r Rank) GatherF32(x []float32) []float32 { return gather(r, x) }
func (r Rank) GatherI32(x []int32) []int32     { return gather(r, x) }
func (r Rank) GatherF64(x []float64) []float64 { return gather(r, x) }

func (r Rank) AlltoallI32(send, counts []int32) []int32 {
	out, _ := alltoallv(r, send, counts)
	return out
}

func (r Rank) AlltoallvI32(dst, send, counts, recvCounts []int32) []int32 {
	out, n := alltoallv(r, send, counts)
	copy(recvCounts, n)
	return append(dst[:0], out...)
}

// AlltoallvF32 panics when what arrives differs from recvCounts.
func (r Rank) AlltoallvF32(dst, send []float32, sendCounts, recvCounts []int32) []float32 {
	out, got := alltoallv(r, send, sendCounts)
	if !slices.Equal(got, recvCounts) {
		panic(fmt.Sprintf("clustertest: rank %d expected counts %v, received %v", r.rank, recvCounts, got))
	}
	return append(dst[:0], out...)
}
