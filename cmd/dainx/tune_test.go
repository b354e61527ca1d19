package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dainx/dainx/cuda/gemmtune"
)

func TestTuneModelOnly(t *testing.T) {
	for _, dev := range []string{"h100", "a100", "l4"} {
		var out, errb bytes.Buffer
		code := run([]string{"tune", "-model-only", "-device", dev, "-precision", "3xtf32", "-layers", "150,1024,128", "-batch", "512"}, &out, &errb)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", dev, code, errb.String())
		}
		s := out.String()
		if !strings.Contains(s, gemmtune.Known[dev].Name) || strings.Count(s, "choice ") != 6 || !strings.Contains(s, "predicted GEMM time") {
			t.Errorf("%s: output lacks the device, six GEMMs or the total:\n%s", dev, s)
		}
		for _, op := range []string{"forward", "dx", "dw"} {
			if !strings.Contains(s, op+" ") {
				t.Errorf("%s: no %s row:\n%s", dev, op, s)
			}
		}
	}
}

func TestTuneErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"tune", "-model-only", "-device", "v100"}, exitUsage, "want one of a100, h100, l4"},
		{[]string{"tune", "-model-only", "-precision", "fp16"}, exitUsage, "precision"},
		{[]string{"tune", "-model-only", "-batch", "0"}, exitUsage, "positive"},
		{[]string{"tune", "-model-only", "-layers", "150"}, exitUsage, "two widths"},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
}

// TestTuneNoGPU: without -model-only on a machine with no GPU the command
// says so and fails (skipped where a GPU is present).
func TestTuneNoGPU(t *testing.T) {
	if be, err := newCUDA(0, 0); err == nil {
		be.Close()
		t.Skip("a GPU is present")
	}
	var out, errb bytes.Buffer
	if code := run([]string{"tune"}, &out, &errb); code != exitFailure || !strings.Contains(errb.String(), "no GPU to tune on") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

func TestTuneHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"tune", "-h"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, f := range []string{"-layers", "-batch", "-precision", "-model-only", "-device", "-gpu"} {
		if !strings.Contains(errb.String(), f) {
			t.Errorf("help lacks %s", f)
		}
	}
}
