package cuda

import (
	"strings"
	"testing"

	"github.com/dainx/dainx/cuda/gemmtune"
)

// TestOptionsTuning: Options.GemmTune and SerialSplitK reach the tuner as
// given, whatever the environment says; left at their zero values they
// take $DAINX_GEMM_TUNE (off when unset) and $DAINX_GEMM_SERIAL, and a bad
// DAINX_GEMM_TUNE is then an error naming it. No GPU needed.
func TestOptionsTuning(t *testing.T) {
	for _, c := range []struct {
		env, serialEnv string
		o              Options
		mode           gemmtune.Mode
		serial         bool
	}{
		{"", "", Options{}, gemmtune.Off, false},
		{"time", "1", Options{}, gemmtune.Time, true},
		{"model", "0", Options{}, gemmtune.ModelOnly, false},
		{"off", "", Options{GemmTune: GemmTuneTime}, gemmtune.Time, false},
		{"time", "1", Options{GemmTune: GemmTuneOff, SerialSplitK: SerialSplitKOff}, gemmtune.Off, false},
		{"", "", Options{GemmTune: GemmTuneModel, SerialSplitK: SerialSplitKOn}, gemmtune.ModelOnly, true},
		{"fast", "", Options{GemmTune: GemmTuneModel}, gemmtune.ModelOnly, false}, // the bad variable is not read
	} {
		t.Setenv(gemmtune.EnvMode, c.env)
		t.Setenv(EnvSerial, c.serialEnv)
		mode, serial, err := c.o.tuning()
		if err != nil || mode != c.mode || serial != c.serial {
			t.Errorf("DAINX_GEMM_TUNE=%q DAINX_GEMM_SERIAL=%q, %+v: mode %v, serial %v, %v; want %v, %v", c.env, c.serialEnv, c.o, mode, serial, err, c.mode, c.serial)
		}
	}
	t.Setenv(gemmtune.EnvMode, "fast")
	if _, _, err := (Options{}).tuning(); err == nil || !strings.Contains(err.Error(), gemmtune.EnvMode) {
		t.Errorf("DAINX_GEMM_TUNE=fast with the default: %v, want an error naming the variable", err)
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
