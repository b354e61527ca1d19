package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/nn"
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
		{"shape", regexp.MustCompile(`"embedding_width": \d+`).ReplaceAllString(string(js), `"embedding_width": 7`), string(st), "embedding_width 7"},
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

// TestPredictSavedMLP: a model built with nn.NewMLP and saved with
// model.Save (index base 1) predicts, through dainx predict, exactly what
// the net predicts, in the cells' index base, to -output or standard
// output; the RMSE is √(Net.Evaluate) over the same cells; -index-base
// overrides the model's; bad cells are file:line errors; every flag has
// help text.
func TestPredictSavedMLP(t *testing.T) {
	dir := t.TempDir()
	dims := []int{4, 3, 5}
	net, err := nn.NewMLP(cpu.New(), nn.Config{Dims: dims, Layers: []int{6, 5}, Capacity: 8}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer net.Free()
	m := filepath.Join(dir, "m")
	if err := model.Save(m, model.DefaultName, net, model.Meta{Version: "test", Role: "theta-prime", IndexBase: 1}); err != nil {
		t.Fatal(err)
	}
	// 19 cells (more than one batch of 8), 1-based, with values.
	rng := rand.New(rand.NewPCG(2, 2))
	var idx []int32
	var vals []float64
	var in, in0 strings.Builder
	in.WriteString("# query cells\n\n")
	for k := 0; k < 19; k++ {
		var f, f0 []string
		for _, d := range dims {
			i := rng.IntN(d)
			idx = append(idx, int32(i))
			f, f0 = append(f, strconv.Itoa(i+1)), append(f0, strconv.Itoa(i))
		}
		v := rng.Float64() * 5
		vals = append(vals, v)
		fmt.Fprintf(&in, "%s\t%v\n", strings.Join(f, "\t"), v)
		fmt.Fprintf(&in0, "%s %v\n", strings.Join(f0, " "), v)
	}
	set := net.NewSet(idx, vals)
	defer set.Free()
	pred, err := net.Predict(set)
	if err != nil {
		t.Fatal(err)
	}
	mse, err := net.Evaluate(set)
	if err != nil {
		t.Fatal(err)
	}
	cells, cells0 := filepath.Join(dir, "cells.tsv"), filepath.Join(dir, "cells0.txt")
	os.WriteFile(cells, []byte(in.String()), 0o644)
	os.WriteFile(cells0, []byte(in0.String()), 0o644)
	check := func(name, text string, base int) {
		t.Helper()
		lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
		if len(lines) != len(pred) {
			t.Fatalf("%s: %d lines, want %d", name, len(lines), len(pred))
		}
		for k, l := range lines {
			f := strings.Split(l, "\t")
			var want []string
			for _, i := range idx[3*k : 3*k+3] {
				want = append(want, strconv.Itoa(int(i)+base))
			}
			want = append(want, strconv.FormatFloat(float64(pred[k]), 'g', -1, 32))
			if !slices.Equal(f, want) {
				t.Errorf("%s line %d: %q, want %q", name, k+1, f, want)
			}
		}
	}

	out, rep := filepath.Join(dir, "p.tsv"), filepath.Join(dir, "r.json")
	code, stdout, stderr := runCLI("predict", "-model", m, "-cells", cells, "-output", out, "-report", rep) // -batch: the model's 8
	if code != 0 || stdout != "" {
		t.Fatalf("predict: exit %d, stdout %q: %s", code, stdout, stderr)
	}
	b, _ := os.ReadFile(out)
	check("-output", string(b), 1)
	var r struct {
		Model   string   `json:"model"`
		N       int      `json:"n_cells"`
		RMSE    *float64 `json:"rmse"`
		Trained string   `json:"trained_by"`
		Version string   `json:"version"`
		Seconds *float64 `json:"seconds"`
	}
	b, _ = os.ReadFile(rep)
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report: %v: %s", err, b)
	}
	if r.Model != m || r.N != 19 || r.RMSE == nil || *r.RMSE != math.Sqrt(mse) || r.Trained != "test" || r.Version == "" || r.Seconds == nil {
		t.Errorf("report %s; want rmse %v", b, math.Sqrt(mse))
	}
	// Standard output, and 0-based cells with -index-base 0.
	if code, stdout, stderr = runCLI("predict", "-model", m, "-cells", cells0, "-index-base", "0", "-batch", "8"); code != 0 {
		t.Fatalf("predict -index-base 0: exit %d: %s", code, stderr)
	}
	check("stdout", stdout, 0)

	// Bad cells: file:line, the mode and the model's range.
	for _, c := range []struct{ text, want string }{
		{"1 1 1 2\n1 4 1 2\n", "bad.tsv:2: index 4 of mode 2 is outside the model's 1…3"},
		{"# c\n0 1 1 2\n", "bad.tsv:2: index 0 of mode 1 is outside the model's 1…4"},
		{"1 1 1 2\n1 1\n", "bad.tsv:2: want 3 indices, optionally a value, got 2 fields"},
		{"1 1 1 2 3 4\n", "bad.tsv:1: want 3 indices, optionally a value, got 6 fields"},
		{"1 1 1 2\n1 1 1\n", "bad.tsv:2: 3 fields, the lines before had 4"},
		{"1 x 1\n", `bad.tsv:1: index "x" of mode 2 is not an integer`},
		{"1 1 1 nan\n", `bad.tsv:1: value "nan" is not a finite number`},
		// Issue 31: out-of-range integers say so; a huge field is cut to
		// 80 characters; a line past the limit names its line.
		{"1 1 1 2\n1 100000000000000000000 1 2\n", "bad.tsv:2: index \"100000000000000000000\" of mode 2 is out of range (the model's indices are 1…3)"},
		{"1 " + strings.Repeat("x", 10<<20) + " 1\n", `bad.tsv:1: index "` + strings.Repeat("x", 80) + `"… (10485760 bytes) of mode 2 is not an integer`},
		{"1 1 1 2\n1 1 1 " + strings.Repeat("7", 17<<20) + "\n", "bad.tsv:2: line longer than 16 MiB"},
	} {
		bad := filepath.Join(dir, "bad.tsv")
		os.WriteFile(bad, []byte(c.text), 0o644)
		code, _, stderr := runCLI("predict", "-model", m, "-cells", bad)
		if code != exitFailure || !strings.Contains(stderr, c.want) || len(stderr) > 1000 {
			t.Errorf("%.40q: exit %d, %.300q; want exit 1 and %.200q", c.text, code, stderr, c.want)
		}
	}
	if code, _, stderr := runCLI("predict", "-model", m, "-cells", cells, "-index-base", "-3"); code != exitUsage || !strings.Contains(stderr, "-index-base -3") {
		t.Errorf("-index-base -3: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("predict", "-cells", cells); code != exitUsage || !strings.Contains(stderr, "-model and -cells are required") {
		t.Errorf("no -model: exit %d, %q", code, stderr)
	}
	// Help: every flag, each with its text.
	code, _, stderr = runCLI("predict", "-h")
	if code != exitOK {
		t.Errorf("-h: exit %d", code)
	}
	for _, f := range []string{"model", "cells", "output", "report", "format", "index-base", "backend", "batch"} {
		if i := strings.Index(stderr, "  -"+f+" "); i < 0 || len(strings.TrimSpace(stderr[i:min(i+120, len(stderr))])) < 40 {
			t.Errorf("-h: no text for -%s:\n%s", f, stderr)
		}
	}
}
