package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readTSV returns the tab-separated fields of every line of path.
func readTSV(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		out = append(out, strings.Split(l, "\t"))
	}
	return out
}

// TestOutputs: -scores-out has a line per training cell of -split-out's
// train.tsv, in its order, with α = |S|; -importance-out has a line per
// entity and each mode sums to 1; both in the input's index base (1 for
// .tns); -method takes eval's names and the report says which.
func TestOutputs(t *testing.T) {
	dir := t.TempDir()
	// The golden input as .tns (1-based).
	rows := readTSV(t, "testdata/golden/input.tsv")
	var tns strings.Builder
	for _, r := range rows {
		if strings.HasPrefix(r[0], "#") {
			continue
		}
		for j := 0; j < 3; j++ {
			v, _ := strconv.Atoi(r[j])
			tns.WriteString(strconv.Itoa(v+1) + " ")
		}
		tns.WriteString(r[3] + "\n")
	}
	in := filepath.Join(dir, "in.tns")
	if err := os.WriteFile(in, []byte(tns.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, imp, split := filepath.Join(dir, "s.tsv"), filepath.Join(dir, "imp.tsv"), filepath.Join(dir, "split")
	code, stdout, stderr := runCLI(append([]string{"augment", "-input", in, "-backend", "cpu", "-method", "dain-mix-avg", "-mix", "0.25",
		"-scores-out", sc, "-importance-out", imp, "-split-out", split}, tiny...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		NTrain  int     `json:"n_train"`
		Dims    []int   `json:"dims"`
		Method  string  `json:"method"`
		Variant string  `json:"variant"`
		Version string  `json:"version"`
		Mix     float64 `json:"mix"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Method != "dain-average" || rep.Variant != "dain-mix-avg" || rep.Version == "" {
		t.Errorf("report: method %q, variant %q, version %q", rep.Method, rep.Variant, rep.Version)
	}
	scores, train := readTSV(t, sc), readTSV(t, filepath.Join(split, "train.tsv"))
	if strings.Join(scores[0], " ") != "i1 i2 i3 value alpha score" || len(scores)-1 != rep.NTrain || len(train) != rep.NTrain {
		t.Fatalf("scores header %v, %d lines, train.tsv %d lines, n_train %d", scores[0], len(scores)-1, len(train), rep.NTrain)
	}
	for z, l := range scores[1:] {
		if strings.Join(l[:4], " ") != strings.Join(train[z], " ") {
			t.Fatalf("scores line %d: cell %v, train.tsv has %v", z+2, l[:4], train[z])
		}
		a, _ := strconv.ParseFloat(l[4], 32)
		s, _ := strconv.ParseFloat(l[5], 32)
		if a != math.Abs(s) {
			t.Fatalf("scores line %d: α %v, S %v", z+2, a, s)
		}
		if i, _ := strconv.Atoi(l[0]); i < 1 {
			t.Fatalf("scores line %d: index %d is not 1-based", z+2, i)
		}
	}
	ims := readTSV(t, imp)
	sums := map[string]float64{}
	count := map[string]int{}
	for _, l := range ims[1:] {
		x, _ := strconv.ParseFloat(l[2], 64)
		sums[l[0]] += x
		count[l[0]]++
	}
	for n, d := range rep.Dims {
		m := strconv.Itoa(n + 1)
		if count[m] != d || math.Abs(sums[m]-1) > 1e-9 {
			t.Errorf("mode %s: %d entities summing to %v; want %d summing to 1", m, count[m], sums[m], d)
		}
	}
}

// TestOutputsRefused: outputs that cannot be written are usage errors
// before any training.
func TestOutputsRefused(t *testing.T) {
	for _, c := range [][]string{
		{"-model-out-all"},
		{"-scores-out", "/nonexistent/dir/s.tsv"},
		{"-split-out", "/nonexistent/dir/split"},
		{"-method", "dain-tau3"},
	} {
		code, _, stderr := runCLI(append(append([]string{"augment"}, c...), tiny...)...)
		if code == 0 || !strings.Contains(stderr, strings.TrimPrefix(c[0], "-")) && !strings.Contains(stderr, "nonexistent") {
			t.Errorf("%v: exit %d, %s", c, code, stderr)
		}
	}
}
