package report

import (
	"cmp"
	"math"
	"slices"
)

// Diagnostics of an entity importance (issue 35, part 4): how far it is
// more than entity frequency, and how much it concentrates the new cells.

// ModeDiagnostics describe, for one mode, the entity importance that new
// cells were drawn from (the sampler's distribution, after any temperature
// and mix) against the entities' frequency, their number of training
// cells.
type ModeDiagnostics struct {
	Mode int `json:"mode"` // 1…N
	// Entities is the number of the mode's entities with at least one
	// training cell, over which Spearman is computed.
	Entities int `json:"entities"`
	// Spearman is the Spearman rank correlation of importance with
	// frequency over those entities (ties get average ranks); nil when
	// either is constant over them (e.g. a uniform importance), where it
	// is not defined.
	Spearman *float64 `json:"spearman_importance_frequency"`
	// Top is the number of entities in the mode's top 1% by importance:
	// ⌈d/100⌉ of its d entities (at least 1), ties broken by index.
	Top int `json:"top1pct_entities"`
	// TopShareNew is the share of the new cells whose index in this mode
	// is one of those entities; TopMass the importance on them (the share
	// expected before observed and repeated cells are redrawn);
	// TopShareTrain the share of the training cells on them.
	TopShareNew   float64 `json:"top1pct_share_new_cells"`
	TopMass       float64 `json:"top1pct_importance_mass"`
	TopShareTrain float64 `json:"top1pct_share_training_cells"`
}

// TopEntities returns the ⌈share·len(w)⌉ entities (at least 1) of largest
// weight w, ties broken by the smaller index, in that order.
func TopEntities(w []float64, share float64) []int {
	if len(w) == 0 {
		return nil
	}
	k := max(1, int(math.Ceil(share*float64(len(w))-1e-9)))
	idx := make([]int, len(w))
	for i := range idx {
		idx[i] = i
	}
	// Larger weight first, ties by entity number: what a stable sort by
	// weight gives, in O(n log n) (a stable sort is O(n log² n), seconds
	// for millions of entities).
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(w[b], w[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return idx[:min(k, len(w))]
}

// ModeOf returns the diagnostics of mode n (0-based; Mode is n+1) of an
// entity importance w (one weight per entity) against the entities'
// training-cell counts (the same length): the Spearman correlation over
// the entities with cells, and the top 1% of entities by weight (TopEntities)
// with their share of the weight, marked in top (len(w) entries) for the
// caller's shares of cells (TopShareNew, TopShareTrain, left zero).
func ModeOf(n int, w, counts []float64) (d ModeDiagnostics, top []bool) {
	d.Mode = n + 1
	var imp, freq []float64
	for i, f := range counts {
		if f > 0 {
			imp, freq = append(imp, w[i]), append(freq, f)
		}
	}
	d.Entities = len(imp)
	if r := Spearman(imp, freq); !math.IsNaN(r) {
		d.Spearman = &r
	}
	ids := TopEntities(w, 0.01)
	d.Top = len(ids)
	top = make([]bool, len(w))
	for _, i := range ids {
		top[i] = true
		d.TopMass += w[i]
	}
	return d, top
}

// Ranks returns the ranks 1…n of x, ties given the average of the ranks
// they span.
func Ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	// Ties get their average rank, so their order among themselves does
	// not matter: an unstable O(n log n) sort.
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(x[a], x[b]) })
	r := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && x[idx[j+1]] == x[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1 // ranks i+1 … j+1
		for k := i; k <= j; k++ {
			r[idx[k]] = avg
		}
		i = j + 1
	}
	return r
}

// Spearman returns the Spearman rank correlation of x and y: Pearson's
// correlation of their ranks, ties given average ranks. It returns NaN for
// fewer than 2 pairs, unequal lengths, or when x or y is constant.
func Spearman(x, y []float64) float64 {
	if len(x) != len(y) || len(x) < 2 {
		return math.NaN()
	}
	rx, ry := Ranks(x), Ranks(y)
	n := float64(len(x))
	mean := (n + 1) / 2 // the mean of any ranks 1…n, ties averaged
	var sxy, sxx, syy float64
	for i := range rx {
		a, b := rx[i]-mean, ry[i]-mean
		sxy += a * b
		sxx += a * a
		syy += b * b
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}
