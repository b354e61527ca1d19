package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFoldInBayesFM (issue 47): a bayes-fm model saved by augment takes
// new users through dainx fold-in: the grown model predicts the new
// users' held-out cells well (their user effects learnt from their
// cells), predicts every known cell exactly as the model read did, and
// -tune all is refused.
func TestFoldInBayesFM(t *testing.T) {
	dir := t.TempDir()
	val := func(u, i, c int) float64 { return 1 + 0.6*float64(u%5) + 0.4*float64(i%4) - 0.3*float64(c) }
	var train, fold, held strings.Builder
	k := 0
	for u := range 48 {
		for i := range 30 {
			for c := range 3 {
				if (u*7+i*3+c*5)%4 != 0 {
					continue
				}
				line := fmt.Sprintf("%d\t%d\t%d\t%g\n", u, i, c, val(u, i, c))
				switch {
				case u < 40:
					train.WriteString(line)
				case k%3 == 0:
					held.WriteString(line)
					k++
				default:
					fold.WriteString(line)
					k++
				}
			}
		}
	}
	paths := map[string]string{}
	for name, b := range map[string]*strings.Builder{"train": &train, "fold": &fold, "held": &held} {
		paths[name] = filepath.Join(dir, name+".tsv")
		os.WriteFile(paths[name], []byte(b.String()), 0o644)
	}
	m, m2 := filepath.Join(dir, "m"), filepath.Join(dir, "m2")
	code, _, stderr := runCLI(append([]string{"augment", "-input", paths["train"], "-backend", "cpu", "-final-model", "bayes-fm", "-bayes-samples", "40", "-bayes-priors", "mode", "-predictor", "bayes-fm", "-test-frac", "0", "-model-out", m}, tiny...)...)
	if code != 0 {
		t.Fatalf("augment: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI("fold-in", "-model", m, "-input", paths["fold"], "-model-out", m2, "-tune", "all", "-quiet"); code == 0 || !strings.Contains(stderr, "-tune all") {
		t.Errorf("-tune all: exit %d, %q", code, stderr)
	}
	code, stdout, stderr := runCLI("fold-in", "-model", m, "-input", paths["fold"], "-model-out", m2, "-quiet")
	if code != 0 {
		t.Fatalf("fold-in: exit %d: %s", code, stderr)
	}
	var rep struct {
		Kind        string `json:"kind"`
		NewEntities []int  `json:"new_entities"`
		Sweeps      int    `json:"sweeps"`
	}
	json.Unmarshal([]byte(stdout), &rep)
	if rep.Kind != "bayes-fm" || len(rep.NewEntities) != 3 || rep.NewEntities[0] != 8 || rep.Sweeps != 20 {
		t.Fatalf("report: %s", stdout)
	}
	// The new users' held-out cells: well below their values' spread.
	code, _, stderr = runCLI("predict", "-model", m2, "-cells", paths["held"])
	if code != 0 {
		t.Fatalf("predict: exit %d: %s", code, stderr)
	}
	var prep struct {
		RMSE float64 `json:"rmse"`
	}
	json.Unmarshal([]byte(stderr), &prep)
	// The same users trained from the start: augment on the training
	// cells and the fold-in cells, the same settings.
	both := filepath.Join(dir, "both.tsv")
	os.WriteFile(both, []byte(train.String()+fold.String()), 0o644)
	mAll := filepath.Join(dir, "mall")
	if code, _, stderr := runCLI(append([]string{"augment", "-input", both, "-backend", "cpu", "-final-model", "bayes-fm", "-bayes-samples", "40", "-bayes-priors", "mode", "-predictor", "bayes-fm", "-test-frac", "0", "-model-out", mAll}, tiny...)...); code != 0 {
		t.Fatalf("augment from the start: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI("predict", "-model", mAll, "-cells", paths["held"])
	var ref struct {
		RMSE float64 `json:"rmse"`
	}
	json.Unmarshal([]byte(stderr), &ref)
	t.Logf("new users' held-out cells: RMSE %.4f folded in, %.4f trained from the start", prep.RMSE, ref.RMSE)
	if code != 0 || !(prep.RMSE <= 1.05*ref.RMSE) {
		t.Errorf("new users' held-out RMSE %.4f folded in, above 1.05× the %.4f of a model trained with them (exit %d)", prep.RMSE, ref.RMSE, code)
	}
	// Known cells: the same predictions from both models.
	p1, p2 := filepath.Join(dir, "p1.tsv"), filepath.Join(dir, "p2.tsv")
	runCLI("predict", "-model", m, "-cells", paths["train"], "-output", p1)
	runCLI("predict", "-model", m2, "-cells", paths["train"], "-output", p2)
	a, _ := os.ReadFile(p1)
	b, _ := os.ReadFile(p2)
	if len(a) == 0 || string(a) != string(b) {
		t.Errorf("known cells: predictions differ after fold-in (%d and %d bytes)", len(a), len(b))
	}
}
