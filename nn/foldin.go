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

	isTrain, touched := trainableRows(train, trainable)
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
	up := newRowUpdate(be, K, E, isTrain)
	defer up.free()
	touchedBuf := be.AllocI32(len(touched))
	be.UploadI32(touchedBuf, touched)
	var best compute.F32 // the best epoch's touched rows (len(touched)×E), once a later epoch changes them
	defer func() {
		for _, b := range []compute.F32{adamM, adamV, bVals, delta, sq, best} {
			if b != nil {
				b.Free()
			}
		}
		for _, b := range []compute.I32{bRows, touchedBuf} {
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
			up.step(m, hostRows[:b*order], b, adamM, adamV, adam)
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
		if err := m.restoreRows(best, touched); err != nil {
			return res, err
		}
	}
	return res, be.Sync()
}

// trainableRows returns, for each distinct global row of train, whether
// trainable says yes (asked once a row), and the rows it says yes to in
// increasing order: the only rows TrainRows's steps can change, and those
// the best epoch's copy holds.
func trainableRows(train *Set, trainable func(row int32) bool) (map[int32]bool, []int32) {
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
	return isTrain, touched
}

// restoreRows writes best (len(rows)×E values, rows' in order) back into
// the table's rows rows (increasing), run by run of consecutive rows.
func (m *Net) restoreRows(best compute.F32, rows []int32) error {
	E := m.width
	host := make([]float32, len(rows)*E)
	if err := m.be.Download(host, best); err != nil {
		return err
	}
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && rows[j] == rows[j-1]+1 {
			j++
		}
		m.be.Upload(m.table.Slice(int(rows[i])*E, (j-i)*E), host[i*E:j*E])
		i = j
	}
	return nil
}

// rowUpdate is TrainRows's update of a step: the compact gradient rows of
// the trainable rows the step's cells touched, built on the host (as
// DistinctRows orders them: by row, then position), and SparseAdam over
// them. Its buffers hold a batch of K = Batch·N row positions of width E.
type rowUpdate struct {
	isTrain                       map[int32]bool
	ps                            []rowPos
	hRows, hStarts, hPerm, hCount []int32
	uRows, uStarts, uPerm, uCount compute.I32
	grad                          compute.F32
}

// rowPos is a row a batch position k names.
type rowPos struct{ row, k int32 }

func newRowUpdate(be compute.Backend, K, E int, isTrain map[int32]bool) *rowUpdate {
	return &rowUpdate{isTrain: isTrain,
		hRows: make([]int32, K), hStarts: make([]int32, K+1), hPerm: make([]int32, K), hCount: make([]int32, 1),
		uRows: be.AllocI32(K), uStarts: be.AllocI32(K + 1), uPerm: be.AllocI32(K), uCount: be.AllocI32(1),
		grad: be.Alloc(K * E)}
}

func (u *rowUpdate) free() {
	for _, b := range []compute.I32{u.uRows, u.uStarts, u.uPerm, u.uCount} {
		b.Free()
	}
	u.grad.Free()
}

// step applies SparseAdam step adam (moments adamM, adamV, laid out like
// the table) to the trainable rows of the b cells whose global rows
// hostRows (b×N) holds, from the gradient of m's last BackwardInput.
func (u *rowUpdate) step(m *Net, hostRows []int32, b int, adamM, adamV compute.F32, adam compute.AdamStep) {
	be, order, E := m.be, m.Order(), m.width
	u.ps = u.ps[:0]
	for i, r := range hostRows {
		if u.isTrain[r] {
			u.ps = append(u.ps, rowPos{r, int32(i)})
		}
	}
	ps := u.ps
	if len(ps) == 0 {
		return
	}
	slices.SortFunc(ps, func(a, c rowPos) int {
		if a.row != c.row {
			return int(a.row) - int(c.row)
		}
		return int(a.k) - int(c.k)
	})
	n := 0
	for j, p := range ps {
		if j == 0 || p.row != ps[j-1].row {
			u.hRows[n], u.hStarts[n] = p.row, int32(j)
			n++
		}
		u.hPerm[j] = p.k
	}
	u.hStarts[n] = int32(len(ps))
	u.hCount[0] = int32(n)
	kb := b * order
	be.UploadI32(u.uRows.Slice(0, n), u.hRows[:n])
	be.UploadI32(u.uStarts.Slice(0, n+1), u.hStarts[:n+1])
	be.UploadI32(u.uPerm.Slice(0, len(ps)), u.hPerm[:len(ps)])
	be.UploadI32(u.uCount, u.hCount)
	g := u.grad.Slice(0, kb*E)
	be.CompactRows(g, m.DAct(0, b), u.uStarts.Slice(0, kb+1), u.uPerm.Slice(0, kb), u.uCount, order, E, m.layout)
	be.SparseAdam(m.table, g, adamM, adamV, u.uRows.Slice(0, kb), u.uCount, E, adam)
}
