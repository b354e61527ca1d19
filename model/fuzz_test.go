package model

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/nn"
)

// FuzzLoad writes fuzzed model.json and model.safetensors bytes to a
// directory and loads it: Load must return a net or an error, never
// panic, hang or allocate beyond what the files hold (make fuzz). The
// seeds are a small saved MLP, CoSTCo, FM and hybrid, and their
// truncations.
func FuzzLoad(f *testing.F) {
	be := cpu.New()
	mlp, err := nn.NewMLP(be, nn.Config{Dims: []int{6, 5, 4}, Layers: []int{9, 8, 5}, Capacity: 7}, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		f.Fatal(err)
	}
	costco, err := nn.NewCoSTCo(be, nn.CoSTCoConfig{Dims: []int{3, 2}, Rank: 2, Channels: 3, Capacity: 7}, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		f.Fatal(err)
	}
	fm, err := nn.NewFM(be, nn.FMConfig{Dims: []int{3, 2, 2}, Rank: 2, Capacity: 7}, rand.New(rand.NewPCG(9, 10)))
	if err != nil {
		f.Fatal(err)
	}
	hybrid, err := nn.NewHybrid(be, nn.Config{Dims: []int{3, 2}, Layers: []int{4, 3}, Capacity: 7}, rand.New(rand.NewPCG(11, 12)))
	if err != nil {
		f.Fatal(err)
	}
	for _, net := range []*nn.Net{mlp, costco, fm, hybrid} {
		dir := f.TempDir()
		if err := Save(dir, DefaultName, net, Meta{Role: "theta-prime"}); err != nil {
			f.Fatal(err)
		}
		net.Free()
		js, _ := os.ReadFile(filepath.Join(dir, "model.json"))
		st, _ := os.ReadFile(filepath.Join(dir, "model.safetensors"))
		f.Add(js, st)
		f.Add(js, st[:len(st)/2])
		f.Add(js[:len(js)/2], st)
	}
	f.Fuzz(func(t *testing.T, js, st []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "model.json"), js, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644); err != nil {
			t.Fatal(err)
		}
		// A fixed small batch: a metadata capacity up to MaxCapacity is
		// legal and would only make each run slow.
		net, meta, err := Load(dir, be, 16)
		if err != nil {
			if len(err.Error()) > 4096 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
			return
		}
		defer net.Free()
		if n := net.NumParams(); 4*n > len(st) {
			t.Errorf("%d parameters from a %d-byte file", n, len(st))
		}
		if meta.Order != net.Order() {
			t.Errorf("meta order %d, net %d", meta.Order, net.Order())
		}
	})
}
