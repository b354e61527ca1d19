package cpu

import "sync"

// parallelFor calls f over a split of [0, n) into at most nthreads
// contiguous ranges of at least grain elements each, concurrently, and waits.
// Callers only split independent outputs, so the result does not depend on
// the split.
func (be *Backend) parallelFor(n, grain int, f func(lo, hi int)) {
	if n <= 0 {
		return
	}
	parts := min(be.nthreads(), max(1, n/max(grain, 1)))
	if parts <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	wg.Add(parts - 1)
	for t := 1; t < parts; t++ {
		go func() {
			defer wg.Done()
			f(t*n/parts, (t+1)*n/parts)
		}()
	}
	f(0, n/parts)
	wg.Wait()
}
