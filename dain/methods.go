package dain

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// AugStats reports how an augmentation was made.
type AugStats struct {
	Sample                              float64 // seconds drawing cells
	Predict                             float64 // seconds predicting values (the predictor's training excluded)
	Draws, RejectObserved, RejectRepeat int
}

// Augment makes n new cells with c's method (see Methods and Pipeline)
// and returns them with their values:
//
//   - dain: entities drawn from c's entity importance, values from c's
//     predictor (Algorithm 1, lines 6–15);
//   - random: entities drawn uniformly over each mode, values from c's
//     predictor (Random+MLP, Random+CoSTCo);
//   - duplication: copies of distinct random training cells (cycling when n
//     exceeds |train|);
//   - entity-replacement: a random training cell with one index replaced by
//     one of its entity's 10 nearest neighbours in Θ's embedding space
//     (Euclidean), keeping the value.
//
// With c.Values oracle, the cells are valued by the tensor's generator
// instead (Experiment.OracleValues), duplication's copies excepted.
// New cells of dain, random and entity-replacement are never observed (in
// train ∪ validation) nor repeated. The cells of a smaller n are a prefix of
// those of a larger one. Every stage c uses is computed once per
// experiment. It returns an error if c is invalid.
func (e *Experiment) Augment(ctx context.Context, c Config, n int) (*tensor.COO, AugStats, error) {
	var st AugStats
	if err := c.Validate(); err != nil {
		return nil, st, err
	}
	if n == 0 {
		return &tensor.COO{Dims: append([]int(nil), e.x.Dims...)}, st, nil
	}
	c, err := e.resolve(ctx, c)
	if err != nil {
		return nil, st, err
	}
	p := PipelineOf(c)
	if c.ValuesUsed() == ValuesOracle {
		aug, err := e.oracleCells(ctx, p, n, &st)
		return aug, st, err
	}
	aug, err := p.Cells.cells(ctx, e, n, &st)
	if err != nil {
		return nil, st, err
	}
	if p.Values != nil && p.Values.Model.Kind == PredictorEnsemble {
		if _, err := e.ensemble(ctx); err != nil {
			return nil, st, err
		}
		t0 := time.Now()
		if aug.Val, err = e.predictEnsemble(ctx, aug.Idx); err != nil {
			return nil, st, err
		}
		st.Predict = time.Since(t0).Seconds()
	} else if p.Values != nil && p.Values.Model.Kind == FinalBayesFM {
		m, err := e.bayesPredictor(ctx)
		if err != nil {
			return nil, st, err
		}
		t0 := time.Now()
		q := &tensor.COO{Dims: aug.Dims, Idx: aug.Idx, Val: make([]float64, len(aug.Idx)/len(aug.Dims))}
		if aug.Val, err = m.Predict(q); err != nil {
			return nil, st, fmt.Errorf("dain: predicting values with bayes-fm: %w", err)
		}
		st.Predict = time.Since(t0).Seconds()
	} else if p.Values != nil {
		t, err := e.model(ctx, p.Values.Model)
		if err != nil {
			return nil, st, err
		}
		t0 := time.Now()
		if aug.Val, err = predict(t.net, aug.Idx); err != nil {
			return nil, st, err
		}
		st.Predict = time.Since(t0).Seconds()
	}
	return aug, st, nil
}

// predict returns m's predictions for cells (K×N entity indices), each
// rounded to the shortest decimal of its float32.
func predict(m *nn.Net, cells []int32) ([]float64, error) {
	order := m.Order()
	n := len(cells) / order
	out := make([]float64, n)
	// In chunks of predictChunk cells, so that the cells' copy on the
	// backend and the float32 predictions do not grow with the cells; a
	// sharded table's processes run as many chunks as the one with most.
	chunks := (n + predictChunk - 1) / predictChunk
	all := m.Batches(chunks)
	zero := make([]float64, min(n, predictChunk))
	for c := 0; c < all; c++ {
		lo, hi := min(c*predictChunk, n), min((c+1)*predictChunk, n)
		s := m.NewSet(cells[lo*order:hi*order], zero[:hi-lo])
		p, err := m.Predict(s)
		s.Free()
		if err != nil {
			return nil, fmt.Errorf("dain: predicting values: %w", err)
		}
		for i, v := range p {
			out[lo+i] = shortest(v)
		}
	}
	return out, nil
}

// predictChunk is the number of cells predict sends to the backend at
// once.
var predictChunk = 1 << 20

// shortest returns the float64 nearest to the shortest decimal that reads
// back as p, so a float32 prediction prints as "2.2926" rather than
// "2.2925999164581299".
func shortest(p float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(p), 'g', -1, 32), 64)
	return v
}

// neighbours is the number of nearest entities entity replacement picks
// from (paper §5.1.2).
const neighbours = 10

// replace implements entity replacement with the neighbour lists nbr (of
// the entities of this process's training cells): each new cell is a
// uniformly drawn training cell whose index in a uniformly drawn mode is
// replaced by one of the entities nearest to it, keeping its value;
// observed and repeated results are redrawn, at most 100·n + 10⁵ times.
// Spread over processes (drawRounds), each candidate's process is drawn by
// the processes' numbers of training cells; with one process this is one
// loop over one stream and makes one process's cells.
func (e *Experiment) replace(ctx context.Context, nbr [][][]int32, n int, st *AugStats) (*tensor.COO, error) {
	order := e.x.Order()
	t0 := time.Now()
	cum := make([]float64, e.sp.cl.Size())
	for p, k := range spread.Counts(e.sp.cl, e.Train.NNZ()) {
		cum[p] = float64(k)
		if p > 0 {
			cum[p] += cum[p-1]
		}
	}
	r := rng(e.cfg.Seed, rankStream(streamReplace, e.sp.cl.Rank()))
	aug, err := e.drawRounds(ctx, candidates{
		name: "entity replacement", cum: cum, shares: streamReplaceShares, extra: 2, observedIsRepeat: true,
		draw: func(rec []int32) ([]int32, bool) {
			z := r.IntN(e.Train.NNZ())
			rec = append(rec, e.Train.Cell(z)...)
			cell := rec[len(rec)-order:]
			mode := r.IntN(order)
			cand := nbr[mode][cell[mode]]
			if len(cand) == 0 {
				return rec[:len(rec)-order], false
			}
			cell[mode] = cand[r.IntN(len(cand))]
			return append(rec, spread.F64Bits(e.Train.Val[z:z+1])...), true
		},
	}, n, st)
	st.Sample = time.Since(t0).Seconds()
	return aug, err
}

// nearestFloats bounds the distances nearest holds at once: 2^23 floats
// (32 MiB) on the device and as many on the host (a variable for tests).
var nearestFloats = 1 << 23

// nearest returns, for every mode n and every entity i of it that occurs in
// train, the (up to) 10 other entities of mode n nearest to i in m's
// embedding table by Euclidean distance (ties broken by index). Distances
// come from the backend's GEMM: ‖a−b‖² = ‖a‖² + ‖b‖² − 2a·b.
func nearest(m *nn.Net, train *tensor.COO) ([][][]int32, error) {
	be, order, width := m.Backend(), m.Order(), m.Width()
	table, _ := m.Table()
	host := make([]float32, table.Len())
	if err := be.Download(host, table); err != nil {
		return nil, fmt.Errorf("dain: %w", err)
	}
	out := make([][][]int32, order)
	for n, d := range m.Dims() {
		out[n] = make([][]int32, d)
		used := make([]bool, d)
		var queries []int32
		for k := n; k < len(train.Idx); k += order {
			if i := train.Idx[k]; !used[i] {
				used[i] = true
				queries = append(queries, i)
			}
		}
		sort.Slice(queries, func(a, b int) bool { return queries[a] < queries[b] })
		off := int(m.Offsets()[n])
		emb := host[off*width : (off+d)*width]
		norm := make([]float64, d)
		for i := range norm {
			for _, v := range emb[i*width : (i+1)*width] {
				norm[i] += float64(v) * float64(v)
			}
		}
		all, zero := be.Alloc(d*width), be.Alloc(d)
		be.Upload(all, emb)
		// Queries a pass: up to 256, fewer for a large mode, so that the
		// pass's distances (q·d, on the device and on the host) stay
		// within nearestFloats each.
		q := max(1, min(256, nearestFloats/max(d, 1)))
		qbuf, dots := be.Alloc(q*width), be.Alloc(q*d)
		qhost, dhost := make([]float32, q*width), make([]float32, q*d)
		for lo := 0; lo < len(queries); lo += q {
			hi := min(lo+q, len(queries))
			for j, i := range queries[lo:hi] {
				copy(qhost[j*width:(j+1)*width], emb[int(i)*width:(int(i)+1)*width])
			}
			nq := hi - lo
			be.Upload(qbuf.Slice(0, nq*width), qhost[:nq*width])
			// dots[j, i] = query_j · entity_i
			be.LinearForward(dots.Slice(0, nq*d), qbuf.Slice(0, nq*width), all, zero, width, d, false)
			if err := be.Download(dhost[:nq*d], dots.Slice(0, nq*d)); err != nil {
				return nil, fmt.Errorf("dain: %w", err)
			}
			for j, i := range queries[lo:hi] {
				out[n][i] = topK(dhost[j*d:(j+1)*d], norm, int(i), neighbours)
			}
		}
		for _, b := range []compute.F32{all, zero, qbuf, dots} {
			b.Free()
		}
	}
	return out, nil
}

// topK returns the k entities j ≠ self with the smallest ‖e_j‖² − 2·dot_j
// (the squared distance to self up to the constant ‖e_self‖²).
func topK(dots []float32, norm []float64, self, k int) []int32 {
	type cand struct {
		d float64
		j int32
	}
	best := make([]cand, 0, k+1)
	for j, dot := range dots {
		if j == self {
			continue
		}
		dist := norm[j] - 2*float64(dot)
		if len(best) == k && !(dist < best[k-1].d) {
			continue
		}
		pos := sort.Search(len(best), func(p int) bool { return best[p].d > dist })
		best = append(best, cand{})
		copy(best[pos+1:], best[pos:])
		best[pos] = cand{dist, int32(j)}
		if len(best) > k {
			best = best[:k]
		}
	}
	out := make([]int32, len(best))
	for i, b := range best {
		out[i] = b.j
	}
	return out
}
