package nn

import (
	"fmt"
	"slices"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
)

// This file is the embedding table sharded by row over the processes of a
// data-parallel run (issue 23): global row r of the table (every mode's
// rows, see the package documentation) lives only on process r mod P, at
// local row r / P, with its Adam moments and best copy. A model whose
// table is sharded holds, in place of the table, a cache of the rows of
// one batch (Capacity × N rows): every Forward first fetches the distinct
// rows its cells name from their owners (one exchange of row ids and one
// of rows, both Alltoallv) and gathers from the cache. Train (Dist) sends
// each step's compact row gradients back to the owners (one Alltoallv, in
// the order of the fetch), and each owner adds the processes'
// contributions to a row in process order and applies SparseAdam to its
// rows: the sum Train forms when the table is replicated, so the
// parameters are those of a replicated sparse-adam run bit for bit, for
// every number of processes.
//
// Every fetch is collective: the processes must run the same number of
// Forward calls in every pass over their cells (a process with fewer
// batches takes part with Skip), which Batches agrees on.

// Sharding asks for a model whose embedding table is sharded by row over
// the processes of Comm (a cluster.Cluster); nil keeps the whole table.
type Sharding struct {
	Comm cluster.Cluster
}

// OwnedRows returns the number of rows of a table of R rows that process
// rank of P owns (rows r with r mod P = rank).
func OwnedRows(r, rank, p int) int {
	if rank >= r {
		return 0
	}
	return (r - rank + p - 1) / p
}

// tableShard is one process's rows of a sharded table and the state of
// the latest fetch.
type tableShard struct {
	comm       cluster.Cluster
	rank, size int
	rows       int         // R, the whole table's rows
	own        compute.F32 // OwnedRows × E: rows rank, rank+P, …
	// Training state (Train with Dist): Adam's moments and the best epoch's
	// rows, OwnedRows × E each; nil outside a training.
	adamM, adamV, best compute.F32

	// The latest fetch: the batch's global rows (host), their distinct
	// rows in increasing order (uniq, slot u of the cache holds uniq[u]),
	// the requests sent (send, grouped by owner, counts) and received
	// (recv: ids in process order, recvCounts).
	host, uniq, send, counts  []int32
	recv, recvCounts          []int32
	slots                     compute.I32 // Capacity × N cache slots
	slotHost                  []int32
	reqBuf                    compute.I32 // the requested rows, local numbers
	rowBuf                    compute.F32 // their values
	rowHost, cacheHost        []float32
	next, local               []int32
	keys                      []uint64 // (row, position) of the batch, sorted
	sendCounts, recvCountsW   []int32  // counts × E of the row exchanges
	gradSend, rowGot, gradGot []float32
	// The owner's side of a gradient push.
	sendSlot  []int32 // the cache slot (index in uniq) of each row of send
	unionRows []int32
	unionGrad []float32
	uRows     compute.I32
	uCount    compute.I32
	uGrad     compute.F32
}

// Sharded reports whether the model's table is sharded (Sharding).
func (m *Net) Sharded() bool { return m.sh != nil }

// TableRows returns R = Σₙ Iₙ, the rows of the whole embedding table
// (also when it is sharded and this process holds only some of them).
func (m *Net) TableRows() int {
	r := 0
	for _, d := range m.dims {
		r += d
	}
	return r
}

// ShardRows returns this process's rows of a sharded table (OwnedRows ×
// E: global rows rank, rank+P, … in order), or nil when the table is
// whole.
func (m *Net) ShardRows() compute.F32 {
	if m.sh == nil {
		return nil
	}
	return m.sh.own
}

// Batches returns the number of batches every process must run in a pass
// over its cells of which this process has n: n when the table is whole,
// the largest n over the processes when it is sharded (a collective: every
// process calls it). A process runs its n batches and then Skip for the
// rest.
func (m *Net) Batches(n int) int {
	if m.sh == nil {
		return n
	}
	most := 0
	for _, v := range m.sh.comm.GatherI32([]int32{int32(n)}) {
		most = max(most, int(v))
	}
	return most
}

// Skip takes part in one batch's row exchange of a sharded table without
// a batch of this process's own (serving the rows the others ask of it).
// It does nothing when the table is whole.
func (m *Net) Skip() {
	if m.sh != nil {
		m.sh.fetch(m, compute.I32(nil), 0)
	}
}

// newShard allocates process rank's rows of a table of R rows sharded by
// sh, filled from init (R×E values in row order, produced one row at a
// time and kept only for owned rows), and the cache's slot buffer.
func newShard(m *Net, sh *Sharding, rows int, init func(row []float64)) (*tableShard, error) {
	if sh.Comm == nil {
		return nil, fmt.Errorf("nn: a sharded table needs processes (Sharding.Comm)")
	}
	s := &tableShard{comm: sh.Comm, rank: sh.Comm.Rank(), size: sh.Comm.Size(), rows: rows}
	if s.size <= 0 || s.rank < 0 || s.rank >= s.size {
		return nil, fmt.Errorf("nn: process %d of %d", s.rank, s.size)
	}
	w := m.width
	own := OwnedRows(rows, s.rank, s.size)
	host := make([]float32, own*w)
	row := make([]float64, w)
	for r := 0; r < rows; r++ {
		init(row)
		if r%s.size == s.rank {
			l := r / s.size
			for e, v := range row {
				host[l*w+e] = float32(v)
			}
		}
	}
	s.own = m.be.Alloc(own * w)
	m.be.Upload(s.own, host)
	k := m.capacity * len(m.dims)
	s.slots = m.be.AllocI32(k)
	s.slotHost, s.host = make([]int32, k), make([]int32, k)
	s.next, s.counts, s.recvCounts = make([]int32, s.size), make([]int32, s.size), make([]int32, s.size)
	s.sendCounts, s.recvCountsW = make([]int32, s.size), make([]int32, s.size)
	return s, nil
}

func (s *tableShard) free() {
	for _, b := range []compute.F32{s.own, s.rowBuf, s.uGrad} {
		if b != nil {
			b.Free()
		}
	}
	for _, b := range []compute.I32{s.slots, s.reqBuf, s.uRows, s.uCount} {
		if b != nil {
			b.Free()
		}
	}
	s.freeTraining()
}

// training allocates Adam's moments of the owned rows (zero), for Train
// on a cluster. The best epoch's copy of the rows (best) is allocated by
// Train when an epoch is about to change the best rows, as a whole
// table's is.
func (s *tableShard) training(be compute.Backend) {
	n := s.own.Len()
	s.adamM, s.adamV = be.Alloc(n), be.Alloc(n) // zeroed
}

func (s *tableShard) freeTraining() {
	for _, b := range []compute.F32{s.adamM, s.adamV, s.best} {
		if b != nil {
			b.Free()
		}
	}
	s.adamM, s.adamV, s.best = nil, nil, nil
}

// fetch brings the distinct rows of the batch (k global rows on the
// backend) into the model's cache and returns the batch renumbered into
// cache slots. It is collective (see Batches).
func (s *tableShard) fetch(m *Net, rows compute.I32, k int) compute.I32 {
	be, w, p := m.be, m.width, s.size
	host := s.host[:k]
	if k > 0 {
		if err := be.DownloadI32(host, rows); err != nil {
			// The backend's error is sticky: the pass returns it.
			clear(host)
		}
	}
	// The distinct rows in increasing order, and each position's slot
	// among them, from one sort of (row, position) keys.
	s.keys = slices.Grow(s.keys[:0], k)[:k]
	for i, r := range host {
		if r < 0 || int(r) >= s.rows {
			panic(fmt.Sprintf("nn: row %d outside the table of %d rows", r, s.rows))
		}
		s.keys[i] = uint64(r)<<32 | uint64(i)
	}
	slices.Sort(s.keys)
	s.uniq = s.uniq[:0]
	for _, key := range s.keys {
		r := int32(key >> 32)
		if len(s.uniq) == 0 || s.uniq[len(s.uniq)-1] != r {
			s.uniq = append(s.uniq, r)
		}
		s.slotHost[uint32(key)] = int32(len(s.uniq) - 1)
	}
	// Requests grouped by owner, increasing within each owner.
	clear(s.counts)
	for _, r := range s.uniq {
		s.counts[int(r)%p]++
	}
	at := int32(0)
	for o := range s.next {
		s.next[o] = at
		at += s.counts[o]
	}
	s.send = slices.Grow(s.send[:0], len(s.uniq))[:len(s.uniq)]
	s.sendSlot = slices.Grow(s.sendSlot[:0], len(s.uniq))[:len(s.uniq)]
	for u, r := range s.uniq {
		o := int(r) % p
		s.send[s.next[o]], s.sendSlot[s.next[o]] = r, int32(u)
		s.next[o]++
	}
	s.recv = s.comm.AlltoallvI32(s.recv, s.send, s.counts, s.recvCounts)
	// Serve the rows asked of this process, in the order asked.
	n := len(s.recv)
	s.rowHost = slices.Grow(s.rowHost[:0], n*w)[:n*w]
	if n > 0 {
		local := slices.Grow(s.local[:0], n)[:n]
		s.local = local
		for i, r := range s.recv {
			if int(r)%p != s.rank || int(r) >= s.rows {
				panic(fmt.Sprintf("nn: process %d asked for row %d, which it does not own", s.rank, r))
			}
			local[i] = r / int32(p)
		}
		if s.reqBuf == nil || s.reqBuf.Len() < n {
			if s.reqBuf != nil {
				s.reqBuf.Free()
				s.rowBuf.Free()
			}
			c := max(n, m.capacity*len(m.dims))
			s.reqBuf, s.rowBuf = be.AllocI32(c), be.Alloc(c*w)
		}
		be.UploadI32(s.reqBuf.Slice(0, n), local)
		be.Gather(s.rowBuf.Slice(0, n*w), s.own, s.reqBuf.Slice(0, n), 1, w, compute.ModeMajor)
		if err := be.Download(s.rowHost, s.rowBuf.Slice(0, n*w)); err != nil {
			clear(s.rowHost)
		}
	}
	for o := range s.sendCounts {
		s.sendCounts[o], s.recvCountsW[o] = s.recvCounts[o]*int32(w), s.counts[o]*int32(w)
	}
	got := s.comm.AlltoallvF32(s.rowGot, s.rowHost, s.sendCounts, s.recvCountsW)
	s.rowGot = got
	// got holds the rows of send, in its order: place each in its slot.
	u := len(s.uniq)
	if len(got) != u*w {
		panic(fmt.Sprintf("nn: %d row values came back for %d rows of %d", len(got), u, w))
	}
	s.cacheHost = slices.Grow(s.cacheHost[:0], u*w)[:u*w]
	for j, slot := range s.sendSlot {
		copy(s.cacheHost[int(slot)*w:int(slot+1)*w], got[j*w:(j+1)*w])
	}
	if u > 0 {
		be.Upload(m.table.Slice(0, u*w), s.cacheHost)
	}
	if k == 0 {
		return nil
	}
	be.UploadI32(s.slots.Slice(0, k), s.slotHost[:k])
	return s.slots.Slice(0, k)
}

// push sends the compact gradient rows of the latest fetch's distinct rows
// (grad: U×E, row u the gradient of uniq[u]; nil when the process had no
// batch) to their owners, which sum every process's contribution to a row
// in process order and apply SparseAdam with step st to their rows. It is
// collective.
func (s *tableShard) push(be compute.Backend, w int, grad []float32, st compute.AdamStep) {
	p := s.size
	send := slices.Grow(s.gradSend[:0], len(s.send)*w)[:len(s.send)*w]
	s.gradSend = send
	for j, slot := range s.sendSlot {
		copy(send[j*w:(j+1)*w], grad[int(slot)*w:int(slot+1)*w])
	}
	for o := range s.sendCounts {
		s.sendCounts[o], s.recvCountsW[o] = s.counts[o]*int32(w), s.recvCounts[o]*int32(w)
	}
	got := s.comm.AlltoallvF32(s.gradGot, send, s.sendCounts, s.recvCountsW)
	s.gradGot = got
	// got is aligned with recv: the ids each process asked of this one,
	// process after process, each process's increasing. The union of the
	// local rows, in increasing order, then each process's rows added in
	// process order, each list walked beside the union.
	s.unionRows = s.unionRows[:0]
	for _, r := range s.recv {
		s.unionRows = append(s.unionRows, r/int32(p))
	}
	slices.Sort(s.unionRows)
	s.unionRows = slices.Compact(s.unionRows)
	u := len(s.unionRows)
	s.unionGrad = slices.Grow(s.unionGrad[:0], u*w)[:u*w]
	clear(s.unionGrad)
	at := 0
	for _, c := range s.recvCounts {
		slot := 0
		for i := at; i < at+int(c); i++ {
			l := s.recv[i] / int32(p)
			for s.unionRows[slot] != l {
				slot++
			}
			dst := s.unionGrad[slot*w:][:w]
			for e, v := range got[i*w : (i+1)*w] {
				dst[e] += v
			}
		}
		at += int(c)
	}
	if s.uRows == nil || s.uRows.Len() < max(u, 1) {
		if s.uRows != nil {
			s.uRows.Free()
			s.uGrad.Free()
		} else {
			s.uCount = be.AllocI32(1)
		}
		c := max(u, 1, len(s.slotHost))
		s.uRows, s.uGrad = be.AllocI32(c), be.Alloc(c*w)
	}
	be.UploadI32(s.uCount, []int32{int32(u)})
	if u > 0 {
		be.UploadI32(s.uRows.Slice(0, u), s.unionRows)
		be.Upload(s.uGrad.Slice(0, u*w), s.unionGrad)
	}
	be.SparseAdam(s.own, s.uGrad.Slice(0, u*w), s.adamM, s.adamV, s.uRows.Slice(0, u), s.uCount, w, st)
}
