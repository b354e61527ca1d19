package driver

import "unsafe"

// Stream is a CUstream.
type Stream struct {
	c *Context
	h uintptr
}

// NewStream creates a non-blocking stream (cuStreamCreate,
// CU_STREAM_NON_BLOCKING): its work is not ordered with the legacy default
// stream, so a host program sharing the context does not wait for it, nor
// it for the host program; work that must follow it goes on the same
// stream (the …Async calls). Context thread only.
func (c *Context) NewStream() (*Stream, error) {
	const nonBlocking = 1 // CU_STREAM_NON_BLOCKING
	var h uintptr
	if err := c.d.call("cuStreamCreate", c.d.fn.cuStreamCreate, uintptr(unsafe.Pointer(&h)), nonBlocking); err != nil {
		return nil, err
	}
	return &Stream{c: c, h: h}, nil
}

// Synchronize waits for the stream's work (cuStreamSynchronize) and returns
// the first asynchronous error, if any. Context thread only.
func (s *Stream) Synchronize() error {
	return s.c.d.call("cuStreamSynchronize", s.c.d.fn.cuStreamSynchronize, s.h)
}

// Destroy destroys the stream once its work is done (cuStreamDestroy_v2).
// Context thread only.
func (s *Stream) Destroy() error {
	return s.c.d.call("cuStreamDestroy_v2", s.c.d.fn.cuStreamDestroy, s.h)
}

// Event is a CUevent, used to time work on a stream.
type Event struct {
	c *Context
	h uintptr
}

// NewEvent creates an event with default flags (timing enabled)
// (cuEventCreate). Context thread only.
func (c *Context) NewEvent() (*Event, error) {
	var h uintptr
	if err := c.d.call("cuEventCreate", c.d.fn.cuEventCreate, uintptr(unsafe.Pointer(&h)), 0); err != nil {
		return nil, err
	}
	return &Event{c: c, h: h}, nil
}

// Record records the event on stream s (nil: the legacy default stream)
// (cuEventRecord). Context thread only.
func (e *Event) Record(s *Stream) error {
	var hs uintptr
	if s != nil {
		hs = s.h
	}
	return e.c.d.call("cuEventRecord", e.c.d.fn.cuEventRecord, e.h, hs)
}

// Synchronize waits for the event (cuEventSynchronize). Context thread only.
func (e *Event) Synchronize() error {
	return e.c.d.call("cuEventSynchronize", e.c.d.fn.cuEventSynchronize, e.h)
}

// Elapsed returns the time in milliseconds between start and end, both
// recorded and completed (cuEventElapsedTime). Context thread only.
func Elapsed(start, end *Event) (float32, error) {
	var ms float32
	if err := start.c.d.call("cuEventElapsedTime", start.c.d.fn.cuEventElapsedTime, uintptr(unsafe.Pointer(&ms)), start.h, end.h); err != nil {
		return 0, err
	}
	return ms, nil
}

// Destroy destroys the event (cuEventDestroy_v2). Context thread only.
func (e *Event) Destroy() error {
	return e.c.d.call("cuEventDestroy_v2", e.c.d.fn.cuEventDestroy, e.h)
}
