package cuda

import (
	"fmt"

	"github.com/dainx/dainx/cuda/gemmtune"
)

// GemmTune is Options.GemmTune: how the backend chooses, at the first use
// of each GEMM shape, the kernel variant it runs on (docs/gpu-tuning.md).
type GemmTune int

const (
	// GemmTuneOff, the zero value, keeps the 64×64 kernels of before
	// tuning (the default until a GPU run has verified the family). The
	// dainx commands take the tuning from -gemm-tune, whose default
	// $DAINX_GEMM_TUNE sets; this package reads no environment.
	GemmTuneOff GemmTune = iota
	// GemmTuneModel takes the analytic model's first choice.
	GemmTuneModel
	// GemmTuneTime times the model's best few on the device and caches
	// the winner (os.UserCacheDir()/dainx/gemm-tune.json).
	GemmTuneTime
)

// String returns off, model or time.
func (t GemmTune) String() string {
	switch t {
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
	return GemmTuneOff, fmt.Errorf("gemm-tune %q: want off, model or time", s)
}

// tuning returns the tuner's mode and serial split-K setting that o says.
func (o Options) tuning() (gemmtune.Mode, bool, error) {
	mode := gemmtune.Off
	switch o.GemmTune {
	case GemmTuneOff:
	case GemmTuneModel:
		mode = gemmtune.ModelOnly
	case GemmTuneTime:
		mode = gemmtune.Time
	default:
		return gemmtune.Off, false, fmt.Errorf("cuda: unknown GEMM tuning %v", o.GemmTune)
	}
	return mode, o.SerialSplitK, nil
}

// GemmTune returns how the backend chooses its GEMM kernels: off, model
// or time (the report's gemm_tune).
func (be *Backend) GemmTune() string { return be.tune.mode.String() }
