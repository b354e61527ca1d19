package cuda

import (
	"testing"

	"github.com/dainx/dainx/cuda/gemmtune"
)

// TestOptionsTuning: Options.GemmTune and SerialSplitK reach the tuner as
// given, whatever the environment says (the package reads none); the zero
// Options is the 64×64 kernels without serial split-K. No GPU needed.
func TestOptionsTuning(t *testing.T) {
	for _, c := range []struct {
		env, serialEnv string
		o              Options
		mode           gemmtune.Mode
		serial         bool
	}{
		{"", "", Options{}, gemmtune.Off, false},
		{"time", "1", Options{}, gemmtune.Off, false}, // the variables are not read
		{"model", "0", Options{GemmTune: GemmTuneModel}, gemmtune.ModelOnly, false},
		{"off", "", Options{GemmTune: GemmTuneTime}, gemmtune.Time, false},
		{"time", "1", Options{GemmTune: GemmTuneOff, SerialSplitK: false}, gemmtune.Off, false},
		{"", "", Options{GemmTune: GemmTuneModel, SerialSplitK: true}, gemmtune.ModelOnly, true},
		{"fast", "", Options{GemmTune: GemmTuneModel}, gemmtune.ModelOnly, false},
	} {
		t.Setenv("DAINX_GEMM_TUNE", c.env)
		t.Setenv("DAINX_GEMM_SERIAL", c.serialEnv)
		mode, serial, err := c.o.tuning()
		if err != nil || mode != c.mode || serial != c.serial {
			t.Errorf("DAINX_GEMM_TUNE=%q DAINX_GEMM_SERIAL=%q, %+v: mode %v, serial %v, %v; want %v, %v", c.env, c.serialEnv, c.o, mode, serial, err, c.mode, c.serial)
		}
	}
	if _, _, err := (Options{GemmTune: 9}).tuning(); err == nil {
		t.Error("GemmTune 9: no error")
	}
	for _, s := range []string{"off", "model", "time"} {
		if v, err := ParseGemmTune(s); err != nil || v.String() != s {
			t.Errorf("ParseGemmTune(%q) = %v, %v", s, v, err)
		}
	}
	for _, s := range []string{"", "env", "Time", "fast"} {
		if _, err := ParseGemmTune(s); err == nil {
			t.Errorf("ParseGemmTune(%q): no error", s)
		}
	}
}
