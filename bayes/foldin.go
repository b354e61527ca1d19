package bayes

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/dainx/dainx/tensor"
)

// FoldInConfig sets up FoldIn.
type FoldInConfig struct {
	// Sweeps ≥ 1 is the number of Gibbs sweeps over the new entities per
	// kept sample; the sample keeps the last draw. 0 means
	// DefaultFoldInSweeps.
	Sweeps int
	// Seed determines the draws: the same model, cells, Sweeps and Seed
	// give the same model bit for bit.
	Seed uint64
}

// DefaultFoldInSweeps is FoldIn's default number of sweeps per sample.
const DefaultFoldInSweeps = 20

// FoldIn returns a model over the mode sizes cells.Dims (each at least
// m's) whose entities beyond m.Dims — the new ones — are drawn by Gibbs
// sampling from their full conditionals given cells, separately in each
// of m's samples: every other parameter, α and the priors are held at
// that sample's values (the posterior of the new entities' parameters
// given the model, as a chain on all the cells would draw them if the old
// entities did not move). Cells of known entities only add nothing; a new
// entity without cells is drawn from its prior. Known cells' predictions
// are those of m bit for bit (the old parameters are copied, not
// redrawn); the clamp range stays m's. Cost: O(Sweeps · S · cells · N ·
// K), spread over GOMAXPROCS goroutines (one sample each at a time; the
// result does not depend on their number). Memory: a new model (m's size
// grown to cells.Dims).
//
// It returns an error when m holds no α and priors (HasPriors), cells
// has another order, a mode size below m's, or an index outside its
// Dims, a value is not finite, or ctx is done.
func (m *Model) FoldIn(ctx context.Context, cells *tensor.COO, cfg FoldInConfig) (*Model, error) {
	if !m.HasPriors() {
		return nil, fmt.Errorf("bayes: fold-in needs the samples' noise precision and priors, which this model does not hold")
	}
	n, k := len(m.Dims), m.Rank
	if len(cells.Dims) != n {
		return nil, fmt.Errorf("bayes: fold-in cells of order %d, the model's is %d", len(cells.Dims), n)
	}
	for d := range n {
		if cells.Dims[d] < m.Dims[d] {
			return nil, fmt.Errorf("bayes: fold-in cells' mode %d has size %d, below the model's %d", d+1, cells.Dims[d], m.Dims[d])
		}
	}
	if err := checkQuery(cells, cells.Dims, "fold-in cells"); err != nil {
		return nil, err
	}
	for c, v := range cells.Val {
		if !finite(v) {
			return nil, fmt.Errorf("bayes: fold-in cell %d has value %v", c, v)
		}
	}
	sweeps := cfg.Sweeps
	if sweeps == 0 {
		sweeps = DefaultFoldInSweeps
	}
	if sweeps < 1 {
		return nil, fmt.Errorf("bayes: fold-in sweeps %d: want ≥ 1 (0: %d)", sweeps, DefaultFoldInSweeps)
	}
	// The cells of each new entity (a CSR list per mode), and the cells
	// that touch a new entity at all (the others constrain nothing).
	type ent struct{ mode, i int }
	var news []ent
	for d := range n {
		for i := m.Dims[d]; i < cells.Dims[d]; i++ {
			news = append(news, ent{d, i})
		}
	}
	byEnt := map[ent][]int{}
	for c := range cells.NNZ() {
		for d, i := range cells.Idx[c*n : (c+1)*n] {
			if int(i) >= m.Dims[d] {
				e := ent{d, int(i)}
				byEnt[e] = append(byEnt[e], c)
			}
		}
	}
	out := &Model{Dims: append([]int(nil), cells.Dims...), Rank: k, Min: m.Min, Max: m.Max, Clamp: m.Clamp,
		samples: make([]*params, len(m.samples)), hyper: m.hyper}
	// The samples are independent: drawn by workers, each with its own
	// stream (s) and scratch, so the result does not depend on their
	// number.
	workers := min(runtime.GOMAXPROCS(0), len(m.samples))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sum, sq := make([]float64, k), make([]float64, k)
			var res, hs []float64
			for {
				s := int(next.Add(1) - 1)
				if s >= len(m.samples) || ctx.Err() != nil {
					return
				}
				old := m.samples[s]
				h := m.hyper[s]
				p := &params{k: k, w0: old.w0, w: make([][]float64, n), v: make([][]float64, n)}
				for d := range n {
					p.w[d] = make([]float64, cells.Dims[d])
					p.v[d] = make([]float64, cells.Dims[d]*k)
					copy(p.w[d], old.w[d])
					copy(p.v[d], old.v[d])
					for i := m.Dims[d]; i < cells.Dims[d]; i++ {
						p.w[d][i] = h.muW[d]
						copy(p.v[d][i*k:(i+1)*k], h.muV[d])
					}
				}
				r := rand.New(rand.NewPCG(cfg.Seed, uint64(s)))
				for range sweeps {
					for _, e := range news {
						cs := byEnt[e]
						d, i := e.mode, e.i
						// Residuals e_c = y_c − ŷ_c of the entity's cells, kept
						// up to date through its draws.
						res = res[:0]
						for _, c := range cs {
							res = append(res, cells.Val[c]-p.predict(cells.Idx[c*n:(c+1)*n], sum, sq))
						}
						// The bias: h_c = 1 (see sumW).
						wi := p.w[d][i]
						var t float64
						for j := range cs {
							t += res[j] + wi
						}
						prec := h.alpha*float64(len(cs)) + h.lamW[d]
						nw := (h.alpha*t+h.lamW[d]*h.muW[d])/prec + r.NormFloat64()/math.Sqrt(prec)
						for j := range cs {
							res[j] -= nw - wi
						}
						p.w[d][i] = nw
						// Each factor: h_c = Σ_{d'≠d} V_{d'}[i_{d'}, f] (see sumV).
						for f := range k {
							vi := p.v[d][i*k+f]
							hs = hs[:0]
							var t, hh float64
							for j, c := range cs {
								var hc float64
								for d2, x := range cells.Idx[c*n : (c+1)*n] {
									if d2 != d {
										hc += p.v[d2][int(x)*k+f]
									}
								}
								hs = append(hs, hc)
								t += hc * (res[j] + vi*hc)
								hh += hc * hc
							}
							prec := h.alpha*hh + h.lamV[d][f]
							nv := (h.alpha*t+h.lamV[d][f]*h.muV[d][f])/prec + r.NormFloat64()/math.Sqrt(prec)
							for j := range cs {
								res[j] -= hs[j] * (nv - vi)
							}
							p.v[d][i*k+f] = nv
						}
					}
				}
				out.samples[s] = p
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
