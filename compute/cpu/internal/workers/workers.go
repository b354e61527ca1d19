// Package workers runs the parallel parts of the CPU backend's operations
// on a few long-lived goroutines that wait for work by spinning briefly
// before they park.
//
// Why: a training step of DAIN's models is a few dozen operations of tens
// to hundreds of microseconds each, and each one split over the cores. A
// fresh goroutine per part (go f(); wg.Wait()) makes the runtime wake a
// parked thread for nearly every operation: on the 2-core development VM
// the futex wake-ups and context switches took about a tenth of a training
// epoch's CPU time (perf, 2026-11-24). A worker that has just finished a
// part spins for about spinLoads loads of its slot (tens of microseconds)
// before it parks, so the next operation finds it awake.
//
// One Run at a time uses the pool; a Run that finds it busy (another
// backend on another goroutine, or a Run nested inside a part) starts
// goroutines as before. Results never depend on which path ran a part.
package workers

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// spinLoads is how many times an idle worker (or a Run waiting for its
// workers) checks its slot before it parks (or yields), unless SetSpin
// turned spinning off.
const spinLoads = 1 << 16

// spin is the current limit: spinLoads, or 0 after SetSpin(false).
var spin atomic.Int64

func init() { spin.Store(spinLoads) }

// SetSpin turns the brief spinning of idle workers (and of a Run waiting
// for them) on or off. Off, a worker parks as soon as it is idle and a
// waiting Run yields: for a process that shares its cores with others
// (more MPI ranks than cores), where a spinning thread takes a core that
// another process needs.
func SetSpin(on bool) {
	if on {
		spin.Store(spinLoads)
	} else {
		spin.Store(0)
	}
}

// worker is one pooled goroutine and its slot: seq counts the parts posted
// to it, done the parts it finished.
type worker struct {
	seq, done atomic.Uint64
	parked    atomic.Bool
	wake      chan struct{} // buffered 1: a wake-up is never lost
	waiting   atomic.Bool   // a Run blocks on finished for this worker
	finished  chan struct{} // buffered 1, as wake
	f         func(int)
	t         int
	_         [64]byte // keeps workers' hot fields on separate cache lines
}

var pool struct {
	mu      sync.Mutex // held by the Run that uses the pool
	workers []*worker
}

// Run calls f(0), …, f(parts−1) concurrently, f(0) on the calling
// goroutine, and returns when all have returned. parts ≤ 1 calls f(0)
// alone. A panic in f(0) propagates after the other parts have finished;
// a panic in another part ends the process, as in any goroutine.
func Run(parts int, f func(t int)) {
	if parts <= 1 {
		f(0)
		return
	}
	if !pool.mu.TryLock() {
		spawn(parts, f)
		return
	}
	for len(pool.workers) < parts-1 {
		w := &worker{wake: make(chan struct{}, 1), finished: make(chan struct{}, 1)}
		pool.workers = append(pool.workers, w)
		go w.loop()
	}
	ws := pool.workers[:parts-1]
	defer func() {
		for _, w := range ws {
			w.wait()
			w.f = nil
		}
		pool.mu.Unlock()
	}()
	for i, w := range ws {
		w.f, w.t = f, i+1
		w.seq.Add(1)
		if w.parked.Load() {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
	f(0)
}

// spawn is Run with fresh goroutines.
func spawn(parts int, f func(t int)) {
	var wg sync.WaitGroup
	wg.Add(parts - 1)
	for t := 1; t < parts; t++ {
		go func() {
			defer wg.Done()
			f(t)
		}()
	}
	defer wg.Wait()
	f(0)
}

// loop runs the parts posted to w, forever.
func (w *worker) loop() {
	var last uint64
	for {
		limit := int(spin.Load())
		for n := 0; w.seq.Load() == last; n++ {
			if n < limit {
				continue
			}
			// Park: announce it, then look once more, so that a Run that
			// posted before seeing parked has its part seen here, and one
			// that posts after sends a wake-up.
			w.parked.Store(true)
			if w.seq.Load() == last {
				<-w.wake
			}
			w.parked.Store(false)
			n = 0
		}
		last = w.seq.Load()
		w.f(w.t)
		w.done.Store(last)
		if w.waiting.Load() {
			select {
			case w.finished <- struct{}{}:
			default:
			}
		}
	}
}

// wait returns when w has finished every part posted to it. With
// spinning on (the process has its cores) it polls, yielding to other
// goroutines after spinLoads polls: waking a blocked thread costs more
// than the polling, since the worker's part is usually about to end. With
// spinning off (the cores are shared with other processes) it blocks
// until the worker says it has finished: a polling thread would hold a
// core that the worker, or another process, needs.
func (w *worker) wait() {
	want := w.seq.Load()
	if spin.Load() > 0 {
		for n := 0; w.done.Load() != want; n++ {
			if n >= spinLoads {
				runtime.Gosched()
			}
		}
		return
	}
	for w.done.Load() != want {
		// As in loop: announce, look once more, then block; a stale
		// token from an earlier wait only sends us round again.
		w.waiting.Store(true)
		if w.done.Load() != want {
			<-w.finished
		}
		w.waiting.Store(false)
	}
}
