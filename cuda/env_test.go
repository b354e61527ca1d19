package cuda

import (
	"os"
	"strconv"
	"testing"

	"github.com/dainx/dainx/compute"
)

// EnvOptions returns, for the tests, the Options the dainx commands
// take from the environment by default (DAINX_DEVICE, DAINX_GEMM_TUNE,
// DAINX_GEMM_SERIAL, DAINX_CUDA_SYNC, DAINX_LIBCUDA: docs/environment.md),
// with precision p: the package reads no environment, and its tests open
// their backends as before it stopped, so that a GPU run's
// DAINX_CUDA_SYNC=1 (scripts/device-run.sh) still reaches them. A bad
// value fails the test.
func EnvOptions(t testing.TB, p compute.Precision) Options {
	t.Helper()
	o := Options{Precision: p, Sync: os.Getenv("DAINX_CUDA_SYNC") == "1", Library: os.Getenv("DAINX_LIBCUDA"), SerialSplitK: os.Getenv("DAINX_GEMM_SERIAL") == "1"}
	if s := os.Getenv("DAINX_DEVICE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			t.Fatalf("DAINX_DEVICE=%q: want a device ordinal", s)
		}
		o.Device = n
	}
	if s := os.Getenv("DAINX_GEMM_TUNE"); s != "" {
		g, err := ParseGemmTune(s)
		if err != nil {
			t.Fatalf("DAINX_GEMM_TUNE: %v", err)
		}
		o.GemmTune = g
	}
	return o
}

// Synchronous reports whether the backend waits after every launch
// (Options.Sync), for the tests.
func (be *Backend) Synchronous() bool { return be.sync }
