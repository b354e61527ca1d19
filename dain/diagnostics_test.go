package dain

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/dain/report"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/tensor"
)

// TestTopShare: on 250 entities the top 1% is ⌈2.5⌉ = 3 entities, the
// largest weights, a tie at the boundary going to the smaller index; the
// share of cells on them counts their index in that mode only.
func TestTopShare(t *testing.T) {
	w := make([]float64, 250)
	for i := range w {
		w[i] = 1
	}
	w[199], w[42], w[7], w[120] = 9, 5, 3, 3 // 7 and 120 tie: 7 is in
	top := report.TopEntities(w, 0.01)
	if !slices.Equal(top, []int{199, 42, 7}) {
		t.Errorf("top 1%% %v; want [199 42 7]", top)
	}
	if got := report.TopEntities(w[:100], 0.01); len(got) != 1 || got[0] != 42 {
		t.Errorf("top 1%% of 100 entities %v; want [42]", got)
	}
	if got := report.TopEntities([]float64{1, 2, 3}, 0.01); !slices.Equal(got, []int{2}) {
		t.Errorf("top 1%% of 3 entities %v; want [2] (at least one)", got)
	}
	in := make([]bool, 250)
	for _, i := range top {
		in[i] = true
	}
	// Order-2 cells: mode 0 index, mode 1 index. Mode 0 hits 199, 7, 42
	// (3 of 8); mode 1 hits 7 once (1 of 8).
	cells := []int32{199, 0, 7, 1, 42, 7, 5, 2, 6, 3, 8, 4, 120, 5, 10, 6}
	e := &Experiment{sp: spread.State{Cl: cluster.Local{}}}
	if s := e.sp.ShareOn(cells, 2, 0, in); s != 3.0/8 {
		t.Errorf("share on mode 0: %v; want 3/8", s)
	}
	if s := e.sp.ShareOn(cells, 2, 1, in); s != 1.0/8 {
		t.Errorf("share on mode 1: %v; want 1/8", s)
	}
	if s := e.sp.ShareOn(nil, 2, 0, in); s != 0 {
		t.Errorf("share of no cells: %v", s)
	}
}

// TestImportanceDiagnostics: degree's importance is the entity frequency,
// so its ρ is 1 in every mode and the importance on its top 1% equals the
// training cells' share there; the new cells' share is counted from the
// cells themselves. Uniform cells have no importance and no diagnostics.
func TestImportanceDiagnostics(t *testing.T) {
	e, c := experiment(t, 2000, func(c *Config) { c.Method = "degree" })
	aug, _, err := e.Augment(context.Background(), c, 600)
	if err != nil {
		t.Fatal(err)
	}
	d := e.ImportanceDiagnostics(c, aug)
	if len(d) != e.x.Order() {
		t.Fatalf("%d modes of diagnostics; want %d", len(d), e.x.Order())
	}
	counts := e.entityCounts()
	for n, m := range d {
		if m.Mode != n+1 || m.Spearman == nil || *m.Spearman != 1 {
			t.Errorf("mode %d: %+v; want ρ = 1", n+1, m)
		}
		occur := 0
		for _, f := range counts[n] {
			if f > 0 {
				occur++
			}
		}
		top := report.TopEntities(counts[n], 0.01)
		if m.Entities != occur || m.Top != len(top) {
			t.Errorf("mode %d: %d entities, top %d; want %d, %d", n+1, m.Entities, m.Top, occur, len(top))
		}
		if math.Abs(m.TopMass-m.TopShareTrain) > 1e-12 {
			t.Errorf("mode %d: importance on the top 1%% %v, training share %v; degree's are equal", n+1, m.TopMass, m.TopShareTrain)
		}
		hit := 0
		for k := 0; k < aug.NNZ(); k++ {
			if slices.Contains(top, int(aug.Cell(k)[n])) {
				hit++
			}
		}
		if want := float64(hit) / float64(aug.NNZ()); m.TopShareNew != want {
			t.Errorf("mode %d: new cells' share %v; want %v", n+1, m.TopShareNew, want)
		}
	}
	c.Method = "random"
	u, _, err := e.Augment(context.Background(), c, 100)
	if err != nil {
		t.Fatal(err)
	}
	if d := e.ImportanceDiagnostics(c, u); d != nil {
		t.Errorf("uniform cells have diagnostics %+v", d)
	}
	if d := e.ImportanceDiagnostics(c, &tensor.COO{}); d != nil {
		t.Errorf("no importance: %+v", d)
	}
}
