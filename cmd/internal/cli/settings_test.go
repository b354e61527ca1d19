package cli

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda"
	"github.com/dainx/dainx/dain"
)

// parseAugment parses args as `dainx augment`'s flags (NewAugment) and
// finishes them.
func parseAugment(t *testing.T, args ...string) (*Augment, error) {
	t.Helper()
	fs := flag.NewFlagSet("dainx augment", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	a := NewAugment(fs)
	if err := fs.Parse(args); err != nil {
		return a, err
	}
	return a, a.Finish(fs, io.Discard)
}

// TestGraphsFlag: -graphs sets Config.Graphs (on by default, off when
// $DAINX_CUDA_GRAPHS=0, read when the flags are made; the flag wins), a
// -preset applied after it keeps it, and another value is refused by the
// parser, naming the flag.
func TestGraphsFlag(t *testing.T) {
	for _, c := range []struct {
		env  string
		args []string
		want dain.Graphs
	}{
		{"", nil, dain.GraphsOn},
		{"1", nil, dain.GraphsOn},
		{"0", nil, dain.GraphsOff},
		{"", []string{"-graphs", "off"}, dain.GraphsOff},
		{"0", []string{"-graphs", "on"}, dain.GraphsOn},
		{"", []string{"-graphs", "off", "-preset", "accurate"}, dain.GraphsOff},
	} {
		t.Setenv("DAINX_CUDA_GRAPHS", c.env)
		a, err := parseAugment(t, c.args...)
		if err != nil || a.Config.Graphs != c.want {
			t.Errorf("DAINX_CUDA_GRAPHS=%q %v: graphs %q, %v; want %s", c.env, c.args, a.Config.Graphs, err, c.want)
		}
	}
	if _, err := parseAugment(t, "-graphs", "maybe"); err == nil || !strings.Contains(err.Error(), "-graphs") || !strings.Contains(err.Error(), "want on or off") {
		t.Errorf("-graphs maybe: %v", err)
	}
}

// TestCUDAOptions: the flags -device, -precision, -gemm-tune and
// -gemm-serial reach cuda.Options, every setting explicit
// ($DAINX_GEMM_TUNE is -gemm-tune's default, $DAINX_GEMM_SERIAL=1 makes
// -gemm-serial's on, $DAINX_CUDA_SYNC=1 and $DAINX_LIBCUDA fill Sync and
// Library); an Input made in Go without -gemm-tune takes $DAINX_GEMM_TUNE;
// a bad value is a usage error naming the flag (and the variable when the
// value came from it). No GPU needed.
func TestCUDAOptions(t *testing.T) {
	options := func(args ...string) (cuda.Options, error) {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var in Input
		BindInput(fs, &in)
		if err := fs.Parse(args); err != nil {
			return cuda.Options{}, err
		}
		return CUDAOptions(&in)
	}
	t.Setenv("DAINX_CUDA_SYNC", "")
	t.Setenv("DAINX_LIBCUDA", "")
	t.Setenv("DAINX_DEVICE", "")
	for _, c := range []struct {
		tune, serial string
		args         []string
		want         cuda.Options
	}{
		{"", "", nil, cuda.Options{GemmTune: cuda.GemmTuneOff, SerialSplitK: false}},
		{"time", "1", nil, cuda.Options{GemmTune: cuda.GemmTuneTime, SerialSplitK: true}},
		{"time", "", []string{"-gemm-tune", "model", "-device", "2", "-precision", "tf32"},
			cuda.Options{Device: 2, Precision: compute.TF32, GemmTune: cuda.GemmTuneModel, SerialSplitK: false}},
		{"fast", "", []string{"-gemm-tune", "off"}, cuda.Options{GemmTune: cuda.GemmTuneOff, SerialSplitK: false}},
		{"model", "1", []string{"-gemm-serial", "off"}, cuda.Options{GemmTune: cuda.GemmTuneModel, SerialSplitK: false}},
		{"model", "", []string{"-gemm-serial", "on"}, cuda.Options{GemmTune: cuda.GemmTuneModel, SerialSplitK: true}},
	} {
		t.Setenv("DAINX_GEMM_TUNE", c.tune)
		t.Setenv("DAINX_GEMM_SERIAL", c.serial)
		if o, err := options(c.args...); err != nil || o != c.want {
			t.Errorf("DAINX_GEMM_TUNE=%q DAINX_GEMM_SERIAL=%q %v: %+v, %v; want %+v", c.tune, c.serial, c.args, o, err, c.want)
		}
	}
	t.Setenv("DAINX_GEMM_TUNE", "")
	t.Setenv("DAINX_GEMM_SERIAL", "")
	t.Setenv("DAINX_CUDA_SYNC", "1")
	t.Setenv("DAINX_LIBCUDA", "/opt/libcuda.so.1")
	if o, err := options(); err != nil || !o.Sync || o.Library != "/opt/libcuda.so.1" {
		t.Errorf("DAINX_CUDA_SYNC=1 DAINX_LIBCUDA=/opt/libcuda.so.1: %+v, %v", o, err)
	}
	t.Setenv("DAINX_CUDA_SYNC", "")
	t.Setenv("DAINX_LIBCUDA", "")
	if _, err := options("-gemm-serial", "yes"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), `-gemm-serial "yes": want on or off`) {
		t.Errorf("-gemm-serial yes: %v", err)
	}
	t.Setenv("DAINX_GEMM_SERIAL", "1")
	if o, err := CUDAOptions(&Input{Precision: "fp32"}); err != nil || !o.SerialSplitK {
		t.Errorf("an Input without -gemm-serial, DAINX_GEMM_SERIAL=1: %+v, %v", o, err)
	}
	t.Setenv("DAINX_GEMM_SERIAL", "")
	t.Setenv("DAINX_GEMM_TUNE", "model")
	if o, err := CUDAOptions(&Input{Precision: "fp32"}); err != nil || o.GemmTune != cuda.GemmTuneModel {
		t.Errorf("an Input without -gemm-tune, DAINX_GEMM_TUNE=model: %+v, %v", o, err)
	}
	t.Setenv("DAINX_GEMM_TUNE", "")
	if _, err := options("-gemm-tune", "fast"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), `-gemm-tune "fast": want off, model or time`) {
		t.Errorf("-gemm-tune fast: %v", err)
	}
	t.Setenv("DAINX_GEMM_TUNE", "fast")
	if _, err := options(); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "-gemm-tune") || !strings.Contains(err.Error(), "$DAINX_GEMM_TUNE") {
		t.Errorf("DAINX_GEMM_TUNE=fast: %v", err)
	}
	if _, err := CUDAOptions(&Input{Precision: "fp32"}); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "DAINX_GEMM_TUNE") {
		t.Errorf("an Input without -gemm-tune, DAINX_GEMM_TUNE=fast: %v", err)
	}
	// The CPU backend too refuses a bad -gemm-tune, before opening.
	if _, _, err := OpenBackend(&Input{Backend: "cpu", Precision: "fp32", GemmTune: "fast"}); !errors.Is(err, ErrUsage) {
		t.Errorf("-backend cpu -gemm-tune fast: %v", err)
	}
	if be, _, err := OpenBackend(&Input{Backend: "cpu", Precision: "fp32", GemmTune: "time"}); err != nil || be.Name() != "cpu" {
		t.Errorf("-backend cpu -gemm-tune time: %v", err)
	} else {
		be.Close()
	}
}
