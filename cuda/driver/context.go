package driver

import (
	"errors"
	"runtime"
	"sync"
	"unsafe"
)

// ErrDestroyed is returned by Context.Do and Context.Go once the context has
// been destroyed.
var ErrDestroyed = errors.New("cuda driver: context destroyed")

// Context is the primary CUDA context of one device (the context the CUDA
// runtime and every library built on it use), retained, together with the
// worker goroutine, locked to one OS thread, on which it is current. Do and
// Go may be called from any goroutine; the functions they run execute one
// at a time, in the order they were handed over, on the context's thread.
//
// Sharing the primary context means a host program's own CUDA work and
// dainx's see the same device memory and may pass pointers to each other.
type Context struct {
	d    *Driver
	h    uintptr
	dev  Device
	mu   sync.RWMutex // guards dead: no send after close(jobs)
	dead bool
	jobs chan func()
	done chan struct{}
}

// NewContext starts a worker goroutine locked to a new OS thread, retains
// the primary context of dev there (cuDevicePrimaryCtxRetain) and makes it
// current on that thread (cuCtxSetCurrent). It returns the *Error of the
// failing call, after stopping the worker.
func (d *Driver) NewContext(dev Device) (*Context, error) {
	c := &Context{d: d, dev: dev, jobs: make(chan func(), 1024), done: make(chan struct{})}
	errc := make(chan error, 1)
	go c.loop(errc)
	if err := <-errc; err != nil {
		return nil, err
	}
	return c, nil
}

// loop is the worker: it retains and binds the context, reports the result
// on errc, then runs jobs until the channel closes. It never unlocks its
// thread, so the thread ends with the goroutine and no other goroutine
// inherits the binding.
func (c *Context) loop(errc chan<- error) {
	runtime.LockOSThread()
	defer close(c.done)
	var h uintptr
	if err := c.d.call("cuDevicePrimaryCtxRetain", c.d.fn.cuPrimaryCtxRetain, uintptr(unsafe.Pointer(&h)), uintptr(c.dev)); err != nil {
		errc <- err
		return
	}
	if err := c.d.call("cuCtxSetCurrent", c.d.fn.cuCtxSetCurrent, h); err != nil {
		_ = c.d.call("cuDevicePrimaryCtxRelease_v2", c.d.fn.cuPrimaryCtxRelease, uintptr(c.dev))
		errc <- err
		return
	}
	c.h = h
	errc <- nil
	for f := range c.jobs {
		f()
	}
}

// Driver returns the driver the context belongs to.
func (c *Context) Driver() *Driver { return c.d }

// Device returns the device of the context.
func (c *Context) Device() Device { return c.dev }

// Do runs f on the context's thread and waits for it to return. It returns
// ErrDestroyed, without running f, once the context is destroyed. f must not
// call Do or Go of the same context (it would wait for itself).
func (c *Context) Do(f func()) error {
	done := make(chan struct{})
	if err := c.Go(func() { f(); close(done) }); err != nil {
		return err
	}
	<-done
	return nil
}

// Go queues f to run on the context's thread and returns at once; f runs
// after every function queued before it. It returns ErrDestroyed, without
// queueing f, once the context is destroyed.
func (c *Context) Go(f func()) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.dead {
		return ErrDestroyed
	}
	c.jobs <- f
	return nil
}

// Destroy waits for queued work, releases the primary context
// (cuDevicePrimaryCtxRelease_v2) and stops the worker. The driver destroys
// the context, and whatever is still allocated in it, when its last user
// releases it; a caller that shares the context must free its own memory
// first. Later calls of Do and Go return ErrDestroyed; destroying twice
// returns nil.
func (c *Context) Destroy() error {
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return nil
	}
	c.dead = true
	var err error
	c.jobs <- func() {
		err = c.d.call("cuDevicePrimaryCtxRelease_v2", c.d.fn.cuPrimaryCtxRelease, uintptr(c.dev))
	}
	close(c.jobs)
	c.mu.Unlock()
	<-c.done
	return err
}

// Synchronize waits for all work in the context (cuCtxSynchronize), the
// work of other users of the primary context included. Context thread
// only.
func (c *Context) Synchronize() error {
	return c.d.call("cuCtxSynchronize", c.d.fn.cuCtxSynchronize)
}
