package driver

import (
	"fmt"
	"math"
	"unsafe"
)

// MaxArgs is the most kernel arguments an Args holds.
const MaxArgs = 24

// Args packs the parameters of one kernel launch the way cuLaunchKernel
// reads them: kernelParams is an array of pointers, one per parameter, each
// pointing at a value of exactly the parameter's C size (4 bytes for int32_t,
// uint32_t and float; 8 bytes for uint64_t and pointers).
//
// An Args is reused from launch to launch without allocating: each slot is
// 8 bytes of storage inside the Args, and the pointer array is filled once by
// NewArgs. An Args must not be copied (the pointers point into itself) and
// must not be used by two goroutines at once.
type Args struct {
	vals [MaxArgs]uint64
	ptrs [MaxArgs]unsafe.Pointer
	size [MaxArgs]uint8
	n    int
}

// NewArgs returns an empty argument list.
func NewArgs() *Args {
	a := new(Args)
	for i := range a.ptrs {
		a.ptrs[i] = unsafe.Pointer(&a.vals[i])
	}
	return a
}

// Reset empties the list.
func (a *Args) Reset() { a.n = 0 }

// Len returns the number of arguments.
func (a *Args) Len() int { return a.n }

// Size returns the size in bytes of argument i as the driver will read it.
func (a *Args) Size(i int) int { return int(a.size[i]) }

// Bytes returns the bytes the driver will read for argument i, in memory
// order.
func (a *Args) Bytes(i int) []byte {
	return unsafe.Slice((*byte)(a.ptrs[i]), a.size[i])
}

// slot returns the storage of the next argument, recording its size. It
// panics if the list is full: kernels of this project take far fewer.
func (a *Args) slot(size uint8) unsafe.Pointer {
	if a.n == MaxArgs {
		panic(fmt.Sprintf("driver: more than %d kernel arguments", MaxArgs))
	}
	p := a.ptrs[a.n]
	a.vals[a.n] = 0
	a.size[a.n] = size
	a.n++
	return p
}

// Ptr appends a device pointer (8 bytes).
func (a *Args) Ptr(p DevicePtr) { *(*uint64)(a.slot(8)) = uint64(p) }

// Int32 appends an int32_t (4 bytes).
func (a *Args) Int32(v int32) { *(*int32)(a.slot(4)) = v }

// Uint32 appends a uint32_t (4 bytes).
func (a *Args) Uint32(v uint32) { *(*uint32)(a.slot(4)) = v }

// Float32 appends a float (4 bytes).
func (a *Args) Float32(v float32) { *(*uint32)(a.slot(4)) = math.Float32bits(v) }

// Uint64 appends a uint64_t (8 bytes).
func (a *Args) Uint64(v uint64) { *(*uint64)(a.slot(8)) = v }

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// Launch enqueues f on stream s (nil: the legacy default stream) with the
// given grid, block and dynamic shared memory in bytes (cuLaunchKernel). The
// driver copies the arguments before Launch returns, so a may be reset and
// reused at once. Context thread only.
func (f *Function) Launch(grid, block Dim3, sharedBytes uint32, s *Stream, a *Args) error {
	var params unsafe.Pointer
	if a != nil && a.n > 0 {
		params = unsafe.Pointer(&a.ptrs[0])
	}
	var hs uintptr
	if s != nil {
		hs = s.h
	}
	return f.c.d.call("cuLaunchKernel", f.c.d.fn.cuLaunchKernel, f.h,
		uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z),
		uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
		uintptr(sharedBytes), hs, uintptr(params), 0)
}
