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
	wake      signal // the worker parks on it until a part is posted
	finished  signal // a Run blocks on it until the worker's part is done
	f         func(int)
	t         int
	_         [64]byte // keeps workers' hot fields on separate cache lines
}

// signal lets one goroutine block until a condition that another one makes
// true, without a lost wake-up: the sleeper announces itself, looks at the
// condition once more and only then blocks; the other side, after making
// the condition true, sends a token if someone has announced. A stale token
// (sent to a sleeper that had seen the condition already) only makes a
// later sleep look again.
type signal struct {
	asleep atomic.Bool
	ch     chan struct{} // buffered 1
}

// sleep returns once done() is true.
func (g *signal) sleep(done func() bool) {
	for !done() {
		g.asleep.Store(true)
		if !done() {
			<-g.ch
		}
		g.asleep.Store(false)
	}
}

// notify wakes a sleeper, if one has announced itself; call it after
// making the condition true.
func (g *signal) notify() {
	if g.asleep.Load() {
		select {
		case g.ch <- struct{}{}:
		default:
		}
	}
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
		w := &worker{wake: signal{ch: make(chan struct{}, 1)}, finished: signal{ch: make(chan struct{}, 1)}}
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
		w.wake.notify()
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
		posted := func() bool { return w.seq.Load() != last }
		for n, limit := 0, int(spin.Load()); n < limit && !posted(); n++ {
		}
		w.wake.sleep(posted)
		last = w.seq.Load()
		w.f(w.t)
		w.done.Store(last)
		w.finished.notify()
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
	w.finished.sleep(func() bool { return w.done.Load() == want })
}
