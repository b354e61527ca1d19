package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPredictHostileModel: dainx predict on a model.json whose dims say
// 4·10¹² is exit 1 with the file and field named (it was a fatal
// out-of-memory), a truncated safetensors file likewise, and -batch 10¹²
// is a usage error (exit 2; it was a runtime panic).
func TestPredictHostileModel(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	code, _, stderr := runCLI(append([]string{"augment", "-input", "testdata/golden/input.tsv", "-backend", "cpu", "-model-out", m}, tiny...)...)
	if code != 0 {
		t.Fatalf("augment -model-out: exit %d: %s", code, stderr)
	}
	cells := filepath.Join(dir, "cells.tsv")
	os.WriteFile(cells, []byte("0\t0\t0\n"), 0o644)
	js, _ := os.ReadFile(filepath.Join(m, "model.json"))
	st, _ := os.ReadFile(filepath.Join(m, "model.safetensors"))
	var meta map[string]any
	json.Unmarshal(js, &meta)
	dims := meta["dims"].([]any)
	dims[1] = 4e12
	hostile, _ := json.Marshal(meta)
	for _, tc := range []struct {
		name, file string
		data       []byte
		args       []string
		code       int
		want       string
	}{
		{"dims 4e12", "model.json", hostile, nil, 1, "model.json: dims[1] = 4000000000000: above the limit 2147483647"},
		{"truncated", "model.safetensors", st[:len(st)-9], nil, 1, "model.safetensors: tensor"},
		{"batch", "", nil, []string{"-batch", "1000000000000"}, 2, "-batch 1000000000000: want 1…16777216 cells, or 0 for the model's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			os.Mkdir(h, 0o755)
			os.WriteFile(filepath.Join(h, "model.json"), js, 0o644)
			os.WriteFile(filepath.Join(h, "model.safetensors"), st, 0o644)
			if tc.file != "" {
				os.WriteFile(filepath.Join(h, tc.file), tc.data, 0o644)
			}
			code, _, stderr := runCLI(append([]string{"predict", "-model", h, "-cells", cells}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "goroutine ") {
				t.Errorf("exit %d, want %d with %q: %s", code, tc.code, tc.want, stderr)
			}
			if tc.file != "" && !strings.Contains(stderr, filepath.Join(h, tc.file)) {
				t.Errorf("the file is not named: %s", stderr)
			}
		})
	}
}

// TestAugmentRatioCaps: -ratio 1e300 (whose cell count overflowed to a
// negative int and panicked in sampling) and -ratio 0 (no cell drawn,
// yet "improved": true) are usage errors, exit 2.
func TestAugmentRatioCaps(t *testing.T) {
	for _, tc := range []struct{ ratio, want string }{
		{"1e300", "-ratio 1e+300: above the limit 1000 (new cells per training cell)"},
		{"0", "-ratio must be > 0; 0 draws no cells"},
	} {
		code, stdout, stderr := runCLI(append([]string{"augment", "-input", "testdata/golden/input.tsv", "-backend", "cpu", "-ratio", tc.ratio}, tiny...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("-ratio %s: exit %d, stdout %q, stderr %s; want exit 2 with %q", tc.ratio, code, stdout, stderr, tc.want)
		}
	}
}
