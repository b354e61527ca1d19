package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestModelOutPredict: augment -model-out -split-out, then predict on the
// split's test cells, reproduces the report's rmse_after bit for bit; the
// saved tensors load in numpy without dainx and give the same
// predictions; bad models and bad cells are named errors.
func TestModelOutPredict(t *testing.T) {
	dir := t.TempDir()
	m, s := filepath.Join(dir, "m"), filepath.Join(dir, "s")
	code, stdout, stderr := runCLI(append([]string{"augment", "-input", "testdata/golden/input.tsv", "-backend", "cpu", "-model-out", m, "-model-out-all", "-split-out", s}, tiny...)...)
	if code != 0 {
		t.Fatalf("augment: exit %d: %s", code, stderr)
	}
	var rep struct {
		After float64 `json:"rmse_after"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"model", "theta", "predictor"} {
		for _, ext := range []string{".json", ".safetensors"} {
			if _, err := os.Stat(filepath.Join(m, f+ext)); err != nil {
				t.Errorf("-model-out-all: %v", err)
			}
		}
	}
	pred := filepath.Join(dir, "p.tsv")
	code, _, stderr = runCLI("predict", "-model", m, "-cells", filepath.Join(s, "test.tsv"), "-output", pred)
	if code != 0 {
		t.Fatalf("predict: exit %d: %s", code, stderr)
	}
	var prep struct {
		RMSE float64 `json:"rmse"`
		N    int     `json:"n_cells"`
	}
	if err := json.Unmarshal([]byte(stderr), &prep); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if prep.RMSE != rep.After {
		t.Errorf("predict's RMSE on the test cells %v, augment's rmse_after %v", prep.RMSE, rep.After)
	}

	// numpy, without dainx: parse the safetensors file and run the MLP.
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
T = {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], dtype="<f4").reshape(v["shape"]) for k, v in h.items() if k != "__metadata__"}
c = np.loadtxt(cells, ndmin=2)[:, :meta["order"]].astype(int) - meta["index_base"]
x = np.concatenate([T["embedding.%d" % i][c[:, i]] for i in range(meta["order"])], axis=1).astype(np.float64)
L = len(meta["layer_shapes"])
for l in range(L):
    x = x @ T["layers.%d.weight" % l].T.astype(np.float64) + T["layers.%d.bias" % l]
    if l < L - 1:
        x = np.maximum(x, 0)
want = np.loadtxt(pred, ndmin=2)[:, -1]
err = np.max(np.abs(x[:, 0] - want) / np.maximum(1, np.abs(want)))
assert err < 1e-4, err
print(len(want), "cells, max relative difference", err)
`
		out, err := exec.Command(py, "-c", script, m, filepath.Join(s, "test.tsv"), pred).CombinedOutput()
		if err != nil {
			t.Errorf("numpy: %v\n%s", err, out)
		}
		t.Logf("numpy: %s", strings.TrimSpace(string(out)))
	}

	// Bad models and bad cells.
	bad := filepath.Join(dir, "bad")
	os.MkdirAll(bad, 0o755)
	js, _ := os.ReadFile(filepath.Join(m, "model.json"))
	st, _ := os.ReadFile(filepath.Join(m, "model.safetensors"))
	cases := []struct {
		name, json, st, want string
	}{
		{"truncated", string(js), string(st[:len(st)/2]), "truncated"},
		{"version", strings.Replace(string(js), `"format_version": 1`, `"format_version": 9`, 1), string(st), "format version 9"},
		{"json", "{", string(st), "model.json"},
		{"shape", regexp.MustCompile(`"embedding_width": \d+`).ReplaceAllString(string(js), `"embedding_width": 7`), string(st), "embedding width"},
	}
	for _, c := range cases {
		os.WriteFile(filepath.Join(bad, "model.json"), []byte(c.json), 0o644)
		os.WriteFile(filepath.Join(bad, "model.safetensors"), []byte(c.st), 0o644)
		code, _, stderr := runCLI("predict", "-model", bad, "-cells", filepath.Join(s, "test.tsv"))
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, %q; want an error with %q", c.name, code, stderr, c.want)
		}
	}
	far := filepath.Join(dir, "far.tsv")
	os.WriteFile(far, []byte("0\t0\t0\t1\n5\t99999\t3\t2\n"), 0o644)
	code, _, stderr = runCLI("predict", "-model", m, "-cells", far)
	if code == 0 || !strings.Contains(stderr, "far.tsv:2:") || !strings.Contains(stderr, "mode 2") {
		t.Errorf("out-of-range cell: exit %d, %q", code, stderr)
	}
	os.WriteFile(far, []byte("0\t0\t0\t1\n5\t3\n"), 0o644)
	if code, _, stderr = runCLI("predict", "-model", m, "-cells", far); code == 0 || !strings.Contains(stderr, "far.tsv:2: want 3 indices") {
		t.Errorf("short line: exit %d, %q", code, stderr)
	}
	// Indices only: the same predictions, no RMSE.
	tb, _ := os.ReadFile(filepath.Join(s, "test.tsv"))
	var idxOnly strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(string(tb)), "\n") {
		f := strings.Split(l, "\t")
		idxOnly.WriteString(strings.Join(f[:3], " ") + "\n")
	}
	q, p2 := filepath.Join(dir, "q.txt"), filepath.Join(dir, "p2.tsv")
	os.WriteFile(q, []byte(idxOnly.String()), 0o644)
	code, _, stderr = runCLI("predict", "-model", m, "-cells", q, "-output", p2)
	if code != 0 || strings.Contains(stderr, "rmse") {
		t.Errorf("indices only: exit %d, %s", code, stderr)
	}
	if a, b := readTSV(t, pred), readTSV(t, p2); len(a) != len(b) || strings.Join(a[0], " ") != strings.Join(b[0], " ") || strings.Join(a[len(a)-1], " ") != strings.Join(b[len(b)-1], " ") {
		t.Errorf("indices only: predictions differ")
	}
	if code, _, stderr = runCLI("predict", "-model", filepath.Join(dir, "none"), "-cells", far); code == 0 || !strings.Contains(stderr, "none") {
		t.Errorf("missing model: exit %d, %q", code, stderr)
	}
}
