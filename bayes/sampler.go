package bayes

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/dainx/dainx/cluster"
)

// Hyperprior constants, libFM's defaults (Rendle 2012, MCMC inference):
// the precisions λ and α have Gamma(α0/2, γ0/2) priors (shape, rate), a
// group mean μ has a N(μ0, 1/(β0·λ)) prior given its precision λ.
const (
	prAlpha0 = 1.0 // α0: Gamma shape ×2 of every precision prior
	prGamma0 = 1.0 // γ0: Gamma rate ×2 of every precision prior
	prBeta0  = 1.0 // β0: pseudo-count of the μ prior
	prMu0    = 0.0 // μ0: prior mean of every group mean
)

// params is one state of the model's parameters (one Gibbs sample):
// ŷ(i_1..i_N) = w0 + Σ_n w[n][i_n] + Σ_{n<m} Σ_f v[n][i_n·K+f]·v[m][i_m·K+f].
type params struct {
	k  int
	w0 float64
	w  [][]float64 // w[n] has dims[n] entries
	v  [][]float64 // v[n] is dims[n]×K, row-major
}

// predict returns ŷ for one cell. sum and sq are scratch slices of length K.
// The pairwise term uses Σ_{n<m} a_n a_m = ½[(Σ a_n)² − Σ a_n²] per factor
// (Rendle, "Factorization Machines", ICDM 2010, Lemma 3.1).
func (p *params) predict(cell []int32, sum, sq []float64) float64 {
	y := p.w0
	clear(sum)
	clear(sq)
	k := p.k
	for n, i := range cell {
		y += p.w[n][i]
		row := p.v[n][int(i)*k : int(i)*k+k]
		for f, x := range row {
			sum[f] += x
			sq[f] += x * x
		}
	}
	var pair float64
	for f := range k {
		pair += sum[f]*sum[f] - sq[f]
	}
	return y + 0.5*pair
}

// clone returns a deep copy of p.
func (p *params) clone() *params {
	c := &params{k: p.k, w0: p.w0, w: make([][]float64, len(p.w)), v: make([][]float64, len(p.v))}
	for n := range p.w {
		c.w[n] = append([]float64(nil), p.w[n]...)
		c.v[n] = append([]float64(nil), p.v[n]...)
	}
	return c
}

// eqTerm holds a training cell's residual e = y − ŷ and, while factor f is
// drawn, q = Σ_n v[n][i_n·K+f]; together, the draws touch one cache line
// per cell.
type eqTerm struct{ e, q float64 }

// sampler is the Gibbs sampler's state over the training cells. Spread
// over the processes of cl (FitOn), each holds its own training cells and
// the same parameters: every sum over cells is this process's part, added
// over the processes (cl.SumF64) before the draw it feeds, and every
// process then makes the same draws (the same serial stream, the same
// keyed variates), so the replicas stay equal. On cluster.Local the sums
// are this process's and the chain is Fit's.
type sampler struct {
	params
	cl   cluster.Cluster
	n    int   // order N
	dims []int // mode sizes
	nnz  int   // training cells of this process
	// all is the number of observed training cells over every process;
	// cnt[n][i] the number of entity i's (mode n) over every process.
	all int
	cnt [][]float64
	// New cells (Config.NewCells): the last nnz − real of this process's
	// cells, noise precision alphaN. allNew is their number over every
	// process (0: none anywhere, and every draw is the chain without
	// them); cntN[n][i] entity i's new cells over every process (cnt then
	// counts its observed ones); mid[n][i] the position in cells[n] of
	// entity i's first new cell (ptr[n][i+1] when it has none).
	real, allNew int
	cntN         [][]float64
	mid          [][]int
	alphaN       float64
	newWeight    float64 // α_new = newWeight·α, unless newLearn
	newLearn     bool    // α_new drawn from its own conditional
	// red is the scratch of the per-entity sums, 4·max(dims).
	red []float64
	idx []int32 // training indices, nnz×N row-major
	y   []float64
	eq  []eqTerm    // per training cell
	col [][]float64 // col[n][i] = V_n[i,f] for the factor f being drawn

	// ptr[n][i]..ptr[n][i+1] delimit, in cells[n], the training cells whose
	// mode-n index is i (a CSR index per mode).
	ptr   [][]int
	cells [][]int32
	// split[n] are entity boundaries cutting mode n into parts of about
	// equal cell counts, one per worker.
	split [][]int

	muW, lamW []float64   // per mode
	muV, lamV [][]float64 // per mode and factor
	alpha     float64     // noise precision
	shared    bool        // one (μ, λ) group for all modes (Config.SharedPriors)

	seed    uint64
	rng     *rand.Rand // serial draws
	workers int
	scratch [][]float64 // per worker, 2K floats
}

// newSampler builds the state for training cells (dims, idx, y) and rank
// k; the parameters are initialised as libFM does: w0 = 0, w = 0, V entries
// N(0, initStd²), every μ = 0, every λ = 1, α = 1.
func newSampler(cl cluster.Cluster, dims []int, idx []int32, y []float64, real int, k int, seed uint64, initStd float64, workers int) *sampler {
	n := len(dims)
	nnz := len(y)
	news := []int64{int64(nnz - real)}
	cl.SumI64(news)
	s := &sampler{
		params: params{k: k, w: make([][]float64, n), v: make([][]float64, n)},
		cl:     cl, n: n, dims: dims, nnz: nnz, idx: idx, y: y, cnt: make([][]float64, n),
		eq:  make([]eqTerm, nnz),
		ptr: make([][]int, n), cells: make([][]int32, n), split: make([][]int, n),
		muW: make([]float64, n), lamW: make([]float64, n),
		muV: make([][]float64, n), lamV: make([][]float64, n),
		alpha: 1, seed: seed, real: real, allNew: int(news[0]), alphaN: 1,
		rng:     rand.New(rand.NewPCG(seed, 0x6261_7965_735f_726e)),
		workers: max(workers, 1),
	}
	for m := range n {
		s.w[m] = make([]float64, dims[m])
		s.col = append(s.col, make([]float64, dims[m]))
		s.v[m] = make([]float64, dims[m]*k)
		for j := range s.v[m] {
			s.v[m][j] = initStd * s.rng.NormFloat64()
		}
		s.lamW[m] = 1
		s.muV[m] = make([]float64, k)
		s.lamV[m] = make([]float64, k)
		for f := range k {
			s.lamV[m][f] = 1
		}
		// CSR by counting sort; cells of one entity stay in file order.
		ptr := make([]int, dims[m]+1)
		for c := range nnz {
			ptr[idx[c*n+m]+1]++
		}
		for i := range dims[m] {
			ptr[i+1] += ptr[i]
		}
		pos := append([]int(nil), ptr[:dims[m]]...)
		cells := make([]int32, nnz)
		for c := range nnz {
			i := idx[c*n+m]
			cells[pos[i]] = int32(c)
			pos[i]++
		}
		s.ptr[m], s.cells[m] = ptr, cells
		cnt := make([]int64, dims[m])
		for i := range cnt {
			cnt[i] = int64(ptr[i+1] - ptr[i])
		}
		if s.allNew > 0 {
			// Each entity's cells are in file order: its observed cells,
			// then its new ones.
			mid := make([]int, dims[m])
			cntN := make([]int64, dims[m])
			for i := range mid {
				j := ptr[i]
				for j < ptr[i+1] && int(cells[j]) < real {
					j++
				}
				mid[i] = j
				cntN[i] = int64(ptr[i+1] - j)
				cnt[i] -= cntN[i]
			}
			cl.SumI64(cntN)
			s.mid = append(s.mid, mid)
			s.cntN = append(s.cntN, make([]float64, dims[m]))
			for i, c := range cntN {
				s.cntN[m][i] = float64(c)
			}
		}
		cl.SumI64(cnt)
		s.cnt[m] = make([]float64, dims[m])
		for i, c := range cnt {
			s.cnt[m][i] = float64(c)
		}
		// Worker parts of about equal cell counts.
		sp := []int{0}
		for p := 1; p < s.workers; p++ {
			target := nnz * p / s.workers
			i := sp[len(sp)-1]
			for i < dims[m] && ptr[i] < target {
				i++
			}
			sp = append(sp, i)
		}
		s.split[m] = append(sp, dims[m])
	}
	s.scratch = make([][]float64, s.workers)
	for j := range s.scratch {
		s.scratch[j] = make([]float64, 2*k)
	}
	s.red = make([]float64, 4*max(slices.Max(dims), 1))
	all := []int64{int64(real)}
	cl.SumI64(all)
	s.all = int(all[0])
	return s
}

// sumAll returns x added over the processes.
func (s *sampler) sumAll(x float64) float64 {
	b := []float64{x}
	s.cl.SumF64(b)
	return b[0]
}

// parallelThreshold is the number of training cells below which the
// sampler stays on one goroutine.
const parallelThreshold = 8192

// forParts runs fn(part, lo, hi) over the worker parts of mode m, on
// s.workers goroutines when the tensor is large enough. Each part is a
// range of entities; parts touch disjoint training cells.
func (s *sampler) forParts(m int, fn func(part, lo, hi int)) {
	sp := s.split[m]
	if s.workers == 1 || s.nnz < parallelThreshold {
		fn(0, 0, s.dims[m])
		return
	}
	var wg sync.WaitGroup
	for p := 0; p+1 < len(sp); p++ {
		if sp[p] == sp[p+1] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(p, sp[p], sp[p+1])
		}()
	}
	wg.Wait()
}

// cellBlock is the number of cells per block of forCells: partial sums
// are kept per block and added in block order, so reductions do not
// depend on the number of workers.
const cellBlock = 4096

// forCells runs fn(worker, block, lo, hi) over the blocks [lo, hi) of
// cellBlock cells covering 0..count-1, block b on worker b mod s.workers
// (one goroutine per worker when count is large enough). It returns the
// number of blocks.
func (s *sampler) forCells(count int, fn func(worker, block, lo, hi int)) int {
	blocks := (count + cellBlock - 1) / cellBlock
	run := func(w int) {
		for b := w; b < blocks; b += s.workers {
			fn(w, b, b*cellBlock, min((b+1)*cellBlock, count))
		}
	}
	if s.workers == 1 || count < parallelThreshold {
		for b := range blocks {
			fn(0, b, b*cellBlock, min((b+1)*cellBlock, count))
		}
		return blocks
	}
	var wg sync.WaitGroup
	for w := range min(s.workers, blocks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(w)
		}()
	}
	wg.Wait()
	return blocks
}

// sumBlocks runs forCells with fn returning a block's partial sum and
// returns the partial sums added in block order.
func (s *sampler) sumBlocks(count int, fn func(worker, lo, hi int) float64) float64 {
	parts := make([]float64, (count+cellBlock-1)/cellBlock)
	s.forCells(count, func(w, b, lo, hi int) { parts[b] = fn(w, lo, hi) })
	var t float64
	for _, x := range parts {
		t += x
	}
	return t
}

// refresh recomputes the residuals e = y − ŷ from the parameters (done
// once per sweep so that rounding in the incremental updates cannot
// accumulate) and returns Σ (clamp(ŷ) − y)² over the observed cells,
// clamping ŷ to [lo, hi].
func (s *sampler) refresh(lo, hi float64) float64 {
	return s.sumBlocks(s.nnz, func(w, a, b int) float64 {
		sc := s.scratch[w]
		var sse float64
		for c := a; c < b; c++ {
			p := s.predict(s.idx[c*s.n:(c+1)*s.n], sc[:s.k], sc[s.k:])
			s.eq[c].e = s.y[c] - p
			if c < s.real {
				d := min(max(p, lo), hi) - s.y[c]
				sse += d * d
			}
		}
		return sse
	})
}

// sweep draws every variable once from its full conditional, in libFM's
// order (Rendle 2012): α; w0; per mode (or for all modes, shared) λ_w
// then μ_w; every w;
// per mode (or for all modes, shared) and factor λ_v then μ_v; then factor by factor every V entry.
// It expects e to hold the current residuals and keeps them current.
func (s *sampler) sweep(sweep int) {
	s.drawAlpha()
	s.drawAlphaNew()
	s.drawW0()
	if s.shared {
		lam, mu := s.drawHyper(s.w, 0, 1, s.muW[0])
		for m := range s.n {
			s.lamW[m], s.muW[m] = lam, mu
		}
	} else {
		for m := range s.n {
			s.lamW[m], s.muW[m] = s.drawHyper(s.w[m:m+1], 0, 1, s.muW[m])
		}
	}
	for m := range s.n {
		s.drawWs(sweep, m)
	}
	if s.shared {
		for f := range s.k {
			lam, mu := s.drawHyper(s.v, f, s.k, s.muV[0][f])
			for m := range s.n {
				s.lamV[m][f], s.muV[m][f] = lam, mu
			}
		}
	} else {
		for m := range s.n {
			for f := range s.k {
				s.lamV[m][f], s.muV[m][f] = s.drawHyper(s.v[m:m+1], f, s.k, s.muV[m][f])
			}
		}
	}
	for f := range s.k {
		s.fillQ(f)
		for m := range s.n {
			s.drawVs(sweep, m, f)
		}
	}
}

// drawWs draws every w[m][i]: the sums of their conditionals over this
// process's cells (sumW), added over the processes, then the draws.
// Within a mode the entities' cells are disjoint, so drawing them one
// after another or all from the sums taken before is the same chain.
func (s *sampler) drawWs(sweep, m int) {
	d := s.dims[m]
	t, tn := s.red[:d], s.red[d:2*d]
	s.forParts(m, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			t[i], tn[i] = s.sumW(m, i)
		}
	})
	if s.allNew > 0 {
		s.cl.SumF64(s.red[:2*d])
	} else {
		s.cl.SumF64(t)
	}
	s.forParts(m, func(_, lo, hi int) {
		forDraws(lo, hi, func(p int) uint64 { return drawKey(s.seed, sweep, 0, m, 0, p) },
			func(i int, z float64) { s.drawW(m, i, t[i], tn[i], z) })
	})
}

// drawVs draws every V[m][i,f] as drawWs draws w[m].
func (s *sampler) drawVs(sweep, m, f int) {
	d := s.dims[m]
	t, hh, tn, hhn := s.red[:d], s.red[d:2*d], s.red[2*d:3*d], s.red[3*d:4*d]
	s.forParts(m, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			t[i], hh[i], tn[i], hhn[i] = s.sumV(m, i)
		}
	})
	if s.allNew > 0 {
		s.cl.SumF64(s.red[:4*d])
	} else {
		s.cl.SumF64(s.red[:2*d])
	}
	s.forParts(m, func(_, lo, hi int) {
		forDraws(lo, hi, func(p int) uint64 { return drawKey(s.seed, sweep, 1, m, f, p) },
			func(i int, z float64) { s.drawV(m, i, f, t[i], hh[i], tn[i], hhn[i], z) })
	})
}

// fillQ copies factor f's column of every V_n into col (so that the
// draws of factor f read and write contiguous memory) and sets q[c] =
// Σ_n V_n[i_n,f] for every training cell c.
func (s *sampler) fillQ(f int) {
	for m := range s.n {
		col := s.col[m]
		for i := range col {
			col[i] = s.v[m][i*s.k+f]
		}
	}
	s.forCells(s.nnz, func(_, _, a, b int) {
		for c := a; c < b; c++ {
			var t float64
			for m, i := range s.idx[c*s.n : (c+1)*s.n] {
				t += s.col[m][i]
			}
			s.eq[c].q = t
		}
	})
}

// drawAlpha draws the noise precision from its conditional
// α | rest ~ Gamma((α0 + nnz)/2, (γ0 + Σ_c e_c²)/2) (shape, rate), nnz and
// the sum over the observed cells.
func (s *sampler) drawAlpha() {
	var sse float64
	for _, x := range s.eq[:s.real] {
		sse += x.e * x.e
	}
	sse = s.sumAll(sse)
	s.alpha = gammaRate(s.rng, (prAlpha0+float64(s.all))/2, (prGamma0+sse)/2)
}

// drawAlphaNew sets the new cells' noise precision α_new (when there are
// new cells): newWeight·α, or with newLearn a draw from its conditional
// under its own Gamma(α0/2, γ0/2) prior, α_new | rest ~ Gamma((α0 +
// n_new)/2, (γ0 + Σ_new e_c²)/2), the sum over the new cells.
func (s *sampler) drawAlphaNew() {
	if s.allNew == 0 {
		return
	}
	if !s.newLearn {
		s.alphaN = s.newWeight * s.alpha
		return
	}
	var sse float64
	for _, x := range s.eq[s.real:] {
		sse += x.e * x.e
	}
	sse = s.sumAll(sse)
	s.alphaN = gammaRate(s.rng, (prAlpha0+float64(s.allNew))/2, (prGamma0+sse)/2)
}

// drawW0 draws the global bias under a flat prior (libFM's default
// regularisation 0 for w0): w0 | rest ~ N(Σ_c (e_c + w0)/nnz, 1/(α·nnz)).
//
// With new cells, each cell's term is weighted by its precision:
// w0 | rest ~ N(Σ_c a_c (e_c + w0) / Σ_c a_c, 1/Σ_c a_c), a_c = α for an
// observed cell, α_new for a new one.
func (s *sampler) drawW0() {
	var t float64
	for _, x := range s.eq[:s.real] {
		t += x.e + s.w0
	}
	var nw float64
	if s.allNew == 0 {
		t = s.sumAll(t)
		prec := s.alpha * float64(s.all)
		nw = t/float64(s.all) + s.rng.NormFloat64()/math.Sqrt(prec)
	} else {
		var tn float64
		for _, x := range s.eq[s.real:] {
			tn += x.e + s.w0
		}
		b := []float64{t, tn}
		s.cl.SumF64(b)
		prec := s.alpha*float64(s.all) + s.alphaN*float64(s.allNew)
		nw = (s.alpha*b[0]+s.alphaN*b[1])/prec + s.rng.NormFloat64()/math.Sqrt(prec)
	}
	d := nw - s.w0
	for c := range s.eq {
		s.eq[c].e -= d
	}
	s.w0 = nw
}

// drawHyper draws the (λ, μ) of one parameter group, the values
// θ = x[j·stride+off] of every x in xs, J values in all, from the
// Normal–Gamma conditionals (Rendle 2012, MCMC inference; the scalar case
// of BPMF's Normal–Wishart update, Salakhutdinov & Mnih 2008), λ first
// given the current μ, then μ given the new λ:
//
//	λ | μ, θ ~ Gamma((α0 + J + 1)/2, (γ0 + β0(μ − μ0)² + Σ_j (θ_j − μ)²)/2)
//	μ | λ, θ ~ N((Σ_j θ_j + β0 μ0)/(J + β0), 1/((J + β0) λ))
func (s *sampler) drawHyper(xs [][]float64, off, stride int, mu float64) (lam, newMu float64) {
	ss := prGamma0 + prBeta0*(mu-prMu0)*(mu-prMu0)
	var sum float64
	j := 0
	for _, x := range xs {
		j += len(x) / stride
		for i := off; i < len(x); i += stride {
			d := x[i] - mu
			ss += d * d
			sum += x[i]
		}
	}
	lam = gammaRate(s.rng, (prAlpha0+float64(j)+1)/2, ss/2)
	pj := float64(j) + prBeta0
	newMu = (sum+prBeta0*prMu0)/pj + s.rng.NormFloat64()/math.Sqrt(pj*lam)
	return lam, newMu
}

// sumW returns Σ_c (e_c + w[m][i]) over this process's cells c of entity
// i of mode m: the sum in w[m][i]'s full conditional. With h_c =
// ∂ŷ_c/∂θ (here 1 for every cell c of entity i) and e_c the residual at
// the current θ, the conditional of a parameter θ with prior N(μ, 1/λ) is
// (Rendle 2012, MCMC inference)
//
//	θ | rest ~ N(μ*, 1/λ*),  λ* = α Σ_c h_c² + λ,
//	μ* = (α Σ_c h_c (e_c + θ h_c) + λ μ) / λ*.
//
// tn is the same sum over the entity's new cells (0 without new cells),
// whose terms are weighted by α_new instead of α.
func (s *sampler) sumW(m, i int) (t, tn float64) {
	wi := s.w[m][i]
	lo, mid, hi := s.ptr[m][i], s.ptr[m][i+1], s.ptr[m][i+1]
	if s.allNew > 0 {
		mid = s.mid[m][i]
	}
	for _, c := range s.cells[m][lo:mid] {
		t += s.eq[c].e + wi
	}
	for _, c := range s.cells[m][mid:hi] {
		tn += s.eq[c].e + wi
	}
	return t, tn
}

// drawW sets w[m][i] = μ* + z/√λ* (z a standard normal), t being sumW over
// every process, and updates the residuals of this process's cells of
// entity i.
func (s *sampler) drawW(m, i int, t, tn, z float64) {
	lam := s.lamW[m]
	prec := s.alpha*s.cnt[m][i] + lam
	mean := (s.alpha*t + lam*s.muW[m]) / prec
	if s.allNew > 0 {
		prec = s.alpha*s.cnt[m][i] + s.alphaN*s.cntN[m][i] + lam
		mean = (s.alpha*t + s.alphaN*tn + lam*s.muW[m]) / prec
	}
	nw := mean + z/math.Sqrt(prec)
	d := nw - s.w[m][i]
	for _, c := range s.cells[m][s.ptr[m][i]:s.ptr[m][i+1]] {
		s.eq[c].e -= d
	}
	s.w[m][i] = nw
}

// sumV returns Σ_c h_c (e_c + V[m][i,f]·h_c) and Σ_c h_c² over this
// process's cells c of entity i of mode m, h_c = Σ_{n≠m} V_n[i_n,f] =
// q_c − V[m][i,f]: the sums of V[m][i,f]'s full conditional (see sumW). q
// must hold factor f's sums (fillQ).
// tn and hhn are the same sums over the entity's new cells (0 without
// new cells).
func (s *sampler) sumV(m, i int) (t, hh, tn, hhn float64) {
	vi := s.col[m][i]
	lo, mid, hi := s.ptr[m][i], s.ptr[m][i+1], s.ptr[m][i+1]
	if s.allNew > 0 {
		mid = s.mid[m][i]
	}
	for _, c := range s.cells[m][lo:mid] {
		h := s.eq[c].q - vi
		t += h * (s.eq[c].e + vi*h)
		hh += h * h
	}
	for _, c := range s.cells[m][mid:hi] {
		h := s.eq[c].q - vi
		tn += h * (s.eq[c].e + vi*h)
		hhn += h * h
	}
	return t, hh, tn, hhn
}

// drawV sets V[m][i,f] = μ* + z/√λ*, t and hh being sumV's over every
// process, and updates the residuals e_c −= h_c·Δ and the sums q_c += Δ of
// this process's cells of entity i.
func (s *sampler) drawV(m, i, f int, t, hh, tn, hhn, z float64) {
	lam := s.lamV[m][f]
	prec := s.alpha*hh + lam
	mean := (s.alpha*t + lam*s.muV[m][f]) / prec
	if s.allNew > 0 {
		prec = s.alpha*hh + s.alphaN*hhn + lam
		mean = (s.alpha*t + s.alphaN*tn + lam*s.muV[m][f]) / prec
	}
	vi := s.col[m][i]
	nv := mean + z/math.Sqrt(prec)
	d := nv - vi
	for _, c := range s.cells[m][s.ptr[m][i]:s.ptr[m][i+1]] {
		h := s.eq[c].q - vi
		s.eq[c].e -= h * d
		s.eq[c].q += d
	}
	s.v[m][i*s.k+f] = nv
	s.col[m][i] = nv
}

// hyper is one Gibbs sample's noise precision α and prior groups: the
// mean and precision of the biases of each mode (muW, lamW: N values) and
// of each factor of each mode (muV, lamV: N×K); with shared priors every
// mode holds the same values.
type hyper struct {
	alpha     float64
	muW, lamW []float64
	muV, lamV [][]float64
}

// hyperClone returns a copy of s's current α and priors.
func (s *sampler) hyperClone() *hyper {
	h := &hyper{alpha: s.alpha, muW: append([]float64(nil), s.muW...), lamW: append([]float64(nil), s.lamW...),
		muV: make([][]float64, len(s.muV)), lamV: make([][]float64, len(s.lamV))}
	for m := range s.muV {
		h.muV[m] = append([]float64(nil), s.muV[m]...)
		h.lamV[m] = append([]float64(nil), s.lamV[m]...)
	}
	return h
}
