package model

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/tensor"
)

// savedEnsemble saves an ensemble of an MLP, a CoSTCo and a bayes-fm over
// one tensor of dims d in a fresh directory and returns it, the members
// and some cells.
func savedEnsemble(t *testing.T) (string, *tensor.COO, []float64) {
	t.Helper()
	mlp, cc := newMLP(t), newCoSTCo(t)
	cfg := bayes.DefaultConfig()
	cfg.Rank, cfg.Samples, cfg.KeepSamples = 2, 6, 3
	r := rand.New(rand.NewPCG(9, 9))
	x := &tensor.COO{Dims: dims}
	for range 60 {
		for _, d := range dims {
			x.Idx = append(x.Idx, int32(r.IntN(d)))
		}
		x.Val = append(x.Val, r.NormFloat64())
	}
	fit, err := bayes.Fit(t.Context(), x, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fit.Model.Round32()
	dir := t.TempDir()
	meta := Meta{Role: "theta-prime", IndexBase: 1}
	for k, save := range map[string]func() error{
		"mlp":       func() error { return Save(dir, MemberName(DefaultName, "mlp"), mlp, meta) },
		"costco":    func() error { return Save(dir, MemberName(DefaultName, "costco"), cc, meta) },
		KindBayesFM: func() error { return SaveBayes(dir, MemberName(DefaultName, KindBayesFM), fit.Model, meta) },
	} {
		if err := save(); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	w := []float64{0.1, 0.5, 0.25, 0.75}
	if err := SaveEnsemble(dir, DefaultName, []string{"mlp", "costco", KindBayesFM}, w, -1, 1, meta); err != nil {
		t.Fatal(err)
	}
	// The stack by hand, from each member loaded on its own.
	q := &tensor.COO{Dims: dims, Idx: x.Idx[:30*len(dims)], Val: x.Val[:30]}
	want := make([]float64, q.NNZ())
	for c := range want {
		want[c] = w[0]
	}
	for j, k := range []string{"mlp", "costco"} {
		net, _, err := Load(filepath.Join(dir, MemberName(DefaultName, k)), cpu.New(), 0)
		if err != nil {
			t.Fatal(err)
		}
		set := net.NewSet(q.Idx, q.Val)
		p, err := net.Predict(set)
		if err != nil {
			t.Fatal(err)
		}
		for c := range want {
			want[c] += w[j+1] * tensor.Shortest(p[c])
		}
		set.Free()
		net.Free()
	}
	pb, err := fit.Model.Predict(q)
	if err != nil {
		t.Fatal(err)
	}
	for c := range want {
		want[c] = min(max(want[c]+w[3]*pb[c], -1), 1)
	}
	return dir, q, want
}

// TestSaveLoadEnsemble: a saved ensemble loads to one that predicts, bit
// for bit, the clamped stack of its members' predictions; its metadata
// says what it is; Load and LoadBayes refuse it.
func TestSaveLoadEnsemble(t *testing.T) {
	dir, q, want := savedEnsemble(t)
	e, meta, err := LoadEnsemble(dir, cpu.New(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Free()
	if meta.Kind != KindEnsemble || len(meta.Members) != 3 || meta.IndexBase != 1 || meta.Order != len(dims) {
		t.Fatalf("meta %+v", meta)
	}
	got, err := e.Predict(q)
	if err != nil {
		t.Fatal(err)
	}
	clamped := 0
	for c := range want {
		if got[c] != want[c] {
			t.Fatalf("cell %d: %v, the stack by hand %v", c, got[c], want[c])
		}
		if math.Abs(got[c]) == 1 {
			clamped++
		}
	}
	t.Logf("%d of %d predictions at the clamp", clamped, len(got))
	if _, _, err := Load(dir, cpu.New(), 0); err == nil || !strings.Contains(err.Error(), "LoadEnsemble") {
		t.Errorf("Load of an ensemble: %v", err)
	}
	if _, _, err := LoadBayes(dir); err == nil || !strings.Contains(err.Error(), "not a bayes-fm") {
		t.Errorf("LoadBayes of an ensemble: %v", err)
	}
}

// TestLoadEnsembleUntrusted: metadata that lies, and members that are
// missing or of another tensor, are errors naming the file, and nothing
// is written by SaveEnsemble without its members.
func TestLoadEnsembleUntrusted(t *testing.T) {
	dir, _, _ := savedEnsemble(t)
	js, err := os.ReadFile(filepath.Join(dir, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		edit   func(map[string]any)
		expect string
	}{
		{"weights short", func(m map[string]any) { m["weights"] = []float64{1, 2} }, "weights has 2 values for 3 members"},
		{"no members", func(m map[string]any) { m["members"] = []string{}; m["weights"] = []float64{1} }, "members has 0 kinds"},
		{"unknown member", func(m map[string]any) { m["members"] = []string{"mlp", "svd", "bayes-fm"} }, `members[1] = "svd"`},
		{"member twice", func(m map[string]any) { m["members"] = []string{"mlp", "mlp", "bayes-fm"} }, "members name mlp twice"},
		{"clamp inverted", func(m map[string]any) { m["clamp"] = []float64{2, 1} }, "clamp [2, 1]"},
		{"layers", func(m map[string]any) { m["layers"] = []int{9, 8} }, "holds no layers"},
		{"member of another kind", func(m map[string]any) { m["members"] = []string{"mlp", "hybrid", "bayes-fm"} }, "member"},
		{"member missing", func(m map[string]any) { m["members"] = []string{"mlp", "fm", "bayes-fm"} }, "member fm"},
		{"dims", func(m map[string]any) { m["dims"] = []int{4, 4, 4}; m["order"] = 3 }, "dims"},
		{"weights on a net", nil, "members and weights belong to an ensemble"},
	} {
		d := t.TempDir()
		for _, f := range []string{"model.mlp", "model.costco", "model.bayes-fm"} {
			for _, ext := range []string{".json", ".safetensors"} {
				b, err := os.ReadFile(filepath.Join(dir, f+ext))
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(d, f+ext), b, 0o644)
			}
		}
		if c.edit == nil {
			mj, _ := os.ReadFile(filepath.Join(dir, "model.mlp.json"))
			os.WriteFile(filepath.Join(d, "model.mlp.json"), editMeta(t, mj, func(m map[string]any) { m["weights"] = []float64{1} }), 0o644)
			if _, _, err := Load(filepath.Join(d, "model.mlp"), cpu.New(), 0); err == nil || !strings.Contains(err.Error(), c.expect) {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		// model.hybrid is a copy of the CoSTCo: a member of another kind.
		for _, ext := range []string{".json", ".safetensors"} {
			b, _ := os.ReadFile(filepath.Join(dir, "model.costco"+ext))
			os.WriteFile(filepath.Join(d, "model.hybrid"+ext), b, 0o644)
		}
		os.WriteFile(filepath.Join(d, "model.json"), editMeta(t, js, c.edit), 0o644)
		e, _, err := LoadEnsemble(d, cpu.New(), 0)
		if err == nil || !strings.Contains(err.Error(), c.expect) || !strings.Contains(err.Error(), d) {
			t.Errorf("%s: %v", c.name, err)
		}
		if e != nil {
			e.Free()
		}
	}
	// SaveEnsemble without its members writes nothing.
	d := t.TempDir()
	if err := SaveEnsemble(d, DefaultName, []string{"mlp"}, []float64{0, 1}, 0, 1, Meta{}); err == nil {
		t.Error("SaveEnsemble without members: no error")
	}
	if _, err := os.Stat(filepath.Join(d, "model.json")); err == nil {
		t.Error("SaveEnsemble without members wrote model.json")
	}
	var m map[string]any
	json.Unmarshal(js, &m)
	if m["kind"] != KindEnsemble {
		t.Errorf("kind %v", m["kind"])
	}
}
