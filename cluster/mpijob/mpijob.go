// Package mpijob is the processes of an MPI job (dainx augment -dist mpi)
// as a cluster.Cluster, through which the pipeline's collectives go (with
// NCCL for device buffers when the caller asks for it, as dainx augment
// -nccl on does, and libnccl.so.2 is present; off by default until a GPU
// run verifies it), and the agreement of the ranks on a failure (Agree).
// It knows nothing of tensors or of the pipeline: the commands read their
// input over the ranks (cmd/dainx's readpart.go).
package mpijob

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/mpi"
)

// Cluster is cluster.Cluster over an MPI communicator.
type Cluster struct {
	C *mpi.Comm
	// Device, if not nil, sums device buffers (NCCL); the dense gradients
	// then never leave the device.
	Device DeviceComm
}

// DeviceComm sums a backend's buffers on the device.
type DeviceComm interface {
	SumDevice(be compute.Backend, x compute.F32) (bool, error)
	Name() string
}

var _ cluster.Cluster = (*Cluster)(nil)

func (c *Cluster) Size() int            { return c.C.Size() }
func (c *Cluster) Rank() int            { return c.C.Rank() }
func (c *Cluster) SumF32(x []float32)   { c.C.Allreduce(x, mpi.Sum) }
func (c *Cluster) SumF64(x []float64)   { c.C.Allreduce(x, mpi.Sum) }
func (c *Cluster) SumI64(x []int64)     { c.C.Allreduce(x, mpi.Sum) }
func (c *Cluster) CommSeconds() float64 { return c.C.Stats().Elapsed.Seconds() }
func (c *Cluster) Oversubscribed() bool { return c.C.Oversubscribed() }

func (c *Cluster) GatherF32(x []float32) []float32 { out, _ := mpi.Allgatherv(c.C, x); return out }
func (c *Cluster) GatherI32(x []int32) []int32     { out, _ := mpi.Allgatherv(c.C, x); return out }
func (c *Cluster) GatherF64(x []float64) []float64 { out, _ := mpi.Allgatherv(c.C, x); return out }

func (c *Cluster) AlltoallvI32(dst, send, counts, recvCounts []int32) []int32 {
	return mpi.AlltoallvInto(c.C, dst, send, counts, recvCounts, false)
}

func (c *Cluster) AlltoallvF32(dst, send []float32, sendCounts, recvCounts []int32) []float32 {
	return mpi.AlltoallvInto(c.C, dst, send, sendCounts, recvCounts, true)
}

func (c *Cluster) AlltoallI32(send []int32, counts []int32) []int32 {
	out, _ := mpi.Alltoallv(c.C, send, counts)
	return out
}

// SumDevice sums x over the ranks on the device when a DeviceComm is set
// (cluster.DeviceSummer).
func (c *Cluster) SumDevice(be compute.Backend, x compute.F32) (bool, error) {
	if c.Device == nil {
		return false, nil
	}
	t0 := time.Now()
	ok, err := c.Device.SumDevice(be, x)
	_ = t0
	return ok, err
}

// Describe names the MPI library and the device exchange.
func (c *Cluster) Describe() string {
	s := fmt.Sprintf("%s, %s", c.C.ABI(), c.C.Version())
	if c.Device != nil {
		s += "; device buffers through " + c.Device.Name()
	} else {
		s += "; through host memory"
	}
	return s
}

// ErrReported is returned on every rank when the job failed and the rank
// that found the reason has printed it: the others have nothing to add.
var ErrReported = errors.New("dist: failed on another rank")

// Agree makes a failure on any rank a failure on every rank: err is this
// rank's error (nil if it succeeded) and key orders the failures (the
// lowest is reported; a global line number for bad input). It returns nil
// when every rank succeeded; otherwise this rank's err on the rank whose
// failure has the lowest key (the lowest rank among equal keys), and
// ErrReported on the others.
func Agree(c *mpi.Comm, err error, key int64) error {
	k := []int64{math.MaxInt64}
	if err != nil {
		k[0] = key
		if key == math.MaxInt64 {
			k[0] = math.MaxInt64 - 1
		}
	}
	c.Allreduce(k, mpi.Min)
	if k[0] == math.MaxInt64 {
		return nil
	}
	r := []int64{math.MaxInt64}
	if err != nil && (key == k[0] || (key == math.MaxInt64 && k[0] == math.MaxInt64-1)) {
		r[0] = int64(c.Rank())
	}
	c.Allreduce(r, mpi.Min)
	if int64(c.Rank()) == r[0] {
		return err
	}
	return ErrReported
}
