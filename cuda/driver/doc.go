// Package driver is a thin binding to the CUDA driver API (libcuda.so.1),
// loaded at run time with github.com/ebitengine/purego: no cgo, no build
// tags. A binary built with CGO_ENABLED=0 runs everywhere; Load returns an
// error that says why when a machine has no driver or no device.
//
// It knows nothing about DAIN. It covers what a compute backend needs:
// initialisation and device queries, a context on a locked OS thread, device
// memory (alloc, free, copy, memset), modules JIT-loaded from PTX, kernel
// launch, streams and events. The _v2 entry points are bound by name
// (cuMemAlloc_v2, cuMemcpyHtoD_v2, …), as cuda.h does through its macros.
//
// # Threads
//
// A CUDA context is current on one OS thread. NewContext starts a worker
// goroutine locked to its own OS thread, creates the context there and runs
// every function handed to Context.Do or Context.Go on that thread, in order.
// The methods of Context, Module, Function, Stream and Event must be called
// only from such a function; Driver's methods (device queries) may be
// called from any goroutine.
//
// # Errors
//
// Every CUresult is checked. A failure is returned as an *Error naming the
// call, the CUDA error name and the driver's description, e.g.
//
//	cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: out of memory
//
// and errors.Is(err, ErrOutOfMemory) holds for it. Nothing in this package
// panics or exits on a driver failure; the only panics are caller bugs
// (more than MaxArgs kernel arguments).
//
// References: NVIDIA, CUDA Driver API reference manual, version 11.8.
package driver
