package eval

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// writeFake writes an eval output with the given seeds (one repeat each,
// numbered from 1), methods dain and random-mlp at ratios 0 and 0.5, and a
// training configuration whose layers are layers.
func writeFake(t *testing.T, seeds []uint64, layers []int) string {
	t.Helper()
	r := &Results{Spec: Spec{Methods: []string{"dain", "random-mlp"}}, Seconds: 10}
	for i, s := range seeds {
		for _, m := range r.Spec.Methods {
			for _, q := range []float64{0, 0.5} {
				rmse := 1 - 0.01*q - 0.001*float64(s)
				if m == "random-mlp" && q > 0 {
					rmse += 0.002 + 0.0001*float64(s%3)
				}
				r.Runs = append(r.Runs, Run{Repeat: i + 1, Seed: s, Method: m, Ratio: q, RMSE: rmse, SecTotal: 1})
			}
		}
	}
	dir := t.TempDir()
	p := Provenance{
		Command: fmt.Sprint("dainx eval -seed ", seeds[0]), Dims: []int{3, 4}, NNZ: 12,
		Methods: r.Spec.Methods, Ratios: []float64{0, 0.5}, Repeats: len(seeds),
		Base: Training{Seed: seeds[0], Layers: layers},
	}
	if err := r.WriteDir(dir, p); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestMerge(t *testing.T) {
	a := writeFake(t, []uint64{1, 2}, []int{8, 4})
	b := writeFake(t, []uint64{3, 4, 5}, []int{8, 4})
	res, cfg, err := Merge([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 5*2*2 || res.Seconds != 20 {
		t.Fatalf("%d runs, %v s; want 20 runs, 20 s", len(res.Runs), res.Seconds)
	}
	// Each split keeps one repeat number, and the numbers are 1…5.
	bySeed := map[uint64]int{}
	for _, r := range res.Runs {
		if n, ok := bySeed[r.Seed]; ok && n != r.Repeat {
			t.Errorf("seed %d has repeats %d and %d", r.Seed, n, r.Repeat)
		}
		bySeed[r.Seed] = r.Repeat
	}
	for s, n := range bySeed {
		if n != int(s) {
			t.Errorf("seed %d became repeat %d; want %d", s, n, s)
		}
	}
	if cfg.Repeats != 5 || len(cfg.Commands) != 2 || cfg.Command != "" || len(cfg.Seeds) != 5 {
		t.Errorf("provenance %+v", cfg)
	}
	c := res.Summarise().Cells["random-mlp"][0.5]
	if c.N != 5 || math.IsNaN(c.PPaired) || c.TPaired <= 0 {
		t.Errorf("random-mlp at 50%%: %+v", c)
	}
	// The merged output can itself be written and read back.
	dir := t.TempDir()
	if err := res.WriteDir(dir, cfg); err != nil {
		t.Fatal(err)
	}
	if back, _, err := Load(dir); err != nil || len(back.Runs) != 20 {
		t.Errorf("Load of the merge: %v", err)
	}
}

func TestMergeErrors(t *testing.T) {
	a := writeFake(t, []uint64{1, 2}, []int{8, 4})
	for _, tc := range []struct {
		name string
		dirs []string
		want string
	}{
		{"one output", []string{a}, "at least two"},
		{"same seed twice", []string{a, writeFake(t, []uint64{2, 3}, []int{8, 4})}, "same split"},
		{"other layers", []string{a, writeFake(t, []uint64{3}, []int{16, 4})}, "layers"},
		{"missing", []string{a, t.TempDir()}, "runs.json"},
	} {
		if _, _, err := Merge(tc.dirs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v; want one containing %q", tc.name, err, tc.want)
		}
	}
}
