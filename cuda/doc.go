// Package cuda implements compute.Backend on an NVIDIA GPU with the
// hand-written kernels of kernels/, driven through the thin driver-API
// binding of package cuda/driver (purego over libcuda.so.1: no cgo, no build
// tags). A binary that imports it runs everywhere; New returns an error that
// says why when there is no driver or no device.
//
// # Kernels and modules
//
// Each kernels/NAME.cu holds one extern "C" __global__ NAME whose header
// states its contract (= or +=, shapes, launch shape, atomics, the
// compute/ref function and the DAIN equation). `make kernels` compiles it to
// kernels/ptx/NAME.ptx for compute_80 (committed, embedded by package
// kernels/ptx) and generates its launcher cuda/k_NAME.go. New JIT-loads every
// module up front, so a PTX the driver rejects is reported by New with the
// JIT log, not by the first operation that needs it.
//
// # Threads and ordering
//
// All driver calls run on one goroutine locked to an OS thread, where the
// context is current (driver.Context). The Backend may be used from any
// goroutine, though not from several at once. Kernel launches, Fill and
// Copy are queued and return at once; Alloc, Upload, Download and Sync wait.
// Work runs on the GPU in the order it was issued: kernels on one blocking
// stream, copies and memsets on the legacy default stream, which is ordered
// with it.
//
// # Buffers
//
// F32 and I32 are device buffers that know their length. Alloc zeroes them.
// Freed memory goes to a per-backend cache of size classes (within 25 % of
// the request) and is reused by later allocations; the cache is released
// when the device runs out of memory and on Close.
//
// # Errors
//
// A shape mismatch, a buffer of another backend, a freed buffer or use after
// Close is a caller bug and panics with a "cuda: …" message that includes
// the values, under the same conditions as the CPU backend. A failing driver
// call is recorded as the backend's sticky error, wrapped as
// "cuda: <kernel or operation>: <call>: <CUDA error name>: <description>";
// the first is kept, every later operation becomes a no-op, and Sync,
// Download and Close return it. With Options.Sync (dainx: DAINX_CUDA_SYNC=1
// in the environment) the backend waits after every launch, so that an
// asynchronous fault is reported under the name of the kernel that caused
// it.
//
// # Results
//
// Results agree with the float64 reference loops of compute/ref within the
// tolerances of compute/computetest. Kernels that use atomics (scatter_rows,
// entity_importance) depend on the order of additions in the last bits;
// every other kernel is deterministic for a given device. SampleAlias is
// bit-identical to compute.AliasDraw.
package cuda
