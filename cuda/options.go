package cuda

import (
	"fmt"
	"os"

	"github.com/dainx/dainx/cuda/gemmtune"
)

// GemmTune is Options.GemmTune: how the backend chooses, at the first use
// of each GEMM shape, the kernel variant it runs on (docs/gpu-tuning.md).
type GemmTune int

const (
	// GemmTuneEnv, the zero value, takes $DAINX_GEMM_TUNE (off when
	// unset), as a program that sets no option always did. The dainx
	// commands and libdainx read the variable once, for the default of
	// their -gemm-tune flag, and pass the result explicitly.
	GemmTuneEnv GemmTune = iota
	// GemmTuneOff keeps the 64×64 kernels of before tuning.
	GemmTuneOff
	// GemmTuneModel takes the analytic model's first choice.
	GemmTuneModel
	// GemmTuneTime times the model's best few on the device and caches
	// the winner (os.UserCacheDir()/dainx/gemm-tune.json).
	GemmTuneTime
)

// String returns off, model or time ("env" for GemmTuneEnv).
func (t GemmTune) String() string {
	switch t {
	case GemmTuneEnv:
		return "env"
	case GemmTuneOff:
		return "off"
	case GemmTuneModel:
		return "model"
	case GemmTuneTime:
		return "time"
	}
	return fmt.Sprintf("GemmTune(%d)", int(t))
}

// ParseGemmTune parses off, model or time (the values of dainx
// -gemm-tune and of $DAINX_GEMM_TUNE).
func ParseGemmTune(s string) (GemmTune, error) {
	switch s {
	case "off":
		return GemmTuneOff, nil
	case "model":
		return GemmTuneModel, nil
	case "time":
		return GemmTuneTime, nil
	}
	return GemmTuneEnv, fmt.Errorf("gemm-tune %q: want off, model or time", s)
}

// GemmTuneFromEnv returns the tuning $DAINX_GEMM_TUNE sets: off when it
// is unset or empty, an error naming the variable when it is not off,
// model or time.
func GemmTuneFromEnv() (GemmTune, error) {
	v := os.Getenv(gemmtune.EnvMode)
	if v == "" {
		return GemmTuneOff, nil
	}
	t, err := ParseGemmTune(v)
	if err != nil {
		return GemmTuneEnv, fmt.Errorf("cuda: %s=%q: want off, model or time", gemmtune.EnvMode, v)
	}
	return t, nil
}

// SerialSplitK is Options.SerialSplitK.
type SerialSplitK int

const (
	// SerialSplitKEnv, the zero value, takes $DAINX_GEMM_SERIAL (on when
	// it is 1).
	SerialSplitKEnv SerialSplitK = iota
	SerialSplitKOff
	SerialSplitKOn
)

// SerialSplitKFromEnv returns what $DAINX_GEMM_SERIAL sets: on when it is
// 1, else off.
func SerialSplitKFromEnv() SerialSplitK {
	if os.Getenv(EnvSerial) == "1" {
		return SerialSplitKOn
	}
	return SerialSplitKOff
}

// tuning returns the tuner's mode and serial split-K setting that o says,
// the environment's where o leaves them at their zero values.
func (o Options) tuning() (gemmtune.Mode, bool, error) {
	t := o.GemmTune
	if t == GemmTuneEnv {
		var err error
		if t, err = GemmTuneFromEnv(); err != nil {
			return gemmtune.Off, false, err
		}
	}
	mode := gemmtune.Off
	switch t {
	case GemmTuneOff:
	case GemmTuneModel:
		mode = gemmtune.ModelOnly
	case GemmTuneTime:
		mode = gemmtune.Time
	default:
		return gemmtune.Off, false, fmt.Errorf("cuda: unknown GEMM tuning %v", t)
	}
	s := o.SerialSplitK
	if s == SerialSplitKEnv {
		s = SerialSplitKFromEnv()
	}
	switch s {
	case SerialSplitKOff, SerialSplitKOn:
	default:
		return gemmtune.Off, false, fmt.Errorf("cuda: unknown serial split-K setting %d", int(s))
	}
	return mode, s == SerialSplitKOn, nil
}

// GemmTune returns how the backend chooses its GEMM kernels: off, model
// or time (the report's gemm_tune).
func (be *Backend) GemmTune() string { return be.tune.mode.String() }
