package cuda_test

import (
	"strings"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/computetest"
	"github.com/dainx/dainx/cuda"
)

// newBackend returns a CUDA backend, or skips the test with the reason
// there is none.
func newBackend(t *testing.T) *cuda.Backend {
	t.Helper()
	be, err := cuda.NewWith(cuda.EnvOptions(t, compute.FP32))
	if err != nil {
		if err.Error() == "" || !strings.HasPrefix(err.Error(), "cuda: ") {
			t.Errorf("cuda.NewWith error %q does not say why", err)
		}
		t.Skipf("no CUDA device: %v", err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return be
}

// newBackendWith is newBackend for a precision mode, on the device of
// $DAINX_DEVICE.
func newBackendWith(t *testing.T, p compute.Precision) *cuda.Backend {
	t.Helper()
	be, err := cuda.NewWith(cuda.EnvOptions(t, p))
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return be
}

// TestConformance runs the compute conformance suite on the GPU in each
// precision mode (subtests fp32, tf32 and 3xtf32), the Linear operations
// held to the tolerance of the mode (computetest.LinearUnit). ScatterRows
// and EntityImportance add with float atomics, whose order, and so the last
// bits of the result, can change from run to run.
func TestConformance(t *testing.T) {
	for _, p := range []compute.Precision{compute.FP32, compute.TF32, compute.TF32x3} {
		t.Run(p.String(), func(t *testing.T) {
			be := newBackendWith(t, p)
			computetest.RunWith(t, be, computetest.Options{
				Nondeterministic: []string{"ScatterRows", "EntityImportance"},
				Precision:        p,
			})
		})
	}
}

// TestSynchronous runs the suite again with Options.Sync
// (DAINX_CUDA_SYNC=1), the mode that waits for and checks every launch.
func TestSynchronous(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	t.Setenv("DAINX_CUDA_SYNC", "1")
	be := newBackend(t)
	if !be.Synchronous() {
		t.Fatal("DAINX_CUDA_SYNC=1 did not reach Options.Sync")
	}
	computetest.RunWith(t, be, computetest.Options{
		Nondeterministic: []string{"ScatterRows", "EntityImportance"},
	})
}

// TestStickyError checks that a driver failure becomes the sticky error:
// reported by Sync, Download and Close, with later operations doing nothing.
func TestStickyError(t *testing.T) {
	be, err := cuda.NewWith(cuda.EnvOptions(t, compute.FP32))
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	x := be.Alloc(4)
	huge := be.Alloc(1 << 40) // 4 TiB: cuMemAlloc_v2 fails
	if huge.Len() != 1<<40 {
		t.Errorf("inert buffer Len() = %d", huge.Len())
	}
	err = be.Sync()
	if err == nil || !strings.Contains(err.Error(), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY") {
		t.Fatalf("Sync after a failed Alloc = %v, want an out-of-memory error", err)
	}
	be.Fill(x, 1) // no-op
	got := make([]float32, 4)
	if err2 := be.Download(got, x); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("Download = %v, want the sticky %v", err2, err)
	}
	if err2 := be.Close(); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("Close = %v, want the sticky %v", err2, err)
	}
	if err2 := be.Close(); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("second Close = %v, want the sticky %v", err2, err)
	}
	x.Free() // after Close: nothing
	x.Free()
}

// TestUseAfterClose checks that using a closed backend panics.
func TestUseAfterClose(t *testing.T) {
	be, err := cuda.NewWith(cuda.EnvOptions(t, compute.FP32))
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	x := be.Alloc(8)
	if err := be.Close(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("Fill after Close did not panic")
		}
	}()
	be.Fill(x, 0)
}

// TestNoDevice checks the error of NewWith on a machine without a GPU: it
// names the reason and never panics.
func TestNoDevice(t *testing.T) {
	be, err := cuda.NewWith(cuda.EnvOptions(t, compute.FP32))
	if err == nil {
		be.Close()
		t.Skip("a CUDA device is present")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "cuda: ") {
		t.Errorf("error %q lacks the cuda: prefix", msg)
	}
	if !strings.Contains(msg, "libcuda.so.1") && !strings.Contains(msg, "CUDA_ERROR_") && !strings.Contains(msg, "no CUDA device") {
		t.Errorf("error %q does not say whether the driver or the device is missing", msg)
	}
	t.Logf("cuda.New: %v", err)
}

var _ compute.Backend = (*cuda.Backend)(nil)
