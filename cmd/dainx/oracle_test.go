package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dainx/dainx/tensor"
)

// TestOracleCLI: dainx synth -generator-out writes the generator with the
// tensor; dainx augment -values oracle -oracle FILE values the new cells
// by it (the report says so; each value is the generator's within the
// noise); dainx eval -values oracle runs and writes its forest plots; and
// every misuse is refused with a message that says what is wrong.
func TestOracleCLI(t *testing.T) {
	dir := t.TempDir()
	in, gen := filepath.Join(dir, "s.tsv"), filepath.Join(dir, "s.json")
	code, stdout, stderr := runCLI("synth", "-dims", "30,20,10", "-nnz", "1500", "-rank", "3", "-noise", "0.1", "-seed", "4", "-output", in, "-generator-out", gen)
	if code != exitOK || !strings.Contains(stdout, "wrote the generator to "+gen) {
		t.Fatalf("synth: exit %d, %q, %q", code, stdout, stderr)
	}
	g, err := tensor.ReadGenerator(gen)
	if err != nil {
		t.Fatal(err)
	}
	if g.Noise != 0.1 || g.Seed != 4 || g.Rank != 3 || g.NNZ != 1500 {
		t.Errorf("generator %v", g)
	}
	out := filepath.Join(dir, "aug.tsv")
	args := append([]string{"augment", "-input", in, "-backend", "cpu", "-method", "random", "-ratio", "0.5", "-values", "oracle", "-oracle", gen, "-output", out}, tiny...)
	code, stdout, stderr = runCLI(args...)
	if code != exitOK {
		t.Fatalf("augment -values oracle: exit %d: %s", code, stderr)
	}
	var rep struct {
		Values string `json:"values"`
		NAug   int    `json:"n_aug"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Values != "oracle" {
		t.Errorf("report values %q (%v)", rep.Values, err)
	}
	aug, err := tensor.ReadFile(out, tensor.ReadOptions{IndexBase: -1})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := g.CP()
	var ss float64
	for k := 0; k < aug.NNZ(); k++ {
		d := aug.Val[k] - m.Value(aug.Cell(k))
		ss += d * d
	}
	if rms := math.Sqrt(ss / float64(aug.NNZ())); aug.NNZ() != rep.NAug || rms < 0.08 || rms > 0.12 {
		t.Errorf("%d new cells (report %d) differ from the generator by an RMS of %.4f; want the noise 0.1", aug.NNZ(), rep.NAug, rms)
	}

	evalOut := filepath.Join(dir, "eval")
	eargs := append([]string{"eval", "-input", in, "-backend", "cpu", "-methods", "dain,degree,random-costco", "-ratios", "0,0.2", "-repeats", "1",
		"-rank", "4", "-channels", "4", "-values", "oracle", "-oracle", gen, "-out", evalOut}, tiny...)
	if code, _, stderr := runCLI(eargs...); code != exitOK {
		t.Fatalf("eval -values oracle: exit %d: %s", code, stderr)
	}
	for _, f := range []string{"forest-degree-20.png", "forest-no-augmentation-20.png", "rmse.png"} {
		if _, err := os.Stat(filepath.Join(evalOut, f)); err != nil {
			t.Errorf("eval wrote no %s: %v", f, err)
		}
	}

	other := filepath.Join(dir, "other.tsv")
	if code, _, stderr := runCLI("synth", "-dims", "30,20,10", "-nnz", "1500", "-rank", "3", "-noise", "0.1", "-seed", "5", "-output", other); code != exitOK {
		t.Fatalf("synth: %s", stderr)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"format":"dainx synth generator","version":1,"model":"cp-uniform","dims":[30,20,10],"nnz":1500,"rank":3,"noise":-1,"seed":4}`), 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-input", in, "-values", "oracle"}, exitUsage, "-values oracle needs -oracle FILE"},
		{[]string{"-input", in, "-oracle", gen}, exitUsage, "-oracle " + gen + " is for -values oracle"},
		{[]string{"-input", in, "-values", "magic"}, exitUsage, `values "magic": want one of predictor, oracle`},
		{[]string{"-input", in, "-values", "oracle", "-oracle", in}, exitFailure, "not a generator file"},
		{[]string{"-input", in, "-values", "oracle", "-oracle", bad}, exitFailure, "noise -1"},
		{[]string{"-input", in, "-values", "oracle", "-oracle", filepath.Join(dir, "none.json")}, exitFailure, "none.json"},
		{[]string{"-input", other, "-values", "oracle", "-oracle", gen}, exitFailure, "describes another tensor"},
		{[]string{"-values", "oracle", "-oracle", gen}, exitFailure, "are not the generator's"}, // the demo tensor
	} {
		a := append(append([]string{"augment", "-backend", "cpu", "-method", "random"}, c.args...), tiny...)
		code, _, stderr := runCLI(a...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}
