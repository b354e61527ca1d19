package driver

import "unsafe"

// DevicePtr is a CUdeviceptr: an address in device memory.
type DevicePtr uint64

// MemAlloc allocates bytes of device memory (cuMemAlloc_v2). The memory is
// not cleared. Context thread only.
func (c *Context) MemAlloc(bytes int64) (DevicePtr, error) {
	var p uint64
	if err := c.d.call("cuMemAlloc_v2", c.d.fn.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(bytes)); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

// MemFree frees memory returned by MemAlloc (cuMemFree_v2). Context thread
// only.
func (c *Context) MemFree(p DevicePtr) error {
	return c.d.call("cuMemFree_v2", c.d.fn.cuMemFree, uintptr(p))
}

// MemGetInfo returns the free and total device memory in bytes
// (cuMemGetInfo_v2). Context thread only.
func (c *Context) MemGetInfo() (free, total int64, err error) {
	var f, t uint64
	if err := c.d.call("cuMemGetInfo_v2", c.d.fn.cuMemGetInfo, uintptr(unsafe.Pointer(&f)), uintptr(unsafe.Pointer(&t))); err != nil {
		return 0, 0, err
	}
	return int64(f), int64(t), nil
}

// MemcpyHtoD copies bytes from host memory at src to dst (cuMemcpyHtoD_v2).
// It returns once src may be reused; it is ordered after earlier work of the
// legacy default stream and of every blocking stream. src must point into a
// live Go allocation (or C memory) of at least bytes bytes. Context thread
// only.
func (c *Context) MemcpyHtoD(dst DevicePtr, src unsafe.Pointer, bytes int64) error {
	return c.d.call("cuMemcpyHtoD_v2", c.d.fn.cuMemcpyHtoD, uintptr(dst), uintptr(src), uintptr(bytes))
}

// MemcpyDtoH copies bytes from src to host memory at dst (cuMemcpyDtoH_v2),
// waiting for earlier work of the legacy default stream and of every
// blocking stream. Context thread only.
func (c *Context) MemcpyDtoH(dst unsafe.Pointer, src DevicePtr, bytes int64) error {
	return c.d.call("cuMemcpyDtoH_v2", c.d.fn.cuMemcpyDtoH, uintptr(dst), uintptr(src), uintptr(bytes))
}

// MemcpyDtoD copies bytes between device buffers (cuMemcpyDtoD_v2), on the
// legacy default stream. Context thread only.
func (c *Context) MemcpyDtoD(dst, src DevicePtr, bytes int64) error {
	return c.d.call("cuMemcpyDtoD_v2", c.d.fn.cuMemcpyDtoD, uintptr(dst), uintptr(src), uintptr(bytes))
}

// MemsetD32 sets n 32-bit words at dst to v (cuMemsetD32_v2), on the legacy
// default stream. dst must be 4-byte aligned. Context thread only.
func (c *Context) MemsetD32(dst DevicePtr, v uint32, n int64) error {
	return c.d.call("cuMemsetD32_v2", c.d.fn.cuMemsetD32, uintptr(dst), uintptr(v), uintptr(n))
}

// MemsetD32Async queues the setting of n 32-bit words at dst to v on stream
// s (cuMemsetD32Async). dst must be 4-byte aligned. Context thread only.
func (c *Context) MemsetD32Async(dst DevicePtr, v uint32, n int64, s *Stream) error {
	return c.d.call("cuMemsetD32Async", c.d.fn.cuMemsetD32Async, uintptr(dst), uintptr(v), uintptr(n), s.h)
}

// MemcpyHtoDAsync copies bytes from host memory at src to dst on stream s
// (cuMemcpyHtoDAsync_v2), after the stream's earlier work. From pageable
// memory (any Go allocation) it returns once src has been staged, so src
// may be reused at once; src must point into a live allocation of at least
// bytes bytes. Context thread only.
func (c *Context) MemcpyHtoDAsync(dst DevicePtr, src unsafe.Pointer, bytes int64, s *Stream) error {
	return c.d.call("cuMemcpyHtoDAsync_v2", c.d.fn.cuMemcpyHtoDAsync, uintptr(dst), uintptr(src), uintptr(bytes), s.h)
}

// MemcpyDtoHAsync copies bytes from src to host memory at dst on stream s
// (cuMemcpyDtoHAsync_v2), after the stream's earlier work. Into pageable
// memory it returns only once the copy is complete. Context thread only.
func (c *Context) MemcpyDtoHAsync(dst unsafe.Pointer, src DevicePtr, bytes int64, s *Stream) error {
	return c.d.call("cuMemcpyDtoHAsync_v2", c.d.fn.cuMemcpyDtoHAsync, uintptr(dst), uintptr(src), uintptr(bytes), s.h)
}

// MemcpyDtoDAsync queues a copy of bytes between device buffers on stream s
// (cuMemcpyDtoDAsync_v2). Context thread only.
func (c *Context) MemcpyDtoDAsync(dst, src DevicePtr, bytes int64, s *Stream) error {
	return c.d.call("cuMemcpyDtoDAsync_v2", c.d.fn.cuMemcpyDtoDAsync, uintptr(dst), uintptr(src), uintptr(bytes), s.h)
}
