package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestModelOutBayesFM (issue 47): augment -preset accurate's bayes-fm Θ′
// is saved by -model-out; predict on the split's test cells reproduces
// rmse_after (to float64 summation order), numpy computes the same
// predictions from the documented rule without dainx, -model-samples
// keeps that many samples, and a run on a table of IDs with -test-frac 0
// saves a model that predicts a CSV of IDs.
func TestModelOutBayesFM(t *testing.T) {
	dir := t.TempDir()
	bayesFlags := []string{"-backend", "cpu", "-final-model", "bayes-fm", "-bayes-samples", "12", "-bayes-priors", "mode"}
	m, s := filepath.Join(dir, "m"), filepath.Join(dir, "s")
	code, stdout, stderr := runCLI(append(append([]string{"augment", "-input", "testdata/golden/input.tsv", "-model-out", m, "-split-out", s}, bayesFlags...), tiny...)...)
	if code != 0 {
		t.Fatalf("augment: exit %d: %s", code, stderr)
	}
	var rep struct {
		After float64 `json:"rmse_after"`
		Final string  `json:"final_model"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Kind    string    `json:"kind"`
		Samples int       `json:"samples"`
		Clamp   []float64 `json:"clamp"`
	}
	js, err := os.ReadFile(filepath.Join(m, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(js, &meta)
	if meta.Kind != "bayes-fm" || meta.Samples != 12 || len(meta.Clamp) != 2 {
		t.Fatalf("model.json: %s", js)
	}
	pred := filepath.Join(dir, "p.tsv")
	code, _, stderr = runCLI("predict", "-model", m, "-cells", filepath.Join(s, "test.tsv"), "-output", pred)
	if code != 0 {
		t.Fatalf("predict: exit %d: %s", code, stderr)
	}
	var prep struct {
		RMSE float64 `json:"rmse"`
		Kind string  `json:"kind"`
	}
	if err := json.Unmarshal([]byte(stderr), &prep); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if prep.Kind != "bayes-fm" || math.Abs(prep.RMSE/rep.After-1) > 1e-12 {
		t.Errorf("predict: kind %s, RMSE on the test cells %v; augment's rmse_after %v", prep.Kind, prep.RMSE, rep.After)
	}

	// numpy, without dainx: the mean over the samples of each sample's
	// FM prediction, clamped by clamp_rule (docs/model-format.md).
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Logf("numpy check skipped: %v", err)
	} else {
		script := `
import json, struct, sys, numpy as np
d, cells, pred = sys.argv[1], sys.argv[2], sys.argv[3]
meta = json.load(open(d + "/model.json"))
b = open(d + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); data = b[8 + n:]
T = {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], dtype="<f4").reshape(v["shape"]).astype(np.float64) for k, v in h.items() if k != "__metadata__"}
c = np.loadtxt(cells, ndmin=2)[:, :meta["order"]].astype(int) - meta["index_base"]
K, (lo, hi) = meta["rank"], meta["clamp"]
e = np.stack([T["embedding.%d" % i][:, c[:, i], :] for i in range(meta["order"])], axis=2)  # (S, cells, N, K+1)
f = e[..., :K]
y = T["w0"][:, None] + e[..., K].sum(axis=2) + 0.5 * ((f.sum(axis=2) ** 2).sum(axis=-1) - (f ** 2).sum(axis=(2, 3)))
y = np.clip(y.mean(axis=0), lo, hi) if meta.get("clamp_rule", "samples") == "mean" else np.clip(y, lo, hi).mean(axis=0)
want = np.loadtxt(pred, ndmin=2)[:, -1]
err = np.max(np.abs(y - want) / np.maximum(1, np.abs(want)))
assert err < 1e-6, err
print(len(want), "cells, max relative difference", err)
`
		out, err := exec.Command(py, "-c", script, m, filepath.Join(s, "test.tsv"), pred).CombinedOutput()
		if err != nil {
			t.Errorf("numpy: %v\n%s", err, out)
		}
		t.Logf("numpy: %s", strings.TrimSpace(string(out)))
	}

	// -model-samples: a smaller model, whose predictions set rmse_after.
	m5 := filepath.Join(dir, "m5")
	code, stdout, stderr = runCLI(append(append([]string{"augment", "-input", "testdata/golden/input.tsv", "-model-out", m5, "-model-samples", "5"}, bayesFlags...), tiny...)...)
	if code != 0 {
		t.Fatalf("augment -model-samples 5: exit %d: %s", code, stderr)
	}
	js, _ = os.ReadFile(filepath.Join(m5, "model.json"))
	json.Unmarshal(js, &meta)
	if meta.Samples != 5 {
		t.Errorf("-model-samples 5 saved %d samples", meta.Samples)
	}
	for _, bad := range [][]string{{"-model-samples", "3"}, {"-model-out", m5, "-model-samples", "-1"}} {
		if code, _, stderr := runCLI(append(append([]string{"augment", "-input", "testdata/golden/input.tsv"}, bad...), tiny...)...); code == 0 || !strings.Contains(stderr, "-model-samples") {
			t.Errorf("augment %v: exit %d, %q", bad, code, stderr)
		}
	}

	// -final-model ensemble: the stack and its members saved; predict on
	// the test cells gives rmse_after; fold-in refuses it by name.
	e, es := filepath.Join(dir, "e"), filepath.Join(dir, "es")
	code, stdout, stderr = runCLI(append(append([]string{"augment", "-input", "testdata/golden/input.tsv", "-final-model", "ensemble", "-model-out", e, "-split-out", es}, bayesFlags[:2]...), append([]string{"-bayes-samples", "8"}, tiny...)...)...)
	if code != 0 {
		t.Fatalf("augment -final-model ensemble: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	js, _ = os.ReadFile(filepath.Join(e, "model.json"))
	var em struct {
		Kind    string    `json:"kind"`
		Members []string  `json:"members"`
		Weights []float64 `json:"weights"`
	}
	json.Unmarshal(js, &em)
	if em.Kind != "ensemble" || len(em.Members) < 2 || em.Members[len(em.Members)-1] != "bayes-fm" || len(em.Weights) != len(em.Members)+1 {
		t.Fatalf("ensemble model.json: %s", js)
	}
	for _, k := range em.Members {
		if _, err := os.Stat(filepath.Join(e, "model."+k+".safetensors")); err != nil {
			t.Errorf("member %s: %v", k, err)
		}
	}
	code, _, stderr = runCLI("predict", "-model", e, "-cells", filepath.Join(es, "test.tsv"), "-output", filepath.Join(dir, "pe.tsv"))
	if code != 0 {
		t.Fatalf("predict with the ensemble: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(stderr), &prep); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if prep.Kind != "ensemble" || math.Abs(prep.RMSE/rep.After-1) > 1e-12 {
		t.Errorf("predict with the ensemble: kind %s, RMSE on the test cells %v; augment's rmse_after %v", prep.Kind, prep.RMSE, rep.After)
	}
	if code, _, stderr := runCLI("fold-in", "-model", e, "-input", filepath.Join(es, "test.tsv"), "-model-out", filepath.Join(dir, "fe")); code == 0 || !strings.Contains(stderr, "is an ensemble") {
		t.Errorf("fold-in of an ensemble: exit %d, %q", code, stderr)
	}

	// A table of IDs, every cell for training (-test-frac 0): the saved
	// model predicts a CSV of IDs into a CSV of IDs.
	tb := makeSynthTable()
	csvPath := filepath.Join(dir, "ratings.csv")
	os.WriteFile(csvPath, []byte(tb.csv()), 0o644)
	mt := filepath.Join(dir, "mt")
	code, _, stderr = runCLI(append(append([]string{"augment", "-input", csvPath, "-index", "user,item,time:day", "-value", "rating", "-model-out", mt, "-test-frac", "0"}, bayesFlags...), tiny...)...)
	if code != 0 {
		t.Fatalf("augment on a table: exit %d: %s", code, stderr)
	}
	rows := strings.Split(strings.TrimSpace(tb.csv()), "\n")
	q := filepath.Join(dir, "q.csv")
	os.WriteFile(q, []byte(strings.Join(rows[:6], "\n")+"\n"), 0o644)
	out := filepath.Join(dir, "out.csv")
	code, _, stderr = runCLI("predict", "-model", mt, "-input", q, "-index", "user,item,time", "-output", out)
	if code != 0 {
		t.Fatalf("predict on IDs: exit %d: %s", code, stderr)
	}
	got := readCSVRows(t, out)
	if len(got) != 6 || !slices.Equal(got[0], []string{"user", "item", "time", "rating"}) || got[1][0] != strings.Split(rows[1], ",")[1] {
		t.Fatalf("predictions by ID: %v", got)
	}
}
