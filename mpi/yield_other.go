//go:build !linux

package mpi

// osYield reports that this system has no sched_yield here: the yielding
// collectives sleep instead.
func osYield() bool { return false }
