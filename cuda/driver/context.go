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

// Context is a CUDA context (CUcontext) together with the worker goroutine,
// locked to one OS thread, on which it is current. Do and Go may be called
// from any goroutine; the functions they run execute one at a time, in the
// order they were handed over, on the context's thread.
type Context struct {
	d    *Driver
	h    uintptr
	dev  Device
	mu   sync.RWMutex // guards dead: no send after close(jobs)
	dead bool
	jobs chan func()
	done chan struct{}
}

// NewContext starts a worker goroutine locked to a new OS thread and creates
// a context for dev there (cuCtxCreate_v2, flags 0: the driver picks how to
// wait). It returns the *Error of cuCtxCreate_v2 on failure, after stopping
// the worker.
func (d *Driver) NewContext(dev Device) (*Context, error) {
	c := &Context{d: d, dev: dev, jobs: make(chan func(), 1024), done: make(chan struct{})}
	errc := make(chan error, 1)
	go c.loop(errc)
	if err := <-errc; err != nil {
		return nil, err
	}
	return c, nil
}

// loop is the worker: it creates the context, reports the result on errc,
// then runs jobs until the channel closes. It never unlocks its thread, so
// the thread ends with the goroutine and no other goroutine inherits the
// context.
func (c *Context) loop(errc chan<- error) {
	runtime.LockOSThread()
	defer close(c.done)
	var h uintptr
	if err := c.d.call("cuCtxCreate_v2", c.d.fn.cuCtxCreate, uintptr(unsafe.Pointer(&h)), 0, uintptr(c.dev)); err != nil {
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

// Destroy waits for queued work, destroys the context (cuCtxDestroy_v2),
// which frees everything allocated in it, and stops the worker. Later calls
// of Do and Go return ErrDestroyed; destroying twice returns nil.
func (c *Context) Destroy() error {
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return nil
	}
	c.dead = true
	var err error
	c.jobs <- func() { err = c.d.call("cuCtxDestroy_v2", c.d.fn.cuCtxDestroy, c.h) }
	close(c.jobs)
	c.mu.Unlock()
	<-c.done
	return err
}

// Synchronize waits for all work in the context (cuCtxSynchronize).
// Context thread only.
func (c *Context) Synchronize() error {
	return c.d.call("cuCtxSynchronize", c.d.fn.cuCtxSynchronize)
}
