package cuda

import (
	"fmt"
	"sync/atomic"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda/driver"
)

var _ compute.Capturer = (*Backend)(nil)

// Graph is a recorded sequence of the backend's queued operations (kernel
// launches, Fill, Copy), replayed as one CUDA graph by Launch: one driver
// call instead of one per operation, and no gaps between kernels. Make one
// with Backend.Capture.
type Graph struct {
	be    *Backend
	exec  *driver.GraphExec
	freed atomic.Bool
}

// Capture runs f, recording every operation f queues on the backend into a
// CUDA graph instead of running it (stream capture, thread-local mode), and
// returns the graph. Nothing runs until Launch.
//
// The graph freezes each operation's arguments: the buffers (by address),
// sizes and scalars f passed, the backend's scratch memory included (which
// is therefore kept, not freed, when a later operation needs more of it,
// until the last graph is freed). A Launch reads and writes those buffers' then
// current contents, so a step whose inputs change from run to run keeps
// them in fixed buffers that are refilled between launches. The buffers
// must stay allocated while the graph lives.
//
// f must only queue operations. Alloc, AllocI32, Upload, Download and Sync
// wait for the device and cannot be recorded: they panic during Capture
// (and the capture is abandoned). An operation that would grow the
// backend's scratch memory makes the capture fail; run f once eagerly
// first, which also sizes the scratch. Capture returns the sticky error if
// one is recorded, and an error when the driver has no graph support
// (CUDA before 11.4) or the capture was invalidated. It panics after Close,
// or if called during another Capture.
func (be *Backend) Capture(f func()) (compute.Graph, error) {
	if be.closed.Load() {
		panic("cuda: backend used after Close")
	}
	if be.capture.Swap(true) {
		panic("cuda: Capture during Capture")
	}
	var err error
	if e := be.ctx.Do(func() {
		if err = be.err; err != nil {
			return
		}
		if e := be.stream.BeginCapture(driver.CaptureThreadLocal); e != nil {
			err = fmt.Errorf("cuda: Capture: %w", e)
			return
		}
		be.recording = true
	}); e != nil {
		err = e
	}
	if err != nil {
		be.capture.Store(false)
		return nil, err
	}
	var g *Graph
	end := func() {
		var endErr error
		_ = be.ctx.Do(func() {
			be.recording = false
			graph, e := be.stream.EndCapture()
			if e != nil {
				endErr = fmt.Errorf("cuda: Capture: %w", e)
				return
			}
			defer graph.Destroy()
			if be.err != nil {
				endErr = be.err
				return
			}
			exec, e := graph.Instantiate()
			if e != nil {
				endErr = fmt.Errorf("cuda: Capture: %w", e)
				return
			}
			g = &Graph{be: be, exec: exec}
			be.graphs[g] = true
		})
		be.capture.Store(false)
		err = endErr
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				end()
				panic(r)
			}
		}()
		f()
	}()
	end()
	if err != nil {
		return nil, err
	}
	return g, nil
}

// Launch queues one replay of the graph on the backend's stream, after the
// operations queued before it and before those queued after it. A failure
// becomes the backend's sticky error. It panics after Free or Close.
func (g *Graph) Launch() {
	if g.freed.Load() {
		panic("cuda: Launch of a freed Graph")
	}
	be := g.be
	be.post(func() {
		if be.graphs[g] && be.err == nil {
			be.fail("graph launch", g.exec.Launch(be.stream))
		}
	})
}

// Free destroys the graph once its queued replays are done. Freeing twice,
// or after Close, does nothing.
func (g *Graph) Free() {
	if g.freed.Swap(true) {
		return
	}
	be := g.be
	_ = be.ctx.Go(func() {
		if be.graphs[g] {
			delete(be.graphs, g)
			be.fail("graph free", g.exec.Destroy())
			if len(be.graphs) == 0 && len(be.retired) > 0 {
				// Queued replays may still use the retired scratch.
				be.fail("graph free", be.stream.Synchronize())
				for _, p := range be.retired {
					delete(be.live, p)
					be.fail("graph free", be.ctx.MemFree(p))
				}
				be.retired = nil
			}
		}
	})
}
