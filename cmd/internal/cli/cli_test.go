package cli

import (
	"errors"
	"strings"
	"testing"
)

// TestShortCUDAError: a missing driver is one short clause; other errors
// pass through; DAINX_VERBOSE=1 gives the paths.
func TestShortCUDAError(t *testing.T) {
	long := errors.New("cuda: no CUDA driver: tried " + strings.Repeat("/some/path/libcuda.so.1: cannot open shared object file; ", 5))
	if s := shortCUDAError(long); s != "no CUDA driver found; DAINX_VERBOSE=1 lists the paths tried" {
		t.Errorf("short: %q", s)
	}
	other := errors.New("cuda: cuInit: CUDA_ERROR_NO_DEVICE")
	if s := shortCUDAError(other); s != other.Error() {
		t.Errorf("other: %q", s)
	}
	t.Setenv("DAINX_VERBOSE", "1")
	if s := shortCUDAError(long); s != long.Error() {
		t.Errorf("verbose: %q", s)
	}
}
