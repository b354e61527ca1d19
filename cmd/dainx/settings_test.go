package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestGraphsFlag: augment's and eval's -graphs reaches the run and the
// report ("graphs"), with $DAINX_CUDA_GRAPHS=0 as the default off; a bad
// value is a usage error naming the flag.
func TestGraphsFlag(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "t.tsv", 600)
	graphs := func(env string, extra ...string) string {
		t.Helper()
		t.Setenv("DAINX_CUDA_GRAPHS", env)
		args := append(append([]string{"augment", "-input", in, "-backend", "cpu", "-rank", "4", "-channels", "4", "-ratio", "0.2"}, tiny...), extra...)
		code, stdout, stderr := runCLI(args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var rep struct{ Graphs string }
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		return rep.Graphs
	}
	if g := graphs(""); g != "on" {
		t.Errorf("by default the report says graphs %q, want on", g)
	}
	if g := graphs("", "-graphs", "off"); g != "off" {
		t.Errorf("-graphs off: the report says graphs %q", g)
	}
	if g := graphs("0"); g != "off" {
		t.Errorf("DAINX_CUDA_GRAPHS=0: the report says graphs %q, want off", g)
	}
	if g := graphs("0", "-graphs", "on"); g != "on" {
		t.Errorf("DAINX_CUDA_GRAPHS=0 -graphs on: the report says graphs %q", g)
	}
	t.Setenv("DAINX_CUDA_GRAPHS", "")
	for _, args := range [][]string{{"augment"}, {"eval", "-out", filepath.Join(dir, "e")}} {
		code, _, stderr := runCLI(append(args, "-input", in, "-graphs", "maybe")...)
		if code != exitUsage || !strings.Contains(stderr, `invalid value "maybe" for flag -graphs: want on or off`) {
			t.Errorf("%s -graphs maybe: exit %d, %q", args[0], code, firstLine(stderr))
		}
	}
	args := append([]string{"eval", "-input", in, "-backend", "cpu", "-methods", "dain", "-ratios", "0.2", "-repeats", "1", "-rank", "4", "-channels", "4", "-graphs", "off", "-out", filepath.Join(dir, "e")}, tiny...)
	if code, _, stderr := runCLI(args...); code != exitOK {
		t.Errorf("eval -graphs off: exit %d: %s", code, stderr)
	}
}

// TestExchangeFlag: -exchange takes auto, dense or sparse; another value,
// or a bad $DAINX_EXCHANGE (its default) with -dist mpi, is a usage error
// naming them, found before MPI is loaded; without -dist mpi the variable
// is not read.
func TestExchangeFlag(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "t.tsv", 600)
	code, _, stderr := runCLI("augment", "-input", in, "-exchange", "ring", "-dist", "mpi")
	if code != exitUsage || !strings.Contains(stderr, `invalid value "ring" for flag -exchange: want auto, dense or sparse`) {
		t.Errorf("-exchange ring: exit %d, %q", code, firstLine(stderr))
	}
	t.Setenv("DAINX_EXCHANGE", "ring")
	code, _, stderr = runCLI("augment", "-input", in, "-dist", "mpi")
	if code != exitUsage || !strings.Contains(stderr, `$DAINX_EXCHANGE="ring", the default of -exchange: want auto, dense or sparse`) {
		t.Errorf("DAINX_EXCHANGE=ring -dist mpi: exit %d, %q", code, stderr)
	}
	args := append([]string{"augment", "-input", in, "-backend", "cpu", "-rank", "4", "-channels", "4", "-ratio", "0.2", "-exchange", "dense"}, tiny...)
	if code, _, stderr := runCLI(args...); code != exitOK {
		t.Errorf("one process, DAINX_EXCHANGE=ring -exchange dense: exit %d: %s", code, stderr)
	}
}

// TestGemmTuneFlag: -gemm-tune is on every command that opens a backend
// and trains; a bad value (or a bad $DAINX_GEMM_TUNE, its default) is a
// usage error naming the flag, even on the CPU. cli.TestCUDAOptions checks
// that the value reaches cuda.Options.
func TestGemmTuneFlag(t *testing.T) {
	for _, cmd := range []string{"augment", "eval", "fold-in"} {
		if code, _, stderr := runCLI(cmd, "-h"); code != exitOK || !strings.Contains(stderr, "-gemm-tune") {
			t.Errorf("%s -h does not mention -gemm-tune", cmd)
		}
	}
	dir := t.TempDir()
	in := writeTSV(t, dir, "t.tsv", 600)
	args := append([]string{"augment", "-input", in, "-backend", "cpu", "-gemm-tune", "fast"}, tiny...)
	if code, _, stderr := runCLI(args...); code != exitUsage || !strings.Contains(stderr, `-gemm-tune "fast": want off, model or time`) {
		t.Errorf("-gemm-tune fast: exit %d, %q", code, stderr)
	}
	t.Setenv("DAINX_GEMM_TUNE", "fast")
	args = append([]string{"augment", "-input", in, "-backend", "cpu"}, tiny...)
	if code, _, stderr := runCLI(args...); code != exitUsage || !strings.Contains(stderr, "$DAINX_GEMM_TUNE") {
		t.Errorf("DAINX_GEMM_TUNE=fast: exit %d, %q", code, stderr)
	}
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
