package nn

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
)

// This file is Train on the processes of a cluster (TrainConfig.Dist, data
// parallelism): every process holds a replica of the model and a share of
// the training cells; each step's global batch, the one Train would take
// from the same order on one process, is divided among the processes by
// who holds each cell; the gradients are summed across processes; every
// process then takes the same Adam step, so the replicas stay identical.
// Only the summation order of the gradients differs from one process's.

// Span is a run of consecutive cells of a local Set that are consecutive
// cells of the global training set.
type Span struct {
	Global, Local, N int
}

// DistConfig describes a data-parallel training (TrainConfig.Dist).
type DistConfig struct {
	Cluster cluster.Cluster
	// Global is the number of training cells over all processes; Owned
	// maps the local Set's cells to their global numbers (the order Train
	// would see them in on one process).
	Global int
	Owned  []Span
	// ValGlobal is the number of validation cells over all processes.
	ValGlobal int
	// Exchange is "dense" (the whole gradient summed every step) or
	// "sparse" (the dense layers summed, and only the embedding rows a step
	// touched gathered from every process); "" chooses by size (see
	// ChooseExchange). SparseAdam and a sharded table always take their
	// own sparse exchange.
	Exchange string
	// Comm, if not nil, is added the wall time spent exchanging.
	Comm *time.Duration
}

// ChooseExchange returns "sparse" when the embedding table is more than
// four times the rows a step can touch (batch × order), else "dense": a
// sparse exchange gathers at most batch × order rows from each process
// per step, a dense one moves about twice the table through a ring.
func ChooseExchange(tableRows, batch, order int) string {
	if tableRows > 4*batch*order {
		return "sparse"
	}
	return "dense"
}

// checkDist checks what Train on a cluster (cfg.Dist) needs beyond the
// one-process checks of the configuration.
func checkDist(m *Net, train *Set, cfg TrainConfig) error {
	d := cfg.Dist
	if d.Cluster == nil {
		return fmt.Errorf("nn: a data-parallel training without a cluster")
	}
	if len(cfg.Steps) > 0 && m.sh != nil {
		return fmt.Errorf("nn: step hooks observe a training whose embedding table is replicated, not sharded")
	}
	if (cfg.Resume != nil || cfg.Save != nil) && cfg.Order == nil {
		return fmt.Errorf("nn: a data-parallel training is checkpointed only with a keyed order (the keyed split)")
	}
	if sh := m.sh; sh != nil {
		if cfg.EmbeddingOptimizer != SparseAdam {
			return fmt.Errorf("nn: a sharded embedding table trains with sparse-adam (its owners update only the rows a step touched), not %s", cfg.EmbeddingOptimizer)
		}
		if sh.size != d.Cluster.Size() {
			return fmt.Errorf("nn: the table is sharded over %d processes, the training runs on %d", sh.size, d.Cluster.Size())
		}
		if cfg.Adam != nil {
			return fmt.Errorf("nn: the Adam state of a sharded table is its owners'; TrainConfig.Adam is not kept")
		}
	}
	if d.Global == 0 || d.ValGlobal == 0 {
		return fmt.Errorf("nn: %d training and %d validation cells; both must be non-empty", d.Global, d.ValGlobal)
	}
	if d.Global > math.MaxInt32 {
		return fmt.Errorf("nn: %d training cells; at most %d can be trained on", d.Global, math.MaxInt32)
	}
	n := 0
	for _, s := range d.Owned {
		if s.Local != n || s.N < 0 || s.Global < 0 || s.Global+s.N > d.Global {
			return fmt.Errorf("nn: spans %v do not number %d local cells among %d", d.Owned, train.Len(), d.Global)
		}
		n += s.N
	}
	if n != train.Len() {
		return fmt.Errorf("nn: spans %v do not number %d local cells", d.Owned, train.Len())
	}
	_, err := distExchange(m, cfg)
	return err
}

// distExchange returns the exchange of the table's gradient (dense or
// sparse) that Train on cfg.Dist takes.
func distExchange(m *Net, cfg TrainConfig) (string, error) {
	exchange := cfg.Dist.Exchange
	sparseAdam := cfg.EmbeddingOptimizer == SparseAdam
	if exchange == "" || sparseAdam {
		// SparseAdam needs the union of the rows touched anywhere, which
		// only the sparse exchange gives.
		exchange = ChooseExchange(m.table.Len()/m.width, cfg.Batch, m.Order())
		if sparseAdam {
			exchange = "sparse"
		}
	}
	if exchange != "dense" && exchange != "sparse" {
		return "", fmt.Errorf("nn: exchange %q: want dense or sparse", exchange)
	}
	return exchange, nil
}

// local returns the local number of global training cell p, or −1 if
// this process does not hold it.
func (d *DistConfig) local(p int) int {
	for _, s := range d.Owned {
		if p >= s.Global && p < s.Global+s.N {
			return s.Local + p - s.Global
		}
	}
	return -1
}

// exchange is what Train on a cluster exchanges between the processes, and
// its buffers.
type exchange struct {
	t          *trainer
	cl         cluster.Cluster
	sparse     bool // the table's gradient is exchanged sparsely
	sparseAdam bool
	sharded    bool

	// The exchanged dense part of the gradient: all of it (dense), or the
	// part after the table (sparse).
	dense     compute.F32
	denseHost []float32
	ds        cluster.DeviceSummer

	// Sparse exchange buffers: this step's distinct table rows, their
	// gradient rows gathered on the device, and the negation that clears
	// them before every process's rows are added in process order.
	rowSeen           map[int32]struct{}
	uniq              []int32
	rowBuf            compute.I32
	gradBuf           compute.F32
	gradHost, negHost []float32
	allRowsBuf        compute.I32
	allGrads          compute.F32

	// SparseAdam's exchange: every process's compact rows gathered, their
	// union summed row by row in process order (0 + x is exact, so one
	// process keeps its own bits), and the same SparseAdam applied on
	// every process.
	spCount                  []int32
	spRows                   []int32
	spGrad                   []float32
	unionSlot                map[int32]int32
	unionRows                []int32
	unionGrad                []float32
	unionRowBuf, unionCntBuf compute.I32
	unionGradBuf             compute.F32

	gsumHost []float32 // ValGradSum on the host, for its sum
}

// newExchange sets up t's exchange (its configuration checked by
// checkDist).
func newExchange(t *trainer) *exchange {
	m, be, cfg := t.m, t.be, t.cfg
	x := &exchange{t: t, cl: t.d.Cluster, sparseAdam: t.sparse, sharded: m.sh != nil,
		rowSeen: map[int32]struct{}{}, spCount: []int32{0}, unionSlot: map[int32]int32{}}
	kind, _ := distExchange(m, cfg)
	x.sparse = kind == "sparse"
	x.dense = m.grads
	if x.sparse {
		x.dense = m.grads.Slice(m.table.Len(), m.grads.Len()-m.table.Len())
		x.rowBuf, x.gradBuf = be.AllocI32(cfg.Batch*t.order), be.Alloc(cfg.Batch*t.order*m.width)
	}
	x.denseHost = make([]float32, x.dense.Len())
	x.ds, _ = x.cl.(cluster.DeviceSummer)
	if x.sparseAdam {
		x.unionCntBuf = be.AllocI32(1)
	}
	if cfg.ValGradSum != nil {
		x.gsumHost = make([]float32, cfg.ValGradSum.Len())
	}
	return x
}

// free releases the exchange's buffers.
func (x *exchange) free() {
	for _, b := range []compute.I32{x.rowBuf, x.allRowsBuf, x.unionRowBuf, x.unionCntBuf} {
		if b != nil {
			b.Free()
		}
	}
	for _, b := range []compute.F32{x.gradBuf, x.allGrads, x.unionGradBuf} {
		if b != nil {
			b.Free()
		}
	}
}

// timed runs f, adding its wall time to Dist.Comm.
func (x *exchange) timed(f func()) {
	t0 := time.Now()
	f()
	if c := x.t.d.Comm; c != nil {
		*c += time.Since(t0)
	}
}

// meanSquare is the mean squared value of the training cells of all
// processes.
func (x *exchange) meanSquare() float64 {
	ms := []float64{x.t.train.MeanSquare() * float64(x.t.train.Len())}
	x.cl.SumF64(ms)
	return ms[0] / float64(x.t.T)
}

// distOrder sets epoch k's order of this process's cells: its cells of
// each step, in the global order (Order(k)'s, or the shuffle of the
// previous epoch's perm). A keyed order places them by their positions,
// in O(L) memory; the legacy shuffle shuffles a permutation of all T
// cells on every process.
func (t *trainer) distOrder(k int) {
	cfg, d, steps, ord := t.cfg, t.d, t.steps, t.ord
	pos := 0
	if cfg.Order != nil {
		// The positions of this process's cells (< T ≤ MaxInt32),
		// sorted, then each replaced by its cell's local number
		// (Cell inverts Position): the order in 4 bytes a cell.
		o := cfg.Order(k)
		for _, sp := range d.Owned {
			for i := 0; i < sp.N; i++ {
				ord[sp.Local+i] = int32(o.Position(sp.Global + i))
			}
		}
		slices.Sort(ord)
		s := 0
		for i, p := range ord {
			for ; s <= int(p)/cfg.Batch; s++ {
				t.stepLo[s] = pos
			}
			pos++
			ord[i] = int32(d.local(o.Cell(int(p))))
		}
		for ; s < steps; s++ {
			t.stepLo[s] = pos
		}
	} else {
		if cfg.Shuffle != nil {
			cfg.Shuffle.Shuffle(t.T, func(i, j int) { t.perm[i], t.perm[j] = t.perm[j], t.perm[i] })
		}
		for s := 0; s < steps; s++ {
			t.stepLo[s] = pos
			for _, p := range t.perm[s*cfg.Batch : min((s+1)*cfg.Batch, t.T)] {
				if l := d.local(int(p)); l >= 0 {
					ord[pos] = int32(l)
					pos++
				}
			}
		}
	}
	t.stepLo[steps] = pos
}

// idle stands in for the pass of step s when this process holds none of
// its cells: a sharded table serves the others' rows, and the gradient
// and the step's squared error are zero.
func (x *exchange) idle(s int) {
	be := x.t.be
	x.t.m.Skip()
	be.Fill(x.dense, 0) // SparseAdam: the table's part is not read
	if !x.sparseAdam {
		be.Fill(x.t.m.grads, 0)
	}
	be.Fill(x.t.sq.Slice(s, 1), 0)
}

// step sums the step's gradient over the processes and takes the
// optimiser step; touched is whether this process had cells in the step,
// cells its local cells.
func (x *exchange) step(touched bool, cells []int32) error {
	t := x.t
	if err := x.sumDense(); err != nil {
		return err
	}
	switch {
	case x.sharded:
		return x.shardStep(touched)
	case x.sparseAdam:
		return x.sparseStep(touched)
	}
	if x.sparse {
		if err := x.sumTable(cells); err != nil {
			return err
		}
	}
	t.be.Adam(t.m.params, t.m.grads, t.adamM, t.adamV, t.adam)
	return nil
}

// sumDense sums the dense part of the gradient over the processes, on the
// device if the cluster can.
func (x *exchange) sumDense() error {
	be := x.t.be
	var err error
	x.timed(func() {
		if x.ds != nil {
			var ok bool
			if ok, err = x.ds.SumDevice(be, x.dense); ok || err != nil {
				return
			}
		}
		if err = be.Download(x.denseHost, x.dense); err != nil {
			return
		}
		x.cl.SumF32(x.denseHost)
		be.Upload(x.dense, x.denseHost)
	})
	return err
}

// sumTable is the sparse exchange of the table's gradient: the rows the
// step's local cells touched, gathered from every process and added in
// process order.
func (x *exchange) sumTable(cells []int32) error {
	t := x.t
	be, m, order := t.be, t.m, t.order
	clear(x.rowSeen)
	x.uniq = x.uniq[:0]
	for _, c := range cells {
		for _, r := range t.train.rows[int(c)*order : (int(c)+1)*order] {
			if _, ok := x.rowSeen[r]; !ok {
				x.rowSeen[r] = struct{}{}
				x.uniq = append(x.uniq, r)
			}
		}
	}
	slices.Sort(x.uniq)
	k, w := len(x.uniq), m.width
	if cap(x.gradHost) < k*w {
		x.gradHost, x.negHost = make([]float32, k*w), make([]float32, k*w)
	}
	x.gradHost, x.negHost = x.gradHost[:k*w], x.negHost[:k*w]
	if k > 0 {
		be.UploadI32(x.rowBuf.Slice(0, k), x.uniq)
		be.Gather(x.gradBuf.Slice(0, k*w), m.dtable, x.rowBuf.Slice(0, k), 1, w, compute.ModeMajor)
		if err := be.Download(x.gradHost, x.gradBuf.Slice(0, k*w)); err != nil {
			return err
		}
		// Clear this process's rows: x + (−x) is exactly 0.
		for i, v := range x.gradHost {
			x.negHost[i] = -v
		}
		be.Upload(x.gradBuf.Slice(0, k*w), x.negHost)
		be.ScatterRows(m.dtable, x.gradBuf.Slice(0, k*w), x.rowBuf.Slice(0, k), 1, w, compute.ModeMajor)
	}
	var allRows []int32
	var all []float32
	x.timed(func() {
		allRows = x.cl.GatherI32(x.uniq)
		all = x.cl.GatherF32(x.gradHost)
	})
	if len(allRows) == 0 {
		return nil
	}
	if x.allRowsBuf == nil || x.allRowsBuf.Len() < len(allRows) {
		if x.allRowsBuf != nil {
			x.allRowsBuf.Free()
			x.allGrads.Free()
		}
		x.allRowsBuf, x.allGrads = be.AllocI32(len(allRows)), be.Alloc(len(allRows)*w)
	}
	rb, gb := x.allRowsBuf.Slice(0, len(allRows)), x.allGrads.Slice(0, len(all))
	be.UploadI32(rb, allRows)
	be.Upload(gb, all)
	// Every process adds the same rows in the same (process) order.
	be.ScatterRows(m.dtable, gb, rb, 1, w, compute.ModeMajor)
	return nil
}

// sparseStep is SparseAdam's exchange and step: the union of every
// process's compact rows, summed in process order, and the same
// SparseAdam on every process.
func (x *exchange) sparseStep(touched bool) error {
	t := x.t
	be, m, w := t.be, t.m, t.m.width
	x.spRows, x.spGrad = x.spRows[:0], x.spGrad[:0]
	if touched {
		rows, count, grad := m.SparseGrad()
		if err := be.DownloadI32(x.spCount, count); err != nil {
			return err
		}
		u := int(x.spCount[0])
		x.spRows, x.spGrad = append(x.spRows, make([]int32, u)...), append(x.spGrad, make([]float32, u*w)...)
		if u > 0 {
			if err := be.DownloadI32(x.spRows, rows.Slice(0, u)); err != nil {
				return err
			}
			if err := be.Download(x.spGrad, grad.Slice(0, u*w)); err != nil {
				return err
			}
		}
	}
	var allRows []int32
	var all []float32
	x.timed(func() {
		allRows = x.cl.GatherI32(x.spRows)
		all = x.cl.GatherF32(x.spGrad)
	})
	clear(x.unionSlot)
	x.unionRows = x.unionRows[:0]
	for _, r := range allRows {
		if _, ok := x.unionSlot[r]; !ok {
			x.unionSlot[r] = 0
			x.unionRows = append(x.unionRows, r)
		}
	}
	slices.Sort(x.unionRows)
	for i, r := range x.unionRows {
		x.unionSlot[r] = int32(i)
	}
	u := len(x.unionRows)
	x.unionGrad = append(x.unionGrad[:0], make([]float32, u*w)...)
	for i, r := range allRows {
		dst := x.unionGrad[int(x.unionSlot[r])*w:][:w]
		for e, v := range all[i*w : (i+1)*w] {
			dst[e] += v
		}
	}
	if x.unionRowBuf == nil || x.unionRowBuf.Len() < max(u, 1) {
		if x.unionRowBuf != nil {
			x.unionRowBuf.Free()
			x.unionGradBuf.Free()
		}
		n := max(u, t.cfg.Batch*t.order)
		x.unionRowBuf, x.unionGradBuf = be.AllocI32(n), be.Alloc(n*w)
	}
	be.UploadI32(x.unionCntBuf, []int32{int32(u)})
	if u > 0 {
		be.UploadI32(x.unionRowBuf.Slice(0, u), x.unionRows)
		be.Upload(x.unionGradBuf.Slice(0, u*w), x.unionGrad)
	}
	m.sparseAdamStep(x.unionRowBuf.Slice(0, u), x.unionCntBuf, x.unionGradBuf.Slice(0, u*w), t.adamM, t.adamV, t.adam)
	return nil
}

// shardStep is a sharded table's step: this process's compact rows go to
// their owners, which sum them in process order (as sparseStep does) and
// apply SparseAdam to their rows; the layers take dense Adam.
func (x *exchange) shardStep(touched bool) error {
	t := x.t
	be, m, w := t.be, t.m, t.m.width
	x.spGrad = x.spGrad[:0]
	if touched {
		_, count, grad := m.SparseGrad()
		if err := be.DownloadI32(x.spCount, count); err != nil {
			return err
		}
		u := int(x.spCount[0])
		if u != len(m.sh.uniq) {
			return fmt.Errorf("nn: the step touched %d rows, its fetch %d", u, len(m.sh.uniq))
		}
		x.spGrad = append(x.spGrad, make([]float32, u*w)...)
		if u > 0 {
			if err := be.Download(x.spGrad, grad.Slice(0, u*w)); err != nil {
				return err
			}
		}
	}
	x.timed(func() { m.sh.push(be, w, x.spGrad, t.adam) })
	tl, n := m.table.Len(), m.params.Len()
	p, g := m.DenseParams()
	be.Adam(p, g, t.adamM.Slice(tl, n-tl), t.adamV.Slice(tl, n-tl), t.adam)
	return nil
}

// epochMSE returns epoch k's training MSE and validation MSE over all
// processes, and sums ValGradSum over them: each step's squared error
// and the validation sums, in one exchange.
func (x *exchange) epochMSE(k int) (trainMSE, valMSE float64, err error) {
	t := x.t
	be, cfg, steps := t.be, t.cfg, t.steps
	sums := make([]float64, steps+2+len(x.gsumHost))
	for s, v := range t.sqHost {
		sums[s] = float64(v)
	}
	if t.val.Len() > 0 || x.sharded {
		var localVal float64
		if localVal, err = t.m.evaluate(t.val, cfg.ValGradSum); err != nil {
			return 0, 0, fmt.Errorf("nn: epoch %d: %w", k, err)
		}
		if t.val.Len() > 0 {
			sums[steps] = localVal * float64(t.val.Len())
		}
	} else if cfg.ValGradSum != nil {
		be.Fill(cfg.ValGradSum, 0)
	}
	if x.gsumHost != nil {
		if err := be.Download(x.gsumHost, cfg.ValGradSum); err != nil {
			return 0, 0, fmt.Errorf("nn: epoch %d: %w", k, err)
		}
		for i, v := range x.gsumHost {
			sums[steps+2+i] = float64(v)
		}
	}
	x.timed(func() { x.cl.SumF64(sums) })
	if x.gsumHost != nil {
		for i := range x.gsumHost {
			x.gsumHost[i] = float32(sums[steps+2+i])
		}
		be.Upload(cfg.ValGradSum, x.gsumHost)
	}
	return meanStepMSE(sums[:steps], cfg.Batch, t.T), sums[steps] / float64(t.d.ValGlobal), nil
}

// ParamsChecksum returns a checksum of the model's parameters (to check
// that data-parallel replicas agree); when the table is sharded, of the
// Linear layers' (the part every process holds).
func (m *Net) ParamsChecksum() (uint64, error) {
	p := m.params
	if m.sh != nil {
		p, _ = m.DenseParams()
	}
	host := make([]float32, p.Len())
	if err := m.be.Download(host, p); err != nil {
		return 0, err
	}
	h := uint64(14695981039346656037)
	for _, v := range host {
		h ^= uint64(math.Float32bits(v))
		h *= 1099511628211
	}
	return h, nil
}
