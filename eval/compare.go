package eval

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
)

// References are the methods every other method is compared with, when an
// evaluation has them: the strongest uniform baseline, the entity-frequency
// null model, the paper's method, the training-length control, and uniform
// cells with the averaged predictor (the placement null of the
// averaged-predictor variants). NoAug names the comparison with no
// augmentation (every method's ratio-0 run).
var References = []string{"random-costco", "degree", "dain", "no-aug-steps", "random-avg-predictor", NoAug}

// NoAug is the reference name of the ratio-0 runs (no augmentation).
const NoAug = "no augmentation"

// Comparison is one method against one reference at one ratio over the
// splits both ran: the mean paired difference of test RMSE (method −
// reference; negative means the method is better) with its 95% confidence
// interval, the paired t-test, and its p-value after Holm's correction over
// every method compared with the same reference at the same ratio.
type Comparison struct {
	Method    string  `json:"method"`
	Reference string  `json:"reference"`
	Ratio     float64 `json:"ratio"`
	N         int     `json:"n"`
	Diff      float64 `json:"diff_mean"`
	Lo        float64 `json:"diff_ci95_lo"`
	Hi        float64 `json:"diff_ci95_hi"`
	T         float64 `json:"t"`
	P         float64 `json:"p"`
	PHolm     float64 `json:"p_holm"`
}

// Compare returns the comparisons of every method with every reference
// present in r, at every positive ratio, in the order of References, then
// ratios, then r's methods.
func (r *Results) Compare() []Comparison {
	type key struct {
		m string
		q float64
	}
	by := map[key]map[int]float64{}
	ratios := map[float64]bool{}
	for _, run := range r.Runs {
		k := key{run.Method, run.Ratio}
		if by[k] == nil {
			by[k] = map[int]float64{}
		}
		by[k][run.Repeat] = run.RMSE
		if run.Ratio > 0 {
			ratios[run.Ratio] = true
		}
	}
	// The ratio-0 runs are shared: any method's stand for no augmentation.
	var none map[int]float64
	for _, m := range r.Spec.Methods {
		if v := by[key{m, 0}]; v != nil {
			none = v
			break
		}
	}
	qs := make([]float64, 0, len(ratios))
	for q := range ratios {
		qs = append(qs, q)
	}
	sort.Float64s(qs)
	var out []Comparison
	for _, ref := range References {
		for _, q := range qs {
			refRuns := by[key{ref, q}]
			if ref == NoAug {
				refRuns = none
			}
			if refRuns == nil {
				continue
			}
			var fam []Comparison
			for _, m := range r.Spec.Methods {
				runs := by[key{m, q}]
				if m == ref || runs == nil {
					continue
				}
				var reps []int
				for rep := range runs {
					if _, ok := refRuns[rep]; ok {
						reps = append(reps, rep)
					}
				}
				slices.Sort(reps)
				a, b := make([]float64, len(reps)), make([]float64, len(reps))
				for i, rep := range reps {
					a[i], b[i] = runs[rep], refRuns[rep]
				}
				c := Comparison{Method: m, Reference: ref, Ratio: q, N: len(reps)}
				c.Diff, c.Lo, c.Hi = MeanCI(a, b, 0.95)
				c.T, _, c.P = Paired(a, b)
				fam = append(fam, c)
			}
			p := make([]float64, len(fam))
			for i, c := range fam {
				p[i] = c.P
			}
			for i, h := range Holm(p) {
				fam[i].PHolm = h
			}
			out = append(out, fam...)
		}
	}
	return out
}

// comparisonsJSON replaces NaN and ±Inf (which JSON lacks) by null.
func comparisonsJSON(cs []Comparison) any {
	type row struct {
		Method    string   `json:"method"`
		Reference string   `json:"reference"`
		Ratio     float64  `json:"ratio"`
		N         int      `json:"n"`
		Diff      *float64 `json:"diff_mean"`
		Lo        *float64 `json:"diff_ci95_lo"`
		Hi        *float64 `json:"diff_ci95_hi"`
		T         *float64 `json:"t"`
		P         *float64 `json:"p"`
		PHolm     *float64 `json:"p_holm"`
	}
	opt := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	out := []row{}
	for _, c := range cs {
		out = append(out, row{c.Method, c.Reference, c.Ratio, c.N, opt(c.Diff), opt(c.Lo), opt(c.Hi), opt(c.T), opt(c.P), opt(c.PHolm)})
	}
	return map[string]any{
		"about":       "method − reference test RMSE over the splits both ran (negative: the method is better); 95% t interval; two-sided paired t-test; Holm's correction over the methods compared with the same reference at the same ratio",
		"comparisons": out,
	}
}

// writeComparisons appends the comparison tables to a summary.
func writeComparisons(b *bytes.Buffer, cs []Comparison) {
	if len(cs) == 0 {
		return
	}
	b.WriteString("\n## Paired comparisons with Holm's correction\n\n")
	b.WriteString("Test RMSE of the method minus the reference's on the same splits (negative: the method is better), mean with 95% t interval; two-sided paired t-test p-value, raw and Holm-corrected over all methods compared with that reference at that ratio. **Bold**: Holm p < 0.01.\n")
	ref, q := "", -1.0
	for _, c := range cs {
		if c.Reference != ref || c.Ratio != q {
			ref, q = c.Reference, c.Ratio
			fmt.Fprintf(b, "\n### Against %s at %g%%\n\n![paired differences from %s at %g%%](%s)\n\n| method | n | diff (95%% CI) | p | p Holm |\n|---|---:|---|---:|---:|\n", ref, 100*q, ref, 100*q, forestName(ref, q))
		}
		hp := fmt.Sprintf("%.3g", c.PHolm)
		if c.PHolm < 0.01 {
			hp = "**" + hp + "**"
		}
		fmt.Fprintf(b, "| %s | %d | %+.4f (%+.4f, %+.4f) | %.3g | %s |\n", c.Method, c.N, c.Diff, c.Lo, c.Hi, c.P, hp)
	}
}
