package driver

import (
	"fmt"
	"strings"
	"unsafe"
)

// Graphs reports whether the driver has the stream-capture and graph entry
// points (CUDA 11.4 and later), and if not, names the missing ones.
func (d *Driver) Graphs() (bool, string) {
	var miss []string
	for _, n := range d.missing {
		if strings.HasPrefix(n, "cuStream") || strings.HasPrefix(n, "cuGraph") {
			miss = append(miss, n)
		}
	}
	if len(miss) > 0 {
		return false, fmt.Sprintf("CUDA driver %s lacks %s (CUDA 11.4 or later needed)", d.lib, strings.Join(miss, ", "))
	}
	return true, ""
}

// CaptureMode is how strictly stream capture forbids other CUDA calls while
// it is on (CUstreamCaptureMode).
type CaptureMode int

const (
	// CaptureGlobal forbids unsafe calls (allocation, synchronous copies)
	// from any thread while any capture in the process is on.
	CaptureGlobal CaptureMode = 0
	// CaptureThreadLocal forbids them on the capturing thread only: the
	// context thread of a Context.
	CaptureThreadLocal CaptureMode = 1
	// CaptureRelaxed forbids nothing.
	CaptureRelaxed CaptureMode = 2
)

// Graph is a captured CUDA graph (CUgraph).
type Graph struct {
	c *Context
	h uintptr
}

// GraphExec is an instantiated, launchable graph (CUgraphExec).
type GraphExec struct {
	c *Context
	h uintptr
}

// BeginCapture starts recording the work issued to s into a graph
// (cuStreamBeginCapture_v2) instead of running it. Context thread only.
func (s *Stream) BeginCapture(mode CaptureMode) error {
	if ok, why := s.c.d.Graphs(); !ok {
		return fmt.Errorf("cuStreamBeginCapture_v2: %s", why)
	}
	return s.c.d.call("cuStreamBeginCapture_v2", s.c.d.fn.cuStreamBeginCapture, s.h, uintptr(mode))
}

// EndCapture stops recording on s and returns the graph of what was issued
// since BeginCapture (cuStreamEndCapture). If an operation was illegal
// during capture, the capture is invalidated and this returns its error
// (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED). Context thread only.
func (s *Stream) EndCapture() (*Graph, error) {
	var g uintptr
	if err := s.c.d.call("cuStreamEndCapture", s.c.d.fn.cuStreamEndCapture, s.h, uintptr(unsafe.Pointer(&g))); err != nil {
		return nil, err
	}
	return &Graph{c: s.c, h: g}, nil
}

// Instantiate makes a launchable graph of g (cuGraphInstantiateWithFlags,
// flags 0). g may be destroyed afterwards. Context thread only.
func (g *Graph) Instantiate() (*GraphExec, error) {
	var e uintptr
	if err := g.c.d.call("cuGraphInstantiateWithFlags", g.c.d.fn.cuGraphInstantiate, uintptr(unsafe.Pointer(&e)), g.h, 0); err != nil {
		return nil, err
	}
	return &GraphExec{c: g.c, h: e}, nil
}

// Destroy destroys the graph (cuGraphDestroy); instantiated copies stay
// valid. Context thread only.
func (g *Graph) Destroy() error {
	return g.c.d.call("cuGraphDestroy", g.c.d.fn.cuGraphDestroy, g.h)
}

// Launch queues one run of the whole graph on s (cuGraphLaunch), ordered
// after s's earlier work like any other operation on s. Context thread
// only.
func (e *GraphExec) Launch(s *Stream) error {
	return e.c.d.call("cuGraphLaunch", e.c.d.fn.cuGraphLaunch, e.h, s.h)
}

// Destroy destroys the launchable graph (cuGraphExecDestroy) once its
// queued runs are done. Context thread only.
func (e *GraphExec) Destroy() error {
	return e.c.d.call("cuGraphExecDestroy", e.c.d.fn.cuGraphExecDestroy, e.h)
}
