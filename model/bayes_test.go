package model

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/tensor"
)

// fittedBayes fits a small bayes-fm on a random rank-2 tensor and returns
// the model (4 kept samples) and some cells to predict.
func fittedBayes(t *testing.T) (*bayes.Model, *tensor.COO) {
	t.Helper()
	dims := []int{7, 5, 4}
	r := rand.New(rand.NewPCG(3, 4))
	x := &tensor.COO{Dims: dims}
	for range 90 {
		i, j, k := r.IntN(7), r.IntN(5), r.IntN(4)
		x.Idx = append(x.Idx, int32(i), int32(j), int32(k))
		x.Val = append(x.Val, float64(i%3)+0.5*float64(j)-0.25*float64(k)+0.1*r.NormFloat64())
	}
	cfg := bayes.DefaultConfig()
	cfg.Rank, cfg.Samples, cfg.KeepSamples = 3, 20, 4
	res, err := bayes.Fit(t.Context(), x, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	q := &tensor.COO{Dims: dims}
	for i := range 7 {
		for j := range 5 {
			q.Idx = append(q.Idx, int32(i), int32(j), int32((i+j)%4))
			q.Val = append(q.Val, 0)
		}
	}
	return res.Model, q
}

// TestSaveLoadBayes: a saved bayes-fm model loads to one that predicts
// bit for bit what the model predicts after Round32, and its metadata
// says what it is; Load (nets) and LoadBayes refuse each other's kinds.
func TestSaveLoadBayes(t *testing.T) {
	m, q := fittedBayes(t)
	dir := t.TempDir()
	if err := SaveBayes(dir, DefaultName, m, Meta{Role: "theta-prime", IndexBase: 1, Version: "test"}); err != nil {
		t.Fatal(err)
	}
	before, err := m.Predict(q)
	if err != nil {
		t.Fatal(err)
	}
	m.Round32()
	want, err := m.Predict(q)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for c := range want {
		if want[c] != before[c] {
			moved++
		}
		if math.Abs(want[c]-before[c]) > 1e-5*math.Max(1, math.Abs(before[c])) {
			t.Fatalf("cell %d: Round32 moved %v to %v", c, before[c], want[c])
		}
	}
	if moved == 0 {
		t.Fatal("Round32 changed no prediction: the test does not see float32 rounding")
	}
	got, meta, err := LoadBayes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Kind != KindBayesFM || meta.Samples != 4 || meta.Rank != 3 || meta.Width != 4 || meta.IndexBase != 1 || meta.Role != "theta-prime" ||
		len(meta.Clamp) != 2 || meta.Clamp[0] != m.Min || meta.Clamp[1] != m.Max {
		t.Fatalf("meta %+v", meta)
	}
	p, err := got.Predict(q)
	if err != nil {
		t.Fatal(err)
	}
	for c := range want {
		if p[c] != want[c] {
			t.Fatalf("cell %d: loaded model predicts %v, saved one %v", c, p[c], want[c])
		}
	}
	for j := range m.NumSamples() {
		a, b := m.Sample(j), got.Sample(j)
		if a.Alpha != b.Alpha || !slices.Equal(a.MuW, b.MuW) || !slices.Equal(a.LamW, b.LamW) {
			t.Fatalf("sample %d: α and bias priors %v %v %v loaded as %v %v %v", j, a.Alpha, a.MuW, a.LamW, b.Alpha, b.MuW, b.LamW)
		}
		for d := range a.MuV {
			if !slices.Equal(a.MuV[d], b.MuV[d]) || !slices.Equal(a.LamV[d], b.LamV[d]) {
				t.Fatalf("sample %d, mode %d: factor priors %v %v loaded as %v %v", j, d, a.MuV[d], a.LamV[d], b.MuV[d], b.LamV[d])
			}
		}
	}
	if meta.ClampRule != "samples" {
		t.Fatalf("clamp_rule %q, want samples", meta.ClampRule)
	}
	if _, _, err := Load(dir, nil, 0); err == nil || !strings.Contains(err.Error(), "LoadBayes") {
		t.Fatalf("Load of a bayes-fm model: %v", err)
	}
	netDir, _, _ := savedMLP(t)
	if _, _, err := LoadBayes(netDir); err == nil || !strings.Contains(err.Error(), "not a bayes-fm") {
		t.Fatalf("LoadBayes of an MLP: %v", err)
	}
}

// TestLoadBayesUntrusted: a bayes-fm model whose metadata or tensors lie
// is an error naming the file and the field, before anything is
// allocated from the lie.
func TestLoadBayesUntrusted(t *testing.T) {
	m, _ := fittedBayes(t)
	dir := t.TempDir()
	if err := SaveBayes(dir, DefaultName, m, Meta{Role: "theta-prime"}); err != nil {
		t.Fatal(err)
	}
	js, st := modelFiles(t, dir)
	h, data := header(t, st)
	for _, c := range []struct {
		name   string
		edit   func(map[string]any)
		st     []byte
		expect string
	}{
		{"samples huge", func(m map[string]any) { m["samples"] = 1 << 40 }, nil, "samples 1099511627776"},
		{"samples zero", func(m map[string]any) { m["samples"] = 0 }, nil, "samples 0"},
		{"samples lie", func(m map[string]any) { m["samples"] = 5000 }, nil, "truncated, or the two files"},
		{"params over the limit", func(m map[string]any) {
			m["samples"] = 60000
			m["dims"] = []int{1 << 30, 1 << 20, 4}
			m["rank"] = 1000
			m["embedding_width"] = 1001
		}, nil, "more than the limit"},
		{"dims lie", func(m map[string]any) { m["dims"] = []int{7, 5000, 4} }, nil, "truncated, or the two files"},
		{"width", func(m map[string]any) { m["embedding_width"] = 3 }, nil, "embedding_width 3"},
		{"rank", func(m map[string]any) { m["rank"] = 0 }, nil, "rank 0"},
		{"clamp missing", func(m map[string]any) { delete(m, "clamp") }, nil, "clamp has 0 values"},
		{"clamp inverted", func(m map[string]any) { m["clamp"] = []float64{3, 1} }, nil, "clamp [3, 1]"},
		{"clamp rule auto", func(m map[string]any) { m["clamp_rule"] = "auto" }, nil, `clamp_rule "auto"`},
		{"layers", func(m map[string]any) { m["layers"] = []int{12, 4} }, nil, "no layers"},
		{"kind", func(m map[string]any) { m["kind"] = "bayes-fm2" }, nil, `kind "bayes-fm2"`},
		{"shape lie", nil, func() []byte {
			h2 := clone(h)
			e := h2["embedding.1"].(map[string]any)
			e["shape"] = []int{4, 6, 4}
			return withHeader(t, h2, data)
		}(), "embedding.1 has shape [4 6 4], want [4 5 4]"},
		{"truncated", nil, st[:len(st)-9], "truncated"},
		{"negative precision", nil, func() []byte {
			e := h["prior.v.precision"].(map[string]any)
			off := int(e["data_offsets"].([]any)[0].(float64))
			d := append([]byte(nil), data...)
			binary.LittleEndian.PutUint32(d[off:], math.Float32bits(-2))
			return withHeader(t, h, d)
		}(), "precision -2"},
		{"extra tensor", nil, func() []byte {
			h2 := clone(h)
			h2["w1"] = map[string]any{"dtype": "F32", "shape": []int{1}, "data_offsets": []int{len(data), len(data) + 4}}
			return withHeader(t, h2, append(append([]byte(nil), data...), 0, 0, 0, 0))
		}(), "unexpected tensor"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			j := js
			if c.edit != nil {
				j = editMeta(t, js, c.edit)
			}
			s := st
			if c.st != nil {
				s = c.st
			}
			if err := os.WriteFile(filepath.Join(d, "model.json"), j, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "model.safetensors"), s, 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := LoadBayes(d)
			if err == nil || !strings.Contains(err.Error(), c.expect) || !strings.Contains(err.Error(), d) {
				t.Fatalf("got %v, want an error naming %s and saying %q", err, d, c.expect)
			}
		})
	}
}

// clone copies a safetensors header one level deep.
func clone(h map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range h {
		if e, ok := v.(map[string]any); ok {
			c := map[string]any{}
			for k2, v2 := range e {
				c[k2] = v2
			}
			v = c
		}
		out[k] = v
	}
	return out
}

// TestSaveLoadBayesClampRule: clamp_rule round-trips ("mean" loads to a
// model that predicts the saved one's values bit for bit, which differ
// from "samples"' somewhere), and a model.json without it (saved before
// it was recorded) loads as "samples".
func TestSaveLoadBayesClampRule(t *testing.T) {
	m, q := fittedBayes(t)
	m.Round32()
	// A narrower range, so that the two rules differ on many cells.
	w := m.Max - m.Min
	m.Min, m.Max = float64(float32(m.Min+0.3*w)), float64(float32(m.Max-0.3*w))
	m.Clamp = bayes.ClampMean
	dir := t.TempDir()
	if err := SaveBayes(dir, DefaultName, m, Meta{Role: "theta-prime"}); err != nil {
		t.Fatal(err)
	}
	got, meta, err := LoadBayes(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := m.Predict(q)
	p, _ := got.Predict(q)
	if meta.ClampRule != "mean" || got.Clamp != bayes.ClampMean || !slices.Equal(p, want) {
		t.Fatalf("clamp_rule %q, model %q: predictions equal %v", meta.ClampRule, got.Clamp, slices.Equal(p, want))
	}
	js, _ := modelFiles(t, dir)
	var raw map[string]any
	if err := json.Unmarshal(js, &raw); err != nil {
		t.Fatal(err)
	}
	delete(raw, "clamp_rule")
	out, _ := json.Marshal(raw)
	if err := os.WriteFile(filepath.Join(dir, DefaultName+".json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	old, _, err := LoadBayes(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Clamp = bayes.ClampSamples
	each, _ := m.Predict(q)
	p, _ = old.Predict(q)
	if old.Clamp != bayes.ClampSamples || !slices.Equal(p, each) {
		t.Fatalf("without clamp_rule: model %q", old.Clamp)
	}
	if slices.Equal(each, want) {
		t.Fatal("mean and samples agree on every cell: the test cannot tell them apart")
	}
}
