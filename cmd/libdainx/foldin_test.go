package main

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// TestFoldIn: the library's fold-in writes the grown model and its
// report, with epoch events of stage "fold-in"; bad input is an input
// error and writes nothing.
func TestFoldIn(t *testing.T) {
	dir := t.TempDir()
	net, err := nn.NewMLP(cpu.New(), nn.Config{Dims: []int{6, 5}, Layers: []int{8, 4}, Capacity: 32}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(dir, "m")
	if err := model.Save(m, model.DefaultName, net, model.Meta{Version: "test", Role: "theta-prime"}); err != nil {
		t.Fatal(err)
	}
	net.Free()
	var idx []int32
	var val []float64
	for u := 6; u < 9; u++ {
		for i := 0; i < 5; i++ {
			idx = append(idx, int32(u), int32(i))
			val = append(val, float64(u+i)/4)
		}
	}
	cells, err := buildTensor(idx, val, 2)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "m2")
	var events []map[string]any
	js, err := foldInEvents(m, cells, `{"model-out":"`+out+`","epochs":4,"backend":"cpu","seed":3}`, func(b []byte) bool {
		var e map[string]any
		json.Unmarshal(b, &e)
		if e["event"] != "tick" {
			events = append(events, e)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Dims        []int `json:"dims"`
		NewEntities []int `json:"new_entities"`
		Epochs      int   `json:"epochs"`
	}
	if err := json.Unmarshal(js, &rep); err != nil || len(rep.Dims) != 2 || rep.Dims[0] != 9 || rep.NewEntities[0] != 3 || rep.Epochs != 4 {
		t.Errorf("report %s (%v)", js, err)
	}
	epochs := 0
	for _, e := range events {
		if e["event"] == "epoch" {
			epochs++
			if e["stage"] != "fold-in" || e["epochs"] != 4.0 || !strings.Contains(e["message"].(string), "fold-in epoch") {
				t.Errorf("event %v", e)
			}
		}
	}
	if epochs != 4 {
		t.Errorf("%d epoch events: %v", epochs, events)
	}
	if _, err := os.Stat(filepath.Join(out, "model.safetensors")); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		cells   *tensor.COO
		options string
		want    string
	}{
		{cells, `{"epochs":2}`, `"model-out" is required`},
		{cells, `{"model-out":"` + m + `"}`, "is the model read"},
		{cells, `{"model-out":"` + filepath.Join(dir, "x") + `","input":"f"}`, `option "input"`},
		{&tensor.COO{Dims: []int{1, 1, 1}, Idx: []int32{0, 0, 0}, Val: []float64{1}}, `{"model-out":"` + filepath.Join(dir, "x") + `"}`, "cells of order 3, the model's order is 2"},
		{&tensor.COO{Dims: []int{1000, 1}, Idx: []int32{999, 0}, Val: []float64{1}}, `{"model-out":"` + filepath.Join(dir, "x") + `"}`, "cell 0: index 999 of mode 1 would add 994 new entities"},
		{&tensor.COO{Dims: []int{1, 1}, Idx: []int32{0, 0}, Val: []float64{1}}, `{"model-out":"` + filepath.Join(dir, "x") + `","quiet":true}`, "no new entity"},
	} {
		_, err := foldIn(context.Background(), m, c.cells, c.options, io.Discard, nil)
		if err == nil || codeOf(err) != codeInput || !strings.Contains(message(err), c.want) {
			t.Errorf("%s: %v, want an input error with %q", c.options, err, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
			t.Errorf("%s: written after an error", c.options)
		}
	}
}
