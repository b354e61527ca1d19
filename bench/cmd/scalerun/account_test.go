package main

import (
	"math/rand/v2"
	"testing"

	"github.com/dainx/dainx/bench/internal/roofline"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/nn"
)

// TestWorkOf: the modelled work of the bench's MLP (layers 48,64,32 over
// three modes, E = 16) is the hand count: forward 2·(48·64 + 64·32 +
// 32·1) + (64 + 32 + 1) FLOP, three times the products (and twice the
// biases) plus sparse Adam's 10 FLOP per row element for a step; bytes
// 48·4 gathered + 16 of indices and value, then written back and 28 per
// row element for Adam.
func TestWorkOf(t *testing.T) {
	be := cpu.New()
	defer be.Close()
	m, err := nn.NewMLP(be, nn.Config{Dims: []int{10, 20, 30}, Layers: []int{48, 64, 32}, Capacity: 1}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	w := workOf(m)
	macs := 48.0*64 + 64*32 + 32
	if want := 2*macs + 97; w.fwdFlops != want {
		t.Errorf("forward %v FLOP, want %v", w.fwdFlops, want)
	}
	if want := 6*macs + 2*97 + 10*48; w.stepFlops != want {
		t.Errorf("step %v FLOP, want %v", w.stepFlops, want)
	}
	if want := 48.0*4 + 16; w.fwdBytes != want {
		t.Errorf("forward %v bytes, want %v", w.fwdBytes, want)
	}
	if want := 48.0*4 + 16 + 48*4 + 28*48; w.stepBytes != want {
		t.Errorf("step %v bytes, want %v", w.stepBytes, want)
	}
	if w.dense != macs+97 || w.table != 60*16 {
		t.Errorf("dense %v, table %v", w.dense, w.table)
	}
	// Dense Adam adds the whole table's update each step.
	f1, b1 := w.training(2048, 1024, 0, nn.SparseAdam)
	f2, b2 := w.training(2048, 1024, 0, nn.Adam)
	if f2-f1 != 2*10*w.table || b2-b1 != 2*28*w.table {
		t.Errorf("adam over sparse-adam: %v FLOP, %v bytes", f2-f1, b2-b1)
	}
}

// TestAccount: a run's stages are placed with the modelled work and its
// report's seconds.
func TestAccount(t *testing.T) {
	run := &Run{Cells: 1000, NTrain: 700, NVal: 200, NAug: 350, Epochs: 1, EpochsAft: 1,
		Seconds: map[string]float64{"read_split": 0.1, "train": 1, "influence": 0.5, "entity": 0.01, "sample": 0.1, "predict": 2, "retrain": 1.5}}
	m := roofline.Machine{PeakGFLOPS: 100, TriadGBps: 10}
	st := account(run, m, []int{10, 20, 30}, []int{48, 64, 32}, nil, 12345, map[string]string{"mlp": "sparse-adam", "costco": "adam"})
	if len(st) != 7 {
		t.Fatalf("%d stages", len(st))
	}
	byName := map[string]roofline.Stage{}
	for _, s := range st {
		byName[s.Name] = s
	}
	if s := byName["train"]; s.Cells != 700 || !(s.Flops > 0) || s.Bound == "" || s.CellsPerS != 700 {
		t.Errorf("train: %+v", s)
	}
	if s := byName["read_split"]; s.Bytes != 12345 || s.Flops != 0 {
		t.Errorf("read_split: %+v", s)
	}
	if s := byName["retrain"]; s.Cells != 1050 {
		t.Errorf("retrain: %+v", s)
	}
	if s := byName["predict"]; s.Cells != 1050 || !(s.Flops > byName["train"].Flops) {
		t.Errorf("predict: %+v (CoSTCo's work should exceed the narrow MLP's)", s)
	}
}
