// Package cluster defines the processes a dainx run is spread over: the
// Cluster of collectives that training (package nn), sampling and the
// pipeline (package dain) call, and Local, the cluster of one process that
// a run outside MPI is. Package cluster/mpijob implements Cluster over the
// ranks of an MPI job.
package cluster

import (
	"fmt"
	"slices"

	"github.com/dainx/dainx/compute"
)

// Cluster is the processes a run is spread over and their collectives.
// Every process calls each collective in the same order with arguments of
// the same shape (where the doc says so); each returns the same result on
// every process unless it says otherwise. A collective that fails (the
// transport is gone) aborts the job: there is no error to return.
type Cluster interface {
	// Size returns the number of processes; Rank this process's number,
	// 0 ≤ Rank < Size.
	Size() int
	Rank() int
	// SumF32, SumF64 and SumI64 replace x (the same length on every
	// process) by its element-wise sum over the processes, in place.
	SumF32(x []float32)
	SumF64(x []float64)
	SumI64(x []int64)
	// GatherF32, GatherI32 and GatherF64 return every process's x (of any
	// length) concatenated in process order, in a new slice.
	GatherF32(x []float32) []float32
	GatherI32(x []int32) []int32
	GatherF64(x []float64) []float64
	// AlltoallI32 sends send[:counts[0]] to process 0, the next counts[1]
	// to process 1, …, and returns what every process sent this one, in
	// process order, in a new slice. len(counts) is Size.
	AlltoallI32(send []int32, counts []int32) []int32
	// AlltoallvI32 is AlltoallI32 into dst (grown only when too short),
	// with the number received from each process written to recvCounts
	// (len Size).
	AlltoallvI32(dst, send []int32, counts, recvCounts []int32) []int32
	// AlltoallvF32 is the same exchange of float32s when recvCounts
	// already holds what each process sends this one.
	AlltoallvF32(dst, send []float32, sendCounts, recvCounts []int32) []float32
	// CommSeconds returns the wall time spent in collectives so far.
	CommSeconds() float64
	// Describe names the transport (the MPI library, the device
	// exchange), for the report.
	Describe() string
}

// DeviceSummer is a Cluster that can also sum a backend buffer in place on
// the device (NCCL). SumDevice returns false when it cannot (the caller
// then sums through host memory).
type DeviceSummer interface {
	SumDevice(be compute.Backend, x compute.F32) (bool, error)
}

// Local is the cluster of one process: every sum leaves x as it is, every
// gather and exchange returns a copy of this process's own data. A run
// outside MPI is a run on Local.
type Local struct{}

var _ Cluster = Local{}

func (Local) Size() int            { return 1 }
func (Local) Rank() int            { return 0 }
func (Local) SumF32([]float32)     {}
func (Local) SumF64([]float64)     {}
func (Local) SumI64([]int64)       {}
func (Local) CommSeconds() float64 { return 0 }
func (Local) Describe() string     { return "one process" }

func (Local) GatherF32(x []float32) []float32 { return slices.Clone(x) }
func (Local) GatherI32(x []int32) []int32     { return slices.Clone(x) }
func (Local) GatherF64(x []float64) []float64 { return slices.Clone(x) }

// AlltoallI32 panics unless len(counts) is 1 and counts[0] ≤ len(send).
func (Local) AlltoallI32(send []int32, counts []int32) []int32 {
	return slices.Clone(send[:one(counts)])
}

// AlltoallvI32 panics unless len(counts) = len(recvCounts) = 1 and
// counts[0] ≤ len(send).
func (Local) AlltoallvI32(dst, send []int32, counts, recvCounts []int32) []int32 {
	n := one(counts)
	one(recvCounts)
	recvCounts[0] = int32(n)
	if cap(dst) < n {
		dst = make([]int32, n)
	}
	dst = dst[:n]
	copy(dst, send[:n])
	return dst
}

// AlltoallvF32 panics unless sendCounts and recvCounts are one equal
// count, at most len(send).
func (Local) AlltoallvF32(dst, send []float32, sendCounts, recvCounts []int32) []float32 {
	n := one(sendCounts)
	if one(recvCounts) != n {
		panic(fmt.Sprintf("cluster: one process sends %d and receives %d", n, recvCounts[0]))
	}
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	copy(dst, send[:n])
	return dst
}

// one returns the single count of a one-process exchange.
func one(counts []int32) int {
	if len(counts) != 1 || counts[0] < 0 {
		panic(fmt.Sprintf("cluster: counts %v on one process", counts))
	}
	return int(counts[0])
}
