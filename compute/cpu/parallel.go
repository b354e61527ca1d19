package cpu

import "github.com/dainx/dainx/compute/cpu/internal/workers"

// parallelFor calls f over a split of [0, n) into at most nthreads
// contiguous ranges of at least grain elements each, concurrently (on the
// pooled workers), and waits. Callers only split independent outputs, so
// the result does not depend on the split.
func (be *Backend) parallelFor(n, grain int, f func(lo, hi int)) {
	if n <= 0 {
		return
	}
	parts := min(be.nthreads(), max(1, n/max(grain, 1)))
	if parts <= 1 {
		f(0, n)
		return
	}
	workers.Run(parts, func(t int) { f(t*n/parts, (t+1)*n/parts) })
}

// SetIdleSpin turns on (the default) or off the brief spinning with which
// the backends' idle worker threads wait for the next operation's parts
// (see compute/cpu/internal/workers): spinning saves a thread wake-up per
// operation when the process has its cores to itself, and takes a core
// from other processes when it shares them (dainx turns it off when an
// MPI node runs more ranks than cores). It affects every CPU backend of
// the process; results do not depend on it.
func SetIdleSpin(on bool) { workers.SetSpin(on) }
