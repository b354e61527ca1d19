package mpijob

import (
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda"
	"github.com/dainx/dainx/mpi"
)

// NCCL, loaded at run time like MPI and the CUDA driver. The values below
// are NCCL's stable C ABI (nccl.h, NCCL 2.x; documented in the NCCL user
// guide's API section): ncclUniqueId is a struct of NCCL_UNIQUE_ID_BYTES =
// 128 bytes, passed by value to ncclCommInitRank; ncclFloat32 = 7,
// ncclSum = 0; ncclSuccess = 0; ncclComm_t is a pointer. A cudaStream_t is
// the driver API's CUstream.
//
// This path has been compiled, not yet run: no GPU was available when it
// was written (see docs/mpi.md).
const (
	ncclLibrary      = "libnccl.so.2"
	ncclUniqueIDSize = 128
	ncclFloat32      = 7
	ncclSum          = 0
)

// dlopen opens a shared library (purego.Dlopen; a variable for tests).
var dlopen = purego.Dlopen

// loadNCCL fills n's functions from libnccl.so.2 when on, and otherwise
// opens nothing. It returns why NCCL is not used ("" when it may be). Off
// is the default until a run on GPUs has verified this path (gradients
// then go through host memory and MPI); the reason names dainx's switches
// (-nccl, whose default $DAINX_NCCL=1 turns on).
func loadNCCL(n *NCCL, on bool) string {
	if !on {
		return "NCCL is off by default until a GPU run verifies it (-nccl on, or $DAINX_NCCL=1, turns it on)"
	}
	lib, err := dlopen(ncclLibrary, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return "no NCCL: " + err.Error()
	}
	for _, s := range []struct {
		p    *uintptr
		name string
	}{{&n.fn.getUniqueID, "ncclGetUniqueId"}, {&n.fn.commInitRank, "ncclCommInitRank"}, {&n.fn.allReduce, "ncclAllReduce"},
		{&n.fn.commDestroy, "ncclCommDestroy"}, {&n.fn.getErrorString, "ncclGetErrorString"}} {
		if *s.p, err = purego.Dlsym(lib, s.name); err != nil || *s.p == 0 {
			return fmt.Sprintf("%s lacks %s", ncclLibrary, s.name)
		}
	}
	return ""
}

type ncclFuncs struct {
	getUniqueID, commInitRank, allReduce, commDestroy, getErrorString uintptr
}

// NCCL sums device buffers of a CUDA backend across the ranks.
type NCCL struct {
	fn   ncclFuncs
	comm uintptr
}

// Name says what the device exchange is.
func (n *NCCL) Name() string { return "NCCL all-reduce" }

func (n *NCCL) errorf(call string, r uintptr) error {
	code := int32(uint32(r))
	msg := ""
	if p, _, _ := purego.SyscallN(n.fn.getErrorString, uintptr(code)); p != 0 {
		b := unsafe.Slice((*byte)(unsafeFromC(p)), 256)
		for i, c := range b {
			if c == 0 {
				msg = string(b[:i])
				break
			}
		}
	}
	return fmt.Errorf("%s: NCCL error %d: %s", call, code, msg)
}

// OpenNCCL sets up NCCL across the ranks of c for the CUDA backend be:
// rank 0 makes the unique id, MPI broadcasts it, and every rank joins the
// communicator on its own device. It returns nil and why when NCCL is not
// used (another backend, on false — the default, under which libnccl.so.2
// is not even opened —, no libnccl.so.2 on some rank, or a failed
// set-up); the ranks agree, so either all use NCCL or none.
func OpenNCCL(c *mpi.Comm, be compute.Backend, on bool) (DeviceComm, string) {
	cb, ok := be.(*cuda.Backend)
	if !ok {
		// Collective even so: every rank's backend may differ (auto).
		ok := []int32{0}
		c.Allreduce(ok, mpi.Min)
		return nil, ""
	}
	n := &NCCL{}
	why := loadNCCL(n, on)
	if why == "" {
		_, local := c.LocalRank()
		why = shareGPUs(local, cb.DeviceCount)
	}
	have := []int32{1}
	if why != "" {
		have[0] = 0
	}
	c.Allreduce(have, mpi.Min)
	if have[0] == 0 {
		if why == "" {
			why = "another rank has no usable NCCL"
		}
		return nil, why
	}
	id := make([]byte, ncclUniqueIDSize)
	failed := []int32{0}
	if c.Rank() == 0 {
		if r, _, _ := purego.SyscallN(n.fn.getUniqueID, uintptr(unsafe.Pointer(&id[0]))); r != 0 {
			why = n.errorf("ncclGetUniqueId", r).Error()
			failed[0] = 1
		}
	}
	c.Allreduce(failed, mpi.Max)
	if failed[0] != 0 {
		return nil, "NCCL set-up failed on rank 0: " + why
	}
	c.Bcast(id, 0)
	// A failed set-up leaves the backend usable (OnContext): the run goes
	// on with gradients through host memory.
	err := cb.OnContext(func(uintptr) error {
		// ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id,
		// int rank): the 128-byte struct is passed by value, which the
		// x86-64 System V ABI puts on the stack (class MEMORY) while comm,
		// nranks and rank take the first three integer registers.
		args := []uintptr{uintptr(unsafe.Pointer(&n.comm)), uintptr(c.Size()), uintptr(c.Rank()), 0, 0, 0}
		for i := 0; i < ncclUniqueIDSize; i += 8 {
			args = append(args, uintptr(*(*uint64)(unsafe.Pointer(&id[i]))))
		}
		if r, _, _ := purego.SyscallN(n.fn.commInitRank, args...); r != 0 {
			return n.errorf("ncclCommInitRank", r)
		}
		return nil
	})
	if err != nil {
		failed[0] = 1
		why = err.Error()
	}
	c.Allreduce(failed, mpi.Max)
	if failed[0] != 0 {
		if why == "" {
			why = "NCCL set-up failed on another rank"
		}
		return nil, why
	}
	return n, ""
}

// shareGPUs returns why NCCL cannot run when this node's ranks outnumber
// its GPUs (NCCL refuses two ranks of one communicator on the same GPU:
// ncclInvalidUsage, seen with two ranks on one H200, 2026-11-26), else "".
// local is the number of ranks on this node.
func shareGPUs(local int, count func() (int, error)) string {
	n, err := count()
	if err != nil || n < 1 || local <= n {
		return ""
	}
	return fmt.Sprintf("%d ranks on this node share its %d GPU(s), and NCCL needs one GPU per rank", local, n)
}

// unsafeFromC converts an address a C function returned (memory Go does
// not manage) to a pointer.
func unsafeFromC(p uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&p))
}

// SumDevice sums x over the ranks in place on the device (ncclAllReduce on
// the backend's stream, ordered with its other work).
func (n *NCCL) SumDevice(be compute.Backend, x compute.F32) (bool, error) {
	cb, ok := be.(*cuda.Backend)
	if !ok {
		return false, nil
	}
	buf, ok := x.(*cuda.F32)
	if !ok {
		return false, nil
	}
	if x.Len() == 0 {
		return true, nil
	}
	p := uintptr(buf.Ptr())
	return true, cb.OnStream(func(stream uintptr) error {
		if r, _, _ := purego.SyscallN(n.fn.allReduce, p, p, uintptr(x.Len()), ncclFloat32, ncclSum, n.comm, stream); r != 0 {
			return n.errorf("ncclAllReduce", r)
		}
		return nil
	})
}
