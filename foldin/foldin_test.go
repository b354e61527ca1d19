package foldin

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

func TestGrownDims(t *testing.T) {
	cells := &tensor.COO{Dims: []int{9, 9}, Idx: []int32{0, 1, 5, 2, 6, 8, 3, 3}, Val: []float64{1, 2, 3, 4}}
	got, err := GrownDims([]int{4, 8}, cells)
	if err != nil || fmt.Sprint(got) != "[7 9]" {
		t.Errorf("GrownDims: %v, %v", got, err)
	}
	// Mode 2 grows by 5 entities with 4 cells: too many; the first cell
	// holding the largest index is named.
	cells.Idx[5] = 12
	_, err = GrownDims([]int{4, 8}, cells)
	var le *LimitError
	if !errors.As(err, &le) || le.Cell != 2 || le.Mode != 2 || le.Index != 12 || le.Size != 8 || le.NNZ != 4 {
		t.Errorf("GrownDims: %v (%+v)", err, le)
	}
	if _, err := GrownDims([]int{4, 8, 2}, cells); err == nil {
		t.Error("order 2 cells for an order-3 model: no error")
	}
}

// TestSplitKeepsNewEntitiesTrained: a validation cell whose new entity
// would have no training cell is trained on instead; the validation share
// is otherwise the seeded ⌊ValFrac·n⌋.
func TestSplitKeepsNewEntitiesTrained(t *testing.T) {
	// New users 10…29 with one cell each, then user 30 with 100 cells.
	c := &tensor.COO{Dims: []int{31, 200}}
	for u := 10; u < 30; u++ {
		c.Idx = append(c.Idx, int32(u), 0)
		c.Val = append(c.Val, 1)
	}
	for i := 0; i < 100; i++ {
		c.Idx = append(c.Idx, 30, int32(i))
		c.Val = append(c.Val, 1)
	}
	use := make([]int, c.NNZ())
	for i := range use {
		use[i] = i
	}
	cfg := DefaultConfig()
	cfg.ValFrac = 0.5
	train, val := split(c, use, []int{10, 200}, cfg)
	if len(train)+len(val) != c.NNZ() {
		t.Fatalf("%d + %d cells", len(train), len(val))
	}
	for _, k := range val {
		if k < 20 {
			t.Errorf("cell %d, the only one of user %d, is a validation cell", k, k+10)
		}
	}
	if len(val) == 0 || len(val) > 60 {
		t.Errorf("%d validation cells", len(val))
	}
}

// TestRun: the grown net predicts the known cells as the model does, bit
// for bit; the report counts the new entities, skipped cells and the
// split; without a validation share every epoch runs.
func TestRun(t *testing.T) {
	be := cpu.New()
	dims := []int{10, 8}
	m, err := nn.NewFM(be, nn.FMConfig{Dims: dims, Rank: 3, Capacity: 16}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	c := &tensor.COO{Dims: []int{13, 8}}
	for u := 8; u < 13; u++ {
		for i := 0; i < 8; i++ {
			c.Idx = append(c.Idx, int32(u), int32(i))
			c.Val = append(c.Val, float64(u%3+i%2))
		}
	}
	cfg := DefaultConfig()
	cfg.Epochs, cfg.Batch = 7, 8
	g, rep, err := Run(context.Background(), m, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Free()
	if fmt.Sprint(rep.Dims, rep.NewEntities, rep.NSkipped, rep.NTrain+rep.NVal, rep.TrainedRows) != "[13 8] [3 0] 16 24 3" || rep.ValRMSE == nil {
		t.Errorf("report %+v", rep)
	}
	known := m.NewSet([]int32{0, 0, 9, 7, 3, 4}, []float64{0, 0, 0})
	p0, _ := m.Predict(known)
	p1, _ := g.Predict(g.NewSet([]int32{0, 0, 9, 7, 3, 4}, []float64{0, 0, 0}))
	if fmt.Sprint(p0) != fmt.Sprint(p1) {
		t.Errorf("known cells: %v, then %v", p0, p1)
	}
	cfg.ValFrac = 0
	g2, rep, err := Run(context.Background(), m, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Free()
	if rep.Epochs != 7 || rep.BestEpoch != 7 || rep.NVal != 0 || rep.ValRMSE != nil {
		t.Errorf("without validation: %+v", rep)
	}
	// Only known entities with -tune new: an error that says so.
	if _, _, err := Run(context.Background(), m, &tensor.COO{Dims: dims, Idx: []int32{1, 1}, Val: []float64{1}}, DefaultConfig()); err == nil {
		t.Error("no new entity: no error")
	}
}
