package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/tensor"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// tiny are flags that make a run take well under a second.
var tiny = []string{"-layers", "12,8", "-epochs", "2", "-batch", "64", "-quiet"}

// sparseCell returns the i-th of distinct cells spread over a 40×30×20 grid.
func sparseCell(i int) (int, int, int) {
	k := (i * 7919) % (40 * 30 * 20)
	return k % 40, (k / 40) % 30, k / 1200
}

func writeTSV(t *testing.T, dir, name string, lines int) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < lines; i++ {
		x, y, z := sparseCell(i)
		fmt.Fprintf(&b, "%d\t%d\t%d\t%d.5\n", x, y, z, 1+i%5)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAugmentWritesOutputAndReport(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "x.tsv", 1500)
	out, rep := filepath.Join(dir, "aug.tsv"), filepath.Join(dir, "report.json")
	args := append([]string{"augment", "-input", in, "-output", out, "-report", rep, "-backend", "cpu", "-ratio", "0.3"}, tiny...)
	code, stdout, stderr := runCLI(args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout)
	}
	for _, k := range []string{"rmse_before", "rmse_after", "n_train", "n_val", "n_test", "n_aug", "best_epoch", "backend", "seed", "seconds"} {
		if _, ok := r[k]; !ok {
			t.Errorf("report lacks %q", k)
		}
	}
	for _, k := range []string{"train", "influence", "entity", "sample", "predict", "retrain", "total"} {
		if _, ok := r["seconds"].(map[string]any)[k]; !ok {
			t.Errorf("report seconds lack %q", k)
		}
	}
	saved, err := os.ReadFile(rep)
	if err != nil || !bytes.Equal(saved, []byte(stdout)) {
		t.Errorf("-report file differs from standard output (%v)", err)
	}
	aug, err := tensor.ReadFile(out, tensor.ReadOptions{Format: tensor.TSV, IndexBase: -1})
	if err != nil {
		t.Fatal(err)
	}
	if n := int(r["n_aug"].(float64)); aug.NNZ() != n || n != int(0.3*r["n_train"].(float64)) {
		t.Errorf("output holds %d cells, report n_aug %d", aug.NNZ(), n)
	}
	// Deterministic: the same command writes the same file.
	out2 := filepath.Join(dir, "aug2.tsv")
	args[4] = out2
	if code, _, stderr := runCLI(args...); code != exitOK {
		t.Fatal(stderr)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(out2)
	if !bytes.Equal(a, b) {
		t.Error("same seed, different output files")
	}
}

func TestAugmentTNSKeepsBase(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "x.tns")
	var b strings.Builder
	b.WriteString("# a FROSTT tensor, 1-based\n")
	for i := 0; i < 1200; i++ {
		x, y, z := sparseCell(i)
		fmt.Fprintf(&b, "%d %d %d %d\n", x+1, y+1, z+1, 1+i%3)
	}
	os.WriteFile(in, []byte(b.String()), 0o644)
	out := filepath.Join(dir, "aug.tns")
	code, _, stderr := runCLI(append([]string{"augment", "-input", in, "-output", out, "-backend", "cpu"}, tiny...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, _ := os.ReadFile(out)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] == "0" || f[1] == "0" || f[2] == "0" {
			t.Fatalf("output line %q is not a 1-based .tns cell", line)
		}
	}
}

func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.tsv")
	os.WriteFile(bad, []byte("1\t2\t3\t4.0\n1\t2\t3.5\t1.0\n"), 0o644)
	dup := filepath.Join(dir, "dup.tsv")
	os.WriteFile(dup, []byte("1\t2\t3\t4.0\n0\t0\t0\t1\n1\t2\t3\t2.0\n"), 0o644)
	out := filepath.Join(dir, "out.tsv")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"augment", "-input", bad, "-output", out}, exitFailure, "bad.tsv:2:"},
		{[]string{"augment", "-input", dup, "-output", out}, exitFailure, "dup.tsv:3:"},
		{[]string{"augment", "-input", filepath.Join(dir, "missing.tsv")}, exitFailure, "missing.tsv"},
		{[]string{"augment", "-ratio", "-1"}, exitUsage, "ratio"},
		{[]string{"augment", "-layers", "100,0"}, exitUsage, "positive integer"},
		{[]string{"augment", "-layers", "100,10"}, exitUsage, "multiple of the tensor order 3"},
		{[]string{"augment", "-backend", "tpu"}, exitUsage, "want auto, cpu or cuda"},
		{[]string{"augment", "-precision", "fp16"}, exitUsage, "want fp32, tf32 or 3xtf32"},
		{[]string{"augment", "-backend", "cpu", "-precision", "tf32"}, exitUsage, "is for -backend cuda"},
		{[]string{"augment", "-device", "-1"}, exitUsage, "device ordinal"},
		{[]string{"augment", "-predictor", "xgboost"}, exitUsage, "predictor"},
		{[]string{"augment", "-method", "magic"}, exitUsage, "method"},
		{[]string{"augment", "-output", filepath.Join(dir, "no", "such", "dir.tsv")}, exitFailure, "does not exist"},
		{[]string{"augment", "stray"}, exitUsage, "unexpected argument"},
		{[]string{"frobnicate"}, exitUsage, "unknown command"},
		{nil, exitUsage, "Usage"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("dainx %v: exit %d, stderr %q; want exit %d mentioning %q", c.args, code, stderr, c.code, c.msg)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed run left %s behind", out)
	}
}

func TestBackendCUDAWithoutDevice(t *testing.T) {
	if be, err := newCUDA(0, compute.FP32); err == nil {
		be.Close()
		t.Skip("a CUDA device is present")
	}
	code, _, stderr := runCLI("augment", "-backend", "cuda", "-quiet")
	if code != exitFailure || !strings.Contains(stderr, "-backend cuda:") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestHelpListsEveryFlag(t *testing.T) {
	code, _, stderr := runCLI("augment", "-h")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, f := range []string{"input", "output", "report", "ratio", "seed", "layers", "epochs", "batch", "lr", "patience", "test-frac", "val-frac", "backend", "device", "precision", "index-base", "quiet", "predictor", "format"} {
		if !strings.Contains(stderr, "-"+f) {
			t.Errorf("augment -h does not mention -%s", f)
		}
	}
}

// TestEvalMerge runs two tiny evaluations with different seeds and merges
// them, then checks the merge's usage and overlap errors.
func TestEvalMerge(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "t.tsv", 600)
	outs := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
	for i, seed := range []string{"1", "3"} {
		args := append([]string{"eval", "-input", in, "-methods", "dain,random-mlp", "-ratios", "0,0.2", "-repeats", "2",
			"-seed", seed, "-rank", "4", "-channels", "4", "-out", outs[i]}, tiny...)
		if code, _, stderr := runCLI(args...); code != exitOK {
			t.Fatalf("eval -seed %s: exit %d: %s", seed, code, stderr)
		}
	}
	merged := filepath.Join(dir, "merged")
	code, stdout, stderr := runCLI("eval", "-merge", strings.Join(outs, ","), "-out", merged)
	if code != exitOK || !strings.Contains(stdout, "merged 2 outputs (16 runs)") {
		t.Fatalf("merge: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	md, err := os.ReadFile(filepath.Join(merged, "summary.md"))
	if err != nil || !strings.Contains(string(md), "Merged") || !strings.Contains(string(md), "4 repeats") {
		t.Errorf("summary.md: %v\n%s", err, md)
	}
	if code, _, stderr := runCLI("eval", "-merge", strings.Join(outs, ",")); code != exitUsage || !strings.Contains(stderr, "-out") {
		t.Errorf("merge without -out: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("eval", "-merge", outs[0]+","+outs[0], "-out", filepath.Join(dir, "x")); code != exitFailure || !strings.Contains(stderr, "same split") {
		t.Errorf("merge of one output with itself: exit %d, %q", code, stderr)
	}
}

// TestEvalResume runs one repeat, then resumes to two: the first repeat's
// runs are kept as they were; -resume with another seed is refused.
func TestEvalResume(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "t.tsv", 600)
	out := filepath.Join(dir, "out")
	args := func(repeats, seed string, extra ...string) []string {
		a := append([]string{"eval", "-input", in, "-methods", "dain,random-mlp", "-ratios", "0,0.2", "-repeats", repeats,
			"-seed", seed, "-rank", "4", "-channels", "4", "-out", out}, tiny...)
		return append(a, extra...)
	}
	if code, _, stderr := runCLI(args("1", "1")...); code != exitOK {
		t.Fatalf("eval: exit %d: %s", code, stderr)
	}
	first, err := os.ReadFile(filepath.Join(out, "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(args("2", "1", "-resume")...); code != exitOK {
		t.Fatalf("eval -resume: exit %d: %s", code, stderr)
	}
	both, _ := os.ReadFile(filepath.Join(out, "runs.csv"))
	lines := strings.Split(strings.TrimSpace(string(both)), "\n")
	if len(lines) != 9 || !strings.HasPrefix(string(both), strings.TrimSpace(string(first))) {
		t.Errorf("after -resume, runs.csv does not start with the first repeat's runs:\n%s\nthen\n%s", first, both)
	}
	if code, _, stderr := runCLI(args("3", "2", "-resume")...); code != exitFailure || !strings.Contains(stderr, "different -seed") {
		t.Errorf("-resume with another seed: exit %d, %q", code, stderr)
	}
}

// TestAugmentOutputFormat checks that -output's extension chooses the
// format of the augmented cells (a .tsv input written as .bin and .tns, and
// a name without a known extension in the input's format).
func TestAugmentOutputFormat(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "in.tsv", 1500)
	for _, c := range []struct {
		name   string
		format tensor.Format
	}{{"aug.bin", tensor.BIN}, {"aug.tns.gz", tensor.TNS}, {"aug.out", tensor.TSV}} {
		out := filepath.Join(dir, c.name)
		code, _, stderr := runCLI(append([]string{"augment", "-input", in, "-output", out, "-backend", "cpu", "-ratio", "0.3", "-quiet"}, tiny...)...)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", c.name, code, stderr)
		}
		if _, err := tensor.ReadFile(out, tensor.ReadOptions{Format: c.format, IndexBase: -1}); err != nil {
			t.Errorf("%s is not %v: %v", c.name, c.format, err)
		}
	}
}

// TestEvalInRunFlags: eval takes -influence in-run's settings for the
// methods dain-in-run and dain-in-run-signed and records them, so that a
// resume with other values is refused.
func TestEvalInRunFlags(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "t.tsv", 600)
	out := filepath.Join(dir, "out")
	args := func(every string, extra ...string) []string {
		a := append([]string{"eval", "-input", in, "-methods", "dain-in-run", "-ratios", "0,0.2", "-repeats", "1",
			"-influence-every", every, "-influence-val-sample", "50", "-rank", "4", "-channels", "4", "-out", out}, tiny...)
		return append(a, extra...)
	}
	if code, _, stderr := runCLI(args("3")...); code != exitOK {
		t.Fatalf("eval: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "runs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Config struct {
			Base struct {
				Every  int `json:"influence_every"`
				Sample int `json:"influence_val_sample"`
			} `json:"base"`
		} `json:"config"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Config.Base.Every != 3 || r.Config.Base.Sample != 50 {
		t.Errorf("runs.json records influence_every %d, influence_val_sample %d (%v); want 3 and 50", r.Config.Base.Every, r.Config.Base.Sample, err)
	}
	if code, _, stderr := runCLI(args("4", "-repeats", "2", "-resume")...); code != exitFailure || !strings.Contains(stderr, "influence_every") {
		t.Errorf("-resume with another -influence-every: exit %d, %q", code, stderr)
	}
}
