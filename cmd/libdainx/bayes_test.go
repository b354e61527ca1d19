package main

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/tensor"
)

// TestBayesFMModel (issue 47): the C library's predict and fold-in take a
// saved bayes-fm model: predictCells gives the model's own float64
// predictions, and foldIn writes a grown bayes-fm model that predicts the
// known cells as before and the new user's cells.
func TestBayesFMModel(t *testing.T) {
	dir := t.TempDir()
	x := &tensor.COO{Dims: []int{6, 5}}
	for u := range 6 {
		for i := range 5 {
			if (u+i)%3 != 0 {
				x.Idx = append(x.Idx, int32(u), int32(i))
				x.Val = append(x.Val, float64(u%3)+0.5*float64(i))
			}
		}
	}
	cfg := bayes.DefaultConfig()
	cfg.Rank, cfg.Samples, cfg.KeepSamples = 2, 30, 30
	res, err := bayes.Fit(context.Background(), x, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res.Model.Round32()
	m := filepath.Join(dir, "m")
	if err := model.SaveBayes(m, model.DefaultName, res.Model, model.Meta{Version: "test", Role: "theta-prime"}); err != nil {
		t.Fatal(err)
	}
	want, _ := res.Model.Predict(x)
	got, js, err := predictCells(m, x.Idx, x.NNZ(), 2, `{"backend":"cpu"}`)
	if err != nil {
		t.Fatal(err)
	}
	for c := range want {
		if got[c] != want[c] {
			t.Fatalf("cell %d: %v, the model's %v", c, got[c], want[c])
		}
	}
	var rep struct {
		Kind    string `json:"kind"`
		Samples int    `json:"samples"`
	}
	if json.Unmarshal(js, &rep); rep.Kind != "bayes-fm" || rep.Samples != 30 {
		t.Errorf("report %s", js)
	}
	if _, _, err := predictCells(m, []int32{0, 9}, 1, 2, ""); err == nil {
		t.Error("an index outside the model: no error")
	}
	// Fold in user 6 from three of its cells.
	cells, err := buildTensor([]int32{6, 0, 6, 1, 6, 2}, []float64{0, 0.5, 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "m2")
	js, err = foldIn(context.Background(), m, cells, `{"model-out":"`+out+`","seed":3}`, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	var frep struct {
		Kind string `json:"kind"`
		Dims []int  `json:"dims"`
	}
	if json.Unmarshal(js, &frep); frep.Kind != "bayes-fm" || len(frep.Dims) != 2 || frep.Dims[0] != 7 {
		t.Errorf("fold-in report %s", js)
	}
	again, _, err := predictCells(out, x.Idx, x.NNZ(), 2, "")
	if err != nil {
		t.Fatal(err)
	}
	for c := range want {
		if again[c] != want[c] {
			t.Fatalf("known cell %d after fold-in: %v, before %v", c, again[c], want[c])
		}
	}
	if p, _, err := predictCells(out, []int32{6, 3}, 1, 2, ""); err != nil || len(p) != 1 {
		t.Errorf("the new user: %v %v", p, err)
	}
	if _, err := foldIn(context.Background(), m, cells, `{"model-out":"`+filepath.Join(dir, "m3")+`","tune":"all"}`, io.Discard, nil); err == nil {
		t.Error("tune all on a bayes-fm model: no error")
	}
}
