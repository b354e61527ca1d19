package bayes

import (
	"strings"
	"testing"

	"github.com/dainx/dainx/tensor"
)

// TestFoldIn (issue 47): users held out of the chain and folded in by
// Gibbs sampling given the model predict their held-out cells within 5% of
// the RMSE of a chain that had their cells from the start; the known
// entities' predictions stay bit for bit, the same seed gives the same
// model, and bad cells or a model without priors are errors.
func TestFoldIn(t *testing.T) {
	dims := []int{80, 60, 6}
	all, _ := fmTensor(dims, 3, 6000, 0.3, 11)
	const held = 64 // users 64…79 are new
	var old, foldCells, test []int
	seen := map[int32]int{}
	for c := range all.NNZ() {
		u := all.Idx[c*3]
		switch {
		case u < held:
			old = append(old, c)
		case seen[u]%4 == 3:
			test = append(test, c)
			seen[u]++
		default:
			foldCells = append(foldCells, c)
			seen[u]++
		}
	}
	oldT, fold, testT := all.Subset(old), all.Subset(foldCells), all.Subset(test)
	oldT.Dims = []int{held, 60, 6}
	cfg := DefaultConfig()
	cfg.Rank, cfg.Samples, cfg.KeepSamples, cfg.Seed = 3, 120, 60, 5
	base, err := Fit(t.Context(), oldT, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	grown, err := base.Model.FoldIn(t.Context(), fold, FoldInConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := grown.Predict(testT)
	if err != nil {
		t.Fatal(err)
	}
	folded := rmse(p, testT.Val)
	// From the start: a chain on the old users' cells and the fold-in
	// cells, predicting the same test cells.
	both := &tensor.COO{Dims: dims, Idx: append(append([]int32(nil), oldT.Idx...), fold.Idx...), Val: append(append([]float64(nil), oldT.Val...), fold.Val...)}
	ref, err := Fit(t.Context(), both, []*tensor.COO{testT}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := rmse(ref.Pred[0], testT.Val)
	// Without fold-in, the new users would be their prior mean: the
	// folded-in model must do better than that.
	t.Logf("held-out users' cells: folded in %.4f, from the start %.4f", folded, start)
	if folded > 1.05*start {
		t.Errorf("folded-in users' RMSE %.4f, above 1.05× the %.4f of a chain that had them from the start", folded, start)
	}
	// Known entities: the same predictions bit for bit.
	a, _ := base.Model.Predict(oldT)
	b, _ := grown.Predict(oldT)
	for c := range a {
		if a[c] != b[c] {
			t.Fatalf("known cell %d: %v before fold-in, %v after", c, a[c], b[c])
		}
	}
	again, err := base.Model.FoldIn(t.Context(), fold, FoldInConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := again.Predict(testT)
	for c := range q {
		if q[c] != p[c] {
			t.Fatalf("not deterministic at cell %d", c)
		}
	}
	other, _ := base.Model.FoldIn(t.Context(), fold, FoldInConfig{Seed: 2})
	if q2, _ := other.Predict(testT); q2[0] == p[0] && q2[1] == p[1] {
		t.Error("another seed gave the same draws")
	}
	// Errors.
	var samples []Sample
	for s := range base.Model.NumSamples() {
		x := base.Model.Sample(s)
		samples = append(samples, Sample{W0: x.W0, W: x.W, V: x.V})
	}
	bare, err := NewModel(base.Model.Dims, 3, base.Model.Min, base.Model.Max, samples)
	if err != nil {
		t.Fatal(err)
	}
	shrunk := fold.Subset([]int{0})
	shrunk.Dims = []int{held, 59, 6}
	for _, c := range []struct {
		name  string
		m     *Model
		cells *tensor.COO
		want  string
	}{
		{"no priors", bare, fold, "noise precision and priors"},
		{"order", base.Model, &tensor.COO{Dims: []int{80, 60}}, "order 2"},
		{"shrunk", base.Model, shrunk, "mode 2 has size 59"},
	} {
		if _, err := c.m.FoldIn(t.Context(), c.cells, FoldInConfig{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
