package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigurationsThatCannotFit (issue 46): settings within their caps
// whose product cannot fit (a 10⁶-wide layer, CoSTCo's rank or channels at
// 2²⁰, both together, batches of 2²⁴ cells) were Go's "out of memory" or
// "makeslice: len out of range"; under a 4 GB address-space limit each is
// now exit 1 with one line that gives the estimate and names the flags
// that size it, before anything is built or written. So is dainx synth of
// 10⁹ cells, and -max-memory refuses a run that fits the machine.
func TestConfigurationsThatCannotFit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs dainx in child processes")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "t.tsv")
	if code, _, stderr := runCLI("synth", "-dims", "30,20,10", "-nnz", "3000", "-output", in); code != 0 {
		t.Fatal(stderr)
	}
	out := filepath.Join(dir, "out.tsv")
	augment := []string{"augment", "-input", in, "-output", out, "-backend", "cpu", "-quiet"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-layers", "24,100000,100000"}, "the mlp model (-layers 24,100000,100000, -batch 1024)"},
		{[]string{"-layers", "24,1000000"}, "the mlp model (-layers 24,1000000"},
		{[]string{"-channels", "1048576"}, "the CoSTCo model (-rank 20, -channels 1048576"},
		{[]string{"-rank", "1048576"}, "the CoSTCo model (-rank 1048576, -channels 20"},
		{[]string{"-rank", "1048576", "-channels", "1048576"}, "the CoSTCo model (-rank 1048576, -channels 1048576"},
		{[]string{"-batch", "16777216", "-costco-batch", "16777216"}, "-batch 16777216"},
		{[]string{"-final-model", "fm", "-fm-rank", "4096", "-batch", "16777216"}, "the fm model (-fm-rank 4096, -batch 16777216)"},
		{[]string{"-max-memory", "64MiB", "-layers", "24,4096"}, "(-max-memory 64 MiB)"},
	} {
		code, stderr, _ := limitedRun(t, 4000, append(augment, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 1 || len(lines) != 1 || !strings.Contains(stderr, "needs about") || !strings.Contains(stderr, tc.want) {
			t.Errorf("augment %v: exit %d, want 1 with one line naming %q: %s", tc.args, code, tc.want, stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("augment %v: wrote %s", tc.args, out)
		}
	}
	code, stderr, _ := limitedRun(t, 4000, "synth", "-dims", "100000,100000,1000", "-nnz", "1000000000", "-output", out)
	if code != 1 || !strings.Contains(stderr, "the cells (-nnz 1000000000)") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("synth of 10⁹ cells: exit %d: %s", code, stderr)
	}
	// What fits runs under the same limit.
	if code, stderr, _ := limitedRun(t, 4000, append(augment, tiny...)...); code != 0 {
		t.Errorf("a run that fits: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(append(augment, "-max-memory", "lots")...); code != 2 || !strings.Contains(stderr, `invalid value "lots" for flag -max-memory`) {
		t.Errorf("-max-memory lots: exit %d: %s", code, stderr)
	}
}

// TestHugeTemperature (issue 46): -temperature 1e308 was "every weight of
// mode 1 is zero", naming no flag; now α^τ that underflows sharpens to the
// entities of largest importance, and when they span too few cells for
// -ratio the error names -temperature and what to change.
func TestHugeTemperature(t *testing.T) {
	code, stdout, stderr := runCLI(append([]string{"augment", "-input", "testdata/golden/input.tsv", "-backend", "cpu", "-temperature", "1e308"}, tiny...)...)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "cannot draw") || !strings.Contains(stderr, "-temperature 1e+308 concentrates the importance on few entities") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("-temperature 1e308: exit %d: %s", code, stderr)
	}
}
