package nn

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/dainx/dainx/compute"
)

// This file is Train spread over processes (data parallelism): every
// process holds a replica of the model and a share of the training cells;
// each step's global batch, the one Train would take from the same
// shuffle, is divided among the processes by who holds each cell; the
// gradients are summed across processes; every process then takes the same
// Adam step, so the replicas stay identical. Only the summation order of
// the gradients differs from Train's.

// Cluster is what TrainDist needs from the processes it runs on (package
// dist implements it over MPI, or NCCL for device buffers).
type Cluster interface {
	// Size returns the number of processes.
	Size() int
	// SumF32 and SumF64 replace x on every process by the element-wise
	// sum over the processes (the same result on every one).
	SumF32(x []float32)
	SumF64(x []float64)
	// GatherF32 and GatherI32 return every process's x concatenated in
	// process order.
	GatherF32(x []float32) []float32
	GatherI32(x []int32) []int32
}

// DeviceSummer is a Cluster that can also sum a backend buffer in place on
// the device (NCCL); TrainDist then sums the dense gradients there.
type DeviceSummer interface {
	SumDevice(be compute.Backend, x compute.F32) (bool, error)
}

// Span is a run of consecutive cells of a local Set that are consecutive
// cells of the global training set.
type Span struct {
	Global, Local, N int
}

// DistConfig describes a data-parallel training (TrainDist).
type DistConfig struct {
	Cluster Cluster
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
	// ChooseExchange).
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

// TrainDist is Train on the processes of d.Cluster, on which every process
// calls it with the same model initialisation, configuration and shuffle
// seed, its own share of the training cells (train, numbered by d.Owned)
// and of the validation cells. The result, the parameters left in m and
// every error are the same on every process. Resume and Save work as in
// Train (each process saving and resuming its replica's state, the same on
// every process) when the order is keyed (cfg.Order), which needs no saved
// cell order: the state's Perm is empty. Graphs is not supported.
func TrainDist(ctx context.Context, m *Net, train, val *Set, cfg TrainConfig, d DistConfig) (Result, error) {
	var res Result
	if cfg.Epochs <= 0 || cfg.Batch <= 0 || cfg.Patience <= 0 || !(cfg.LR > 0) {
		return res, fmt.Errorf("nn: epochs %d, batch %d, patience %d, lr %g: all must be positive", cfg.Epochs, cfg.Batch, cfg.Patience, cfg.LR)
	}
	if err := CheckL2(cfg.L2); err != nil {
		return res, fmt.Errorf("nn: %w", err)
	}
	if (cfg.Resume != nil || cfg.Save != nil) && cfg.Order == nil {
		return res, fmt.Errorf("nn: a data-parallel training is checkpointed only with a keyed order (the keyed split)")
	}
	if cfg.Batch > m.capacity {
		return res, fmt.Errorf("nn: batch %d exceeds the model's capacity %d", cfg.Batch, m.capacity)
	}
	if err := CheckEmbeddingOptimizer(cfg.EmbeddingOptimizer); err != nil {
		return res, fmt.Errorf("nn: %w", err)
	}
	sparseAdam := cfg.EmbeddingOptimizer == SparseAdam
	sharded := m.sh != nil
	if sharded && !sparseAdam {
		return res, fmt.Errorf("nn: a sharded embedding table trains with sparse-adam (its owners update only the rows a step touched), not %s", cfg.EmbeddingOptimizer)
	}
	if sharded && m.sh.size != d.Cluster.Size() {
		return res, fmt.Errorf("nn: the table is sharded over %d processes, the training runs on %d", m.sh.size, d.Cluster.Size())
	}
	if d.Global == 0 || d.ValGlobal == 0 {
		return res, fmt.Errorf("nn: %d training and %d validation cells; both must be non-empty", d.Global, d.ValGlobal)
	}
	if d.Global > math.MaxInt32 {
		return res, fmt.Errorf("nn: %d training cells; at most %d can be trained on", d.Global, math.MaxInt32)
	}
	n := 0
	for _, s := range d.Owned {
		if s.Local != n || s.N < 0 || s.Global < 0 || s.Global+s.N > d.Global {
			return res, fmt.Errorf("nn: spans %v do not number %d local cells among %d", d.Owned, train.Len(), d.Global)
		}
		n += s.N
	}
	if n != train.Len() {
		return res, fmt.Errorf("nn: spans %v do not number %d local cells", d.Owned, train.Len())
	}
	cl := d.Cluster
	timed := func(f func()) {
		t0 := time.Now()
		f()
		if d.Comm != nil {
			*d.Comm += time.Since(t0)
		}
	}
	be, order, T, L := m.be, m.Order(), d.Global, train.Len()
	steps := (T + cfg.Batch - 1) / cfg.Batch
	// The process's cells in each epoch's order (localOrd, local cell
	// numbers). On a backend whose buffers are host memory (the CPU) each
	// step gathers its cells into batch-sized buffers that are the
	// backend's buffers themselves, so no ordered copy of the cells is
	// held; elsewhere the ordered copy is uploaded each epoch.
	hb, perStep := be.(compute.HostBuffers)
	held := max(L, 1)
	if perStep {
		held = cfg.Batch
	}
	hostRows, hostVals := make([]int32, held*order), make([]float32, held)
	var shufRows compute.I32
	var shufVals compute.F32
	if perStep {
		shufRows, shufVals = hb.WrapI32(hostRows), hb.WrapF32(hostVals)
	} else {
		shufRows, shufVals = be.AllocI32(held*order), be.Alloc(held)
	}
	// fill copies the local cells ord into the host buffers from position
	// at.
	fill := func(ord []int32, at int) {
		for i, l := range ord {
			copy(hostRows[(at+i)*order:(at+i+1)*order], train.rows[int(l)*order:(int(l)+1)*order])
			hostVals[at+i] = train.vals[l]
		}
	}
	adamM, adamV := be.Alloc(m.params.Len()), be.Alloc(m.params.Len())
	best := be.Alloc(m.params.Len())
	if sharded {
		m.sh.training(be)
		defer m.sh.freeTraining()
	}
	delta, sq := be.Alloc(m.capacity), be.Alloc(steps)
	defer func() {
		for _, b := range []compute.F32{shufVals, adamM, adamV, best, delta, sq} {
			b.Free()
		}
		shufRows.Free()
	}()
	exchange := d.Exchange
	tableRows := m.table.Len() / m.width
	if exchange == "" || sparseAdam {
		// SparseAdam needs the union of the rows touched anywhere, which
		// only the sparse exchange gives.
		exchange = ChooseExchange(tableRows, cfg.Batch, order)
		if sparseAdam {
			exchange = "sparse"
		}
	}
	if exchange != "dense" && exchange != "sparse" {
		return res, fmt.Errorf("nn: exchange %q: want dense or sparse", exchange)
	}
	// The exchanged part of the gradient: all of it (dense), or the part
	// after the table (sparse).
	dense := m.grads
	if exchange == "sparse" {
		dense = m.grads.Slice(m.table.Len(), m.grads.Len()-m.table.Len())
	}
	denseHost := make([]float32, dense.Len())
	ds, _ := cl.(DeviceSummer)
	sumDense := func() error {
		var err error
		timed(func() {
			if ds != nil {
				var ok bool
				if ok, err = ds.SumDevice(be, dense); ok || err != nil {
					return
				}
			}
			if err = be.Download(denseHost, dense); err != nil {
				return
			}
			cl.SumF32(denseHost)
			be.Upload(dense, denseHost)
		})
		return err
	}
	// Sparse exchange buffers: this step's distinct table rows, their
	// gradient rows gathered on the device, and the negation that clears
	// them before every process's rows are added in process order.
	var (
		rowSeen              = map[int32]struct{}{}
		uniq                 []int32
		rowBuf               compute.I32
		gradBuf              compute.F32
		gradHost, negHost    []float32
		allRowsBuf, allGrads = compute.I32(nil), compute.F32(nil)
	)
	if exchange == "sparse" {
		rowBuf, gradBuf = be.AllocI32(cfg.Batch*order), be.Alloc(cfg.Batch*order*m.width)
		defer rowBuf.Free()
		defer gradBuf.Free()
		defer func() {
			if allRowsBuf != nil {
				allRowsBuf.Free()
				allGrads.Free()
			}
		}()
	}
	sumTable := func(rows []int32) error {
		clear(rowSeen)
		uniq = uniq[:0]
		for _, r := range rows {
			if _, ok := rowSeen[r]; !ok {
				rowSeen[r] = struct{}{}
				uniq = append(uniq, r)
			}
		}
		slices.Sort(uniq)
		k, w := len(uniq), m.width
		if cap(gradHost) < k*w {
			gradHost, negHost = make([]float32, k*w), make([]float32, k*w)
		}
		gradHost, negHost = gradHost[:k*w], negHost[:k*w]
		if k > 0 {
			be.UploadI32(rowBuf.Slice(0, k), uniq)
			be.Gather(gradBuf.Slice(0, k*w), m.dtable, rowBuf.Slice(0, k), 1, w, compute.ModeMajor)
			if err := be.Download(gradHost, gradBuf.Slice(0, k*w)); err != nil {
				return err
			}
			// Clear this process's rows: x + (−x) is exactly 0.
			for i, v := range gradHost {
				negHost[i] = -v
			}
			be.Upload(gradBuf.Slice(0, k*w), negHost)
			be.ScatterRows(m.dtable, gradBuf.Slice(0, k*w), rowBuf.Slice(0, k), 1, w, compute.ModeMajor)
		}
		var allRows []int32
		var all []float32
		timed(func() {
			allRows = cl.GatherI32(uniq)
			all = cl.GatherF32(gradHost)
		})
		if len(allRows) == 0 {
			return nil
		}
		if allRowsBuf == nil || allRowsBuf.Len() < len(allRows) {
			if allRowsBuf != nil {
				allRowsBuf.Free()
				allGrads.Free()
			}
			allRowsBuf, allGrads = be.AllocI32(len(allRows)), be.Alloc(len(allRows)*w)
		}
		rb, gb := allRowsBuf.Slice(0, len(allRows)), allGrads.Slice(0, len(all))
		be.UploadI32(rb, allRows)
		be.Upload(gb, all)
		// Every process adds the same rows in the same (process) order.
		be.ScatterRows(m.dtable, gb, rb, 1, w, compute.ModeMajor)
		return nil
	}

	// SparseAdam's exchange: every process's compact rows gathered, their
	// union summed row by row in process order (0 + x is exact, so one
	// process keeps its own bits), and the same SparseAdam applied on
	// every process.
	var (
		spCount                  = []int32{0}
		spRows                   []int32
		spGrad                   []float32
		unionSlot                = map[int32]int32{}
		unionRows                []int32
		unionGrad                []float32
		unionRowBuf, unionCntBuf compute.I32
		unionGradBuf             compute.F32
	)
	if sparseAdam {
		unionCntBuf = be.AllocI32(1)
		defer unionCntBuf.Free()
		defer func() {
			if unionRowBuf != nil {
				unionRowBuf.Free()
				unionGradBuf.Free()
			}
		}()
	}
	sparseStep := func(touched bool, step compute.AdamStep) error {
		w := m.width
		spRows, spGrad = spRows[:0], spGrad[:0]
		if touched {
			rows, count, grad := m.SparseGrad()
			if err := be.DownloadI32(spCount, count); err != nil {
				return err
			}
			u := int(spCount[0])
			spRows, spGrad = append(spRows, make([]int32, u)...), append(spGrad, make([]float32, u*w)...)
			if u > 0 {
				if err := be.DownloadI32(spRows, rows.Slice(0, u)); err != nil {
					return err
				}
				if err := be.Download(spGrad, grad.Slice(0, u*w)); err != nil {
					return err
				}
			}
		}
		var allRows []int32
		var all []float32
		timed(func() {
			allRows = cl.GatherI32(spRows)
			all = cl.GatherF32(spGrad)
		})
		clear(unionSlot)
		unionRows = unionRows[:0]
		for _, r := range allRows {
			if _, ok := unionSlot[r]; !ok {
				unionSlot[r] = 0
				unionRows = append(unionRows, r)
			}
		}
		slices.Sort(unionRows)
		for i, r := range unionRows {
			unionSlot[r] = int32(i)
		}
		u := len(unionRows)
		unionGrad = append(unionGrad[:0], make([]float32, u*w)...)
		for i, r := range allRows {
			dst := unionGrad[int(unionSlot[r])*w:][:w]
			for e, v := range all[i*w : (i+1)*w] {
				dst[e] += v
			}
		}
		if unionRowBuf == nil || unionRowBuf.Len() < max(u, 1) {
			if unionRowBuf != nil {
				unionRowBuf.Free()
				unionGradBuf.Free()
			}
			unionRowBuf, unionGradBuf = be.AllocI32(max(u, cfg.Batch*order)), be.Alloc(max(u, cfg.Batch*order)*w)
		}
		be.UploadI32(unionCntBuf, []int32{int32(u)})
		if u > 0 {
			be.UploadI32(unionRowBuf.Slice(0, u), unionRows)
			be.Upload(unionGradBuf.Slice(0, u*w), unionGrad)
		}
		m.sparseAdamStep(unionRowBuf.Slice(0, u), unionCntBuf, unionGradBuf.Slice(0, u*w), adamM, adamV, step)
		return nil
	}
	// A sharded table's step: this process's compact rows go to their
	// owners, which sum them in process order (as sparseStep does) and
	// apply SparseAdam to their rows; the layers take dense Adam.
	shardStep := func(touched bool, step compute.AdamStep) error {
		w := m.width
		spGrad = spGrad[:0]
		if touched {
			_, count, grad := m.SparseGrad()
			if err := be.DownloadI32(spCount, count); err != nil {
				return err
			}
			u := int(spCount[0])
			if u != len(m.sh.uniq) {
				return fmt.Errorf("nn: the step touched %d rows, its fetch %d", u, len(m.sh.uniq))
			}
			spGrad = append(spGrad, make([]float32, u*w)...)
			if u > 0 {
				if err := be.Download(spGrad, grad.Slice(0, u*w)); err != nil {
					return err
				}
			}
		}
		timed(func() { m.sh.push(be, w, spGrad, step) })
		t, n := m.table.Len(), m.params.Len()
		p, g := m.DenseParams()
		be.Adam(p, g, adamM.Slice(t, n-t), adamV.Slice(t, n-t), step)
		return nil
	}

	// The legacy order shuffles a permutation of all T cells on every
	// process; a keyed order (cfg.Order) places each process's own cells
	// by their positions, in O(L) memory.
	var perm []int
	localOrd := make([]int32, L)
	if cfg.Order == nil {
		perm = make([]int, T)
		for i := range perm {
			perm[i] = i
		}
	}
	local := func(p int) int {
		for _, s := range d.Owned {
			if p >= s.Global && p < s.Global+s.N {
				return s.Local + p - s.Global
			}
		}
		return -1
	}
	stepLo := make([]int, steps+1)
	sqHost := make([]float32, steps)
	adam := compute.AdamStep{LR: cfg.LR, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, L2: cfg.L2}
	res.BestValMSE = math.Inf(1)
	ms := []float64{train.MeanSquare() * float64(L)}
	cl.SumF64(ms)
	msq := ms[0] / float64(T)
	valT := float64(d.ValGlobal)
	var gsumHost []float32
	if cfg.ValGradSum != nil {
		gsumHost = make([]float32, cfg.ValGradSum.Len())
	}
	first := 1
	if r := cfg.Resume; r != nil {
		if err := resume(m, r, 0, nil, adamM, adamV, best); err != nil {
			return res, err
		}
		adam.T, res, first = r.continued(cfg)
	}
	for k := first; k <= cfg.Epochs; k++ {
		start := time.Now()
		// This process's cells of each step, in the global order.
		pos := 0
		if cfg.Order != nil {
			// The positions of this process's cells (< T ≤ MaxInt32),
			// sorted, then each replaced by its cell's local number
			// (Cell inverts Position): the order in 4 bytes a cell.
			o := cfg.Order(k)
			for _, sp := range d.Owned {
				for i := 0; i < sp.N; i++ {
					localOrd[sp.Local+i] = int32(o.Position(sp.Global + i))
				}
			}
			slices.Sort(localOrd)
			s := 0
			for i, p := range localOrd {
				for ; s <= int(p)/cfg.Batch; s++ {
					stepLo[s] = pos
				}
				pos++
				localOrd[i] = int32(local(o.Cell(int(p))))
			}
			for ; s < steps; s++ {
				stepLo[s] = pos
			}
		} else {
			if cfg.Shuffle != nil {
				cfg.Shuffle.Shuffle(T, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			}
			for s := 0; s < steps; s++ {
				stepLo[s] = pos
				for _, p := range perm[s*cfg.Batch : min((s+1)*cfg.Batch, T)] {
					if l := local(p); l >= 0 {
						localOrd[pos] = int32(l)
						pos++
					}
				}
			}
		}
		stepLo[steps] = pos
		if L > 0 && !perStep {
			fill(localOrd, 0)
			be.UploadI32(shufRows.Slice(0, L*order), hostRows[:L*order])
			be.Upload(shufVals.Slice(0, L), hostVals[:L])
		}
		for s := 0; s < steps; s++ {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			lo, hi := stepLo[s], stepLo[s+1]
			gb := min((s+1)*cfg.Batch, T) - s*cfg.Batch
			at := lo // the step's first cell in the buffers
			if perStep {
				fill(localOrd[lo:hi], 0)
				at = 0
			}
			if hi > lo {
				rows, y := shufRows.Slice(at*order, (hi-lo)*order), shufVals.Slice(at, hi-lo)
				dl := delta.Slice(0, hi-lo)
				m.ForwardMSE(rows, y, dl, sq.Slice(s, 1), float32(2/float64(gb)))
				if sparseAdam {
					m.BackwardSparse(rows, dl)
				} else {
					m.Backward(rows, dl, false)
				}
			} else {
				m.Skip()          // a sharded table: serve the others' rows
				be.Fill(dense, 0) // SparseAdam: the table's part is not read
				if !sparseAdam {
					be.Fill(m.grads, 0)
				}
				be.Fill(sq.Slice(s, 1), 0)
			}
			if err := sumDense(); err != nil {
				return res, fmt.Errorf("nn: epoch %d: %w", k, err)
			}
			adam.T++
			if sharded {
				if err := shardStep(hi > lo, adam); err != nil {
					return res, fmt.Errorf("nn: epoch %d: %w", k, err)
				}
				continue
			}
			if sparseAdam {
				if err := sparseStep(hi > lo, adam); err != nil {
					return res, fmt.Errorf("nn: epoch %d: %w", k, err)
				}
				continue
			}
			if exchange == "sparse" {
				if err := sumTable(hostRows[at*order : (at+hi-lo)*order]); err != nil {
					return res, fmt.Errorf("nn: epoch %d: %w", k, err)
				}
			}
			be.Adam(m.params, m.grads, adamM, adamV, adam)
		}
		if err := be.Download(sqHost, sq); err != nil {
			return res, fmt.Errorf("nn: epoch %d: %w", k, err)
		}
		// Each step's squared error summed over the processes, and the
		// validation sums, in one exchange.
		sums := make([]float64, steps+2+len(gsumHost))
		for s, v := range sqHost {
			sums[s] = float64(v)
		}
		var localVal float64
		var err error
		if val.Len() > 0 || sharded {
			if localVal, err = m.evaluate(val, cfg.ValGradSum); err != nil {
				return res, fmt.Errorf("nn: epoch %d: %w", k, err)
			}
			if val.Len() > 0 {
				sums[steps] = localVal * float64(val.Len())
			}
		} else if cfg.ValGradSum != nil {
			be.Fill(cfg.ValGradSum, 0)
		}
		if gsumHost != nil {
			if err := be.Download(gsumHost, cfg.ValGradSum); err != nil {
				return res, fmt.Errorf("nn: epoch %d: %w", k, err)
			}
			for i, v := range gsumHost {
				sums[steps+2+i] = float64(v)
			}
		}
		timed(func() { cl.SumF64(sums) })
		if gsumHost != nil {
			for i := range gsumHost {
				gsumHost[i] = float32(sums[steps+2+i])
			}
			be.Upload(cfg.ValGradSum, gsumHost)
		}
		ep := Epoch{N: k}
		for s := 0; s < steps; s++ {
			ep.TrainMSE += sums[s] / float64(min((s+1)*cfg.Batch, T)-s*cfg.Batch)
		}
		ep.TrainMSE /= float64(steps)
		ep.ValMSE = sums[steps] / valT
		if k == 1 {
			err = divergence(ep, ep, msq)
		} else {
			err = divergence(ep, res.Epochs[0], msq)
		}
		if err != nil {
			return res, err
		}
		if ep.ValMSE < res.BestValMSE {
			ep.Best = true
			res.BestEpoch, res.BestValMSE = k, ep.ValMSE
			be.Copy(best, m.params)
			if sharded {
				be.Copy(m.sh.best, m.sh.own)
			}
		}
		ep.Seconds = time.Since(start).Seconds()
		res.Epochs = append(res.Epochs, ep)
		if cfg.AfterEpoch != nil {
			if err := cfg.AfterEpoch(ep); err != nil {
				return res, err
			}
		}
		if cfg.Save != nil {
			st, err := state(m, k, adam.T, nil, adamM, adamV, best, res)
			if err != nil {
				return res, err
			}
			if err := cfg.Save(st); err != nil {
				return res, err
			}
		}
		if k-res.BestEpoch >= cfg.Patience {
			break
		}
	}
	be.Copy(m.params, best)
	if sharded {
		be.Copy(m.sh.own, m.sh.best)
	}
	return res, be.Sync()
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
