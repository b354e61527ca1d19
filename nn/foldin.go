package nn

// Fold-in: new entities added to a trained Net (Grow) and trained with
// everything else frozen (TrainRows). Issue 34.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/dainx/dainx/compute"
)

// InitStd returns the standard deviation of the N(0, std²) embedding rows
// a Net of the given kind is initialised with: 1 for the MLP and CoSTCo
// (PyTorch's nn.Embedding), PairwiseInitStd for the pairwise kinds.
func InitStd(kind string) float64 {
	if PairwiseKind(kind) {
		return PairwiseInitStd
	}
	return 1
}

// Grow returns a new Net on m's backend, of m's kind, width and layers,
// whose modes have the sizes dims (each at least m's) and the given batch
// capacity: mode n's first Iₙ rows and every Linear layer are m's, copied
// bit for bit; the rows of the new entities Iₙ…dims[n]−1 are drawn from
// rng as the constructors draw a table, N(0, InitStd(kind)²), mode after
// mode, row after row. m is not changed. It returns an error for dims of
// another order or a mode smaller than m's, too many rows for int32, or
// the backend's error downloading m's parameters; a sharded m cannot grow.
func (m *Net) Grow(dims []int, capacity int, rng *rand.Rand) (*Net, error) {
	if m.sh != nil {
		return nil, fmt.Errorf("nn: Grow: the table is sharded")
	}
	if len(dims) != len(m.dims) {
		return nil, fmt.Errorf("nn: Grow: %d modes, the net has %d", len(dims), len(m.dims))
	}
	rows := 0
	for n, d := range dims {
		if d < m.dims[n] {
			return nil, fmt.Errorf("nn: Grow: mode %d of size %d, the net's has %d (a mode cannot shrink)", n+1, d, m.dims[n])
		}
		if rows += d; rows > math.MaxInt32 {
			return nil, fmt.Errorf("nn: Grow: %d embedding rows over all modes do not fit int32", rows)
		}
	}
	old, err := m.HostParams()
	if err != nil {
		return nil, err
	}
	E := m.width
	oldTable := m.table.Len()
	params := make([]float32, 0, rows*E+len(old)-oldTable)
	std := InitStd(m.kind)
	for n, d := range dims {
		lo := int(m.offsets[n]) * E
		params = append(params, old[lo:lo+m.dims[n]*E]...)
		for i := m.dims[n] * E; i < d*E; i++ {
			params = append(params, float32(rng.NormFloat64()*std))
		}
	}
	params = append(params, old[oldTable:]...)
	return NewNetFromParams(m.be, m.kind, dims, E, m.layout, m.Layers(), capacity, params)
}

// TrainRows fits some rows of m's embedding table to train and leaves
// everything else as it is, bit for bit: the rows trainable says no to
// and every Linear layer. It is Train's loop (shuffled mini-batches of the
// batch-mean MSE, a validation pass after every epoch, early stopping
// after Patience epochs without a better validation MSE, the best epoch's
// rows kept, the divergence bounds) with SparseAdam over the trainable
// rows a step's batch touched as the only update: each step's work and
// memory traffic are O(Batch·N·E), whatever the size of the table (the
// moments are allocated once, as large as the table; rows never listed
// keep zero moments and their values).
//
// trainable is asked once per distinct global row of train. val may be
// nil or empty: then every epoch runs (no early stopping) and the last
// epoch's rows are kept; the epochs' ValMSE are NaN. cfg.Epochs, Batch,
// Patience, LR, L2, Shuffle (the order of the cells, shuffled anew every
// epoch; nil keeps the order of train) and AfterEpoch are used; the other
// fields are not.
func TrainRows(ctx context.Context, m *Net, train, val *Set, trainable func(row int32) bool, cfg TrainConfig) (Result, error) {
	var res Result
	if err := checkTrainConfig(m, cfg); err != nil {
		return res, err
	}
	if m.sh != nil {
		return res, fmt.Errorf("nn: TrainRows on a sharded table")
	}
	T := train.Len()
	if T == 0 {
		return res, fmt.Errorf("nn: no training cells")
	}
	if T > math.MaxInt32 {
		return res, fmt.Errorf("nn: %d training cells; at most %d can be trained on", T, math.MaxInt32)
	}
	be, order, E := m.be, m.Order(), m.width
	hasVal := val != nil && val.Len() > 0

	// The trainable rows the training cells touch: the only rows a step
	// can change, and those the best epoch's copy holds.
	isTrain := map[int32]bool{}
	var touched []int32
	for _, r := range train.rows {
		if _, seen := isTrain[r]; seen {
			continue
		}
		ok := trainable(r)
		isTrain[r] = ok
		if ok {
			touched = append(touched, r)
		}
	}
	slices.Sort(touched)
	if len(touched) == 0 {
		return res, fmt.Errorf("nn: no training cell touches a trainable row")
	}

	t := m.table.Len()
	adamM, adamV := be.Alloc(t), be.Alloc(t)
	be.Fill(adamM, 0)
	be.Fill(adamV, 0)
	K := cfg.Batch * order
	steps := (T + cfg.Batch - 1) / cfg.Batch
	bRows, bVals, delta, sq := be.AllocI32(K), be.Alloc(cfg.Batch), be.Alloc(cfg.Batch), be.Alloc(steps)
	uRows, uStarts, uPerm, uCount := be.AllocI32(K), be.AllocI32(K+1), be.AllocI32(K), be.AllocI32(1)
	grad := be.Alloc(K * E)
	touchedBuf := be.AllocI32(len(touched))
	be.UploadI32(touchedBuf, touched)
	var best compute.F32 // the best epoch's touched rows (len(touched)×E), once a later epoch changes them
	defer func() {
		for _, b := range []compute.F32{adamM, adamV, bVals, delta, sq, grad, best} {
			if b != nil {
				b.Free()
			}
		}
		for _, b := range []compute.I32{bRows, uRows, uStarts, uPerm, uCount, touchedBuf} {
			b.Free()
		}
	}()
	bestIsCurrent := false
	keepBest := func() {
		if best == nil {
			best = be.Alloc(len(touched) * E)
		}
		be.Gather(best, m.table, touchedBuf, 1, E, compute.ModeMajor)
		bestIsCurrent = false
	}

	perm := make([]int32, T)
	for i := range perm {
		perm[i] = int32(i)
	}
	hostRows, hostVals := make([]int32, K), make([]float32, cfg.Batch)
	// The compact rows of a step, built on the host from its cells (as
	// DistinctRows orders them: by row, then position), trainable ones
	// only.
	type pos struct{ row, k int32 }
	var ps []pos
	hRows, hStarts, hPerm := make([]int32, K), make([]int32, K+1), make([]int32, K)
	hCount := make([]int32, 1)
	sqHost := make([]float32, steps)
	adam := compute.AdamStep{LR: cfg.LR, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, L2: cfg.L2}
	res.BestValMSE = math.Inf(1)
	ms := train.MeanSquare()
	for k := 1; k <= cfg.Epochs; k++ {
		start := time.Now()
		if cfg.Shuffle != nil {
			cfg.Shuffle.Shuffle(T, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		}
		if bestIsCurrent {
			keepBest()
		}
		for s := 0; s < steps; s++ {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			lo, hi := s*cfg.Batch, min((s+1)*cfg.Batch, T)
			b := hi - lo
			for i, p := range perm[lo:hi] {
				copy(hostRows[i*order:(i+1)*order], train.rows[int(p)*order:(int(p)+1)*order])
				hostVals[i] = train.vals[p]
			}
			rows, y := bRows.Slice(0, b*order), bVals.Slice(0, b)
			be.UploadI32(rows, hostRows[:b*order])
			be.Upload(y, hostVals[:b])
			d := delta.Slice(0, b)
			m.ForwardMSE(rows, y, d, sq.Slice(s, 1), float32(2/float64(b)))
			m.BackwardInput(rows, d)
			adam.T++
			ps = ps[:0]
			for i, r := range hostRows[:b*order] {
				if isTrain[r] {
					ps = append(ps, pos{r, int32(i)})
				}
			}
			if len(ps) == 0 {
				continue
			}
			slices.SortFunc(ps, func(a, c pos) int {
				if a.row != c.row {
					return int(a.row) - int(c.row)
				}
				return int(a.k) - int(c.k)
			})
			u := 0
			for j, p := range ps {
				if j == 0 || p.row != ps[j-1].row {
					hRows[u], hStarts[u] = p.row, int32(j)
					u++
				}
				hPerm[j] = p.k
			}
			hStarts[u] = int32(len(ps))
			hCount[0] = int32(u)
			kb := b * order
			be.UploadI32(uRows.Slice(0, u), hRows[:u])
			be.UploadI32(uStarts.Slice(0, u+1), hStarts[:u+1])
			be.UploadI32(uPerm.Slice(0, len(ps)), hPerm[:len(ps)])
			be.UploadI32(uCount, hCount)
			g := grad.Slice(0, kb*E)
			be.CompactRows(g, m.DAct(0, b), uStarts.Slice(0, kb+1), uPerm.Slice(0, kb), uCount, order, E, m.layout)
			be.SparseAdam(m.table, g, adamM, adamV, uRows.Slice(0, kb), uCount, E, adam)
		}
		if err := be.Download(sqHost, sq); err != nil {
			return res, fmt.Errorf("nn: epoch %d: %w", k, err)
		}
		ep := Epoch{N: k, ValMSE: math.NaN()}
		ep.TrainMSE = meanStepMSE(sqHost, cfg.Batch, T)
		if hasVal {
			var err error
			if ep.ValMSE, err = m.Evaluate(val); err != nil {
				return res, fmt.Errorf("nn: epoch %d: %w", k, err)
			}
		}
		first := ep
		if k > 1 {
			first = res.Epochs[0]
		}
		chk := ep
		if !hasVal {
			chk.ValMSE = 0
		}
		if err := divergence(chk, first, ms); err != nil {
			return res, err
		}
		if !hasVal || ep.ValMSE < res.BestValMSE {
			ep.Best = true
			res.BestEpoch, res.BestValMSE = k, ep.ValMSE
			bestIsCurrent = true
		}
		ep.Seconds = time.Since(start).Seconds()
		res.Epochs = append(res.Epochs, ep)
		if cfg.AfterEpoch != nil {
			if err := cfg.AfterEpoch(ep); err != nil {
				return res, err
			}
		}
		if hasVal && k-res.BestEpoch >= cfg.Patience {
			break
		}
	}
	if !bestIsCurrent && best != nil {
		host := make([]float32, len(touched)*E)
		if err := be.Download(host, best); err != nil {
			return res, err
		}
		// Back into the table run by run of consecutive rows.
		for i := 0; i < len(touched); {
			j := i + 1
			for j < len(touched) && touched[j] == touched[j-1]+1 {
				j++
			}
			be.Upload(m.table.Slice(int(touched[i])*E, (j-i)*E), host[i*E:j*E])
			i = j
		}
	}
	return res, be.Sync()
}
