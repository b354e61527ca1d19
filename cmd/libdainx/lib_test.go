package main

import (
	"context"
	"flag"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dainx/dainx/cmd/internal/cli"
)

func TestBuildTensor(t *testing.T) {
	x, err := buildTensor([]int32{0, 1, 2, 3, 1, 0}, []float64{1, 2, 3}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := x.Dims; len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Errorf("dims %v, want [3 4]", got)
	}
	for _, c := range []struct {
		idx   []int32
		val   []float64
		order int
		want  string
	}{
		{[]int32{0, 1}, []float64{1}, 0, "order 0"},
		{nil, nil, 2, "nnz 0"},
		{[]int32{0, -1}, []float64{1}, 2, "cell 0 (0, -1): index -1 in mode 2 is negative"},
		{[]int32{0, math.MaxInt32}, []float64{1}, 2, "too large"},
		{[]int32{0, 1}, []float64{math.NaN()}, 2, "value NaN is not finite"},
		{[]int32{0, 1, 0, 1}, []float64{1, 2}, 2, "cell 1 (0, 1) duplicates cell 0"},
	} {
		_, err := buildTensor(c.idx, c.val, c.order)
		if err == nil || !strings.Contains(err.Error(), c.want) || codeOf(err) != codeInput {
			t.Errorf("buildTensor(%v, %v, %d): %v, want an input error with %q", c.idx, c.val, c.order, err, c.want)
		}
	}
}

// TestOptions: every flag of `dainx augment` but -input is an option, with
// its JSON value; unknown keys and wrong kinds are input errors.
func TestOptions(t *testing.T) {
	fs := flag.NewFlagSet("dainx augment", flag.ContinueOnError)
	a := cli.NewAugment(fs)
	err := setOptions(fs, `{"ratio":0.25,"seed":7,"layers":"48,16","epochs":3,"backend":"cpu","quiet":true,"test-frac":"0.2","costco-lr":1e-4,"embedding-optimizer":"sparse-adam"}`, augmentSkip)
	if err != nil {
		t.Fatal(err)
	}
	c := a.Config
	if c.Ratio != 0.25 || c.Seed != 7 || c.Epochs != 3 || !a.In.Quiet || a.In.Backend != "cpu" || c.TestFrac != 0.2 || c.CoSTCoLR != 1e-4 || a.In.Layers.String() != "48,16" || c.EmbeddingOptimizer != "sparse-adam" {
		t.Errorf("options not applied: %+v %+v", c, a.In)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n < 20 {
		t.Errorf("only %d augment flags", n)
	}
	for opt, want := range map[string]string{
		`{"nope":1}`:         `option "nope": unknown`,
		`{"input":"x"}`:      `option "input"`,
		`{"quiet":"maybe"}`:  `option "quiet": invalid value`,
		`{"epochs":false}`:   `option "epochs": want a number`,
		`{"seed":-1}`:        `option "seed": invalid value`,
		`{"layers":null}`:    `want a JSON number, string or boolean, not null`,
		`{"ratio":{}}`:       `not an object`,
		`[]`:                 `not a JSON object`,
		`{"ratio":1} {}`:     `text after the JSON object`,
		`{"batch":"1.5"}`:    `option "batch": invalid value`,
		`{"layers":"0,4"}`:   `option "layers": invalid value`,
		`{"index-base":1.5}`: `option "index-base": invalid value`,
	} {
		fs := flag.NewFlagSet("dainx augment", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cli.NewAugment(fs)
		err := setOptions(fs, opt, augmentSkip)
		if want == `not an object` {
			want = `want a JSON number, string or boolean, not an object`
		}
		if err == nil || !strings.Contains(err.Error(), want) || codeOf(err) != codeInput {
			t.Errorf("%s: %v, want an input error with %q", opt, err, want)
		}
	}
}

// TestSafely: a panic becomes a run error.
func TestSafely(t *testing.T) {
	err := safely(func() error { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "internal error: boom") || codeOf(err) != codeRun {
		t.Errorf("safely: %v", err)
	}
}

// TestNoSignalHandling: nothing the library links can call os/signal (and
// so install handlers for the host's SIGINT or SIGTERM).
func TestNoSignalHandling(t *testing.T) {
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goCmd, "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "os/signal" {
			t.Errorf("libdainx depends on os/signal")
		}
	}
}

// TestLibOutputsTransaction (issue 31): through the C API's augment, two
// outputs naming one file are an input error before any work, and a
// model-out over an older run's directory ends holding this run's files.
func TestLibOutputsTransaction(t *testing.T) {
	dir := t.TempDir()
	x, err := buildTensor(libCells(400))
	if err != nil {
		t.Fatal(err)
	}
	same := filepath.Join(dir, "a.tsv")
	_, err = augment(context.Background(), x, `{"output":"`+same+`","report":"`+same+`","layers":"12,8","epochs":1,"backend":"cpu","quiet":true}`, io.Discard, nil)
	if err == nil || codeOf(err) != codeInput || !strings.Contains(err.Error(), "cannot write "+same) {
		t.Fatalf("output = report: %v (code %d), want an input error naming %s", err, codeOf(err), same)
	}
	if _, err := os.Stat(same); !os.IsNotExist(err) {
		t.Fatalf("a refused run wrote %s", same)
	}
	// writeTensor refuses a directory and names the path given.
	err = writeTensor(dir, []int32{0, 1}, []float64{1}, 2, "")
	if err == nil || codeOf(err) != codeInput || !strings.Contains(err.Error(), "cannot write "+dir) {
		t.Fatalf("writeTensor into a directory: %v", err)
	}
}

// libCells returns n distinct cells of a 3-mode tensor and their values.
func libCells(n int) ([]int32, []float64, int) {
	idx := make([]int32, 0, 3*n)
	val := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		k := (i * 7919) % (40 * 30 * 20)
		idx = append(idx, int32(k%40), int32((k/40)%30), int32(k/1200))
		val = append(val, float64(1+i%5))
	}
	return idx, val, 3
}
