// Package mpi binds the few MPI calls dainx's data-parallel runs need,
// loading the MPI library at run time with purego (no cgo), as the cuda
// package loads the CUDA driver: a dainx binary runs everywhere without
// MPI, and `-dist mpi` fails with the loader's reason where there is none.
//
// # Two ABIs
//
// MPI fixes the C API but not the binary interface. Two families cover the
// clusters dainx targets, and Init detects which one it loaded:
//
//   - MPICH and its derivatives (Intel MPI, MVAPICH, Cray MPICH): handles
//     are C ints whose values are compile-time constants of mpi.h (source:
//     Debian mpich 4.0.2, /usr/include/x86_64-linux-gnu/mpich/mpi.h):
//     MPI_COMM_WORLD 0x44000000, MPI_FLOAT 0x4c00040a, MPI_DOUBLE
//     0x4c00080b, MPI_INT 0x4c000405, MPI_BYTE 0x4c00010d, MPI_INT64_T
//     0x4c00083a, MPI_UINT8_T 0x4c00013b, MPI_MAX 0x58000001, MPI_MIN
//     0x58000002, MPI_SUM 0x58000003, MPI_BOR 0x58000008, MPI_INFO_NULL
//     0x1c000000, MPI_IN_PLACE (void*)-1, MPI_COMM_TYPE_SHARED 1,
//     MPI_MAX_LIBRARY_VERSION_STRING 8192.
//   - Open MPI: handles are pointers to library globals (source: Debian
//     openmpi 4.1.4, /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h,
//     OMPI_PREDEFINED_GLOBAL): MPI_COMM_WORLD is &ompi_mpi_comm_world,
//     MPI_FLOAT &ompi_mpi_float, MPI_SUM &ompi_mpi_op_sum and so on, which
//     this package resolves with dlsym; MPI_IN_PLACE is (void*)1,
//     MPI_COMM_TYPE_SHARED 0 (an enum), MPI_MAX_LIBRARY_VERSION_STRING
//     256.
//
// Both define MPI_THREAD_SERIALIZED as 2 and MPI_SUCCESS as 0. A library
// that exports ompi_mpi_comm_world is Open MPI; otherwise it must call
// itself MPICH (or a known derivative) in MPI_Get_library_version, else
// Init refuses it rather than pass it wrong handles.
//
// # Threads
//
// Go moves goroutines between OS threads, so Init asks for
// MPI_THREAD_SERIALIZED (any thread may call, one at a time) and every call
// here holds one mutex. Errors use MPI's default handler,
// MPI_ERRORS_ARE_FATAL: a failing call, or a rank that dies, aborts the
// whole job with a non-zero exit, which is what a run that must write
// nothing on failure wants.
package mpi

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Options configures Init. The package reads no environment itself: the
// dainx commands fill Options from the variables docs/environment.md lists
// (DAINX_LIBMPI, DAINX_MPI_YIELD, DAINX_MPI_WAIT) and pass the process's
// environment reader (package os's Getenv) as Getenv. The zero value loads
// the usual sonames, detects no launcher, yields where the node is
// oversubscribed and gives the core away with sched_yield.
type Options struct {
	// Library, when not empty, names the MPI library (a path or a
	// soname) Init loads instead of the usual sonames.
	Library string
	// Getenv reads the process's environment, as the launcher set it (a
	// program started by mpiexec or srun passes package os's Getenv, as
	// the dainx commands do). Init reads from it which launcher started
	// the process (OMPI_COMM_WORLD_SIZE: Open MPI's, whose library is then
	// tried first), how many ranks it started on this node
	// (MPI_LOCALNRANKS, OMPI_COMM_WORLD_LOCAL_SIZE, SLURM_NTASKS_PER_NODE),
	// and whether OMPI_MCA_mpi_yield_when_idle and
	// MPIR_CVAR_POLLS_BEFORE_YIELD are set already (then Init leaves them
	// as they are; else it sets the one that fits the node's load in the
	// process's environment, for the MPI library to read at MPI_Init).
	// nil reads an empty environment: no launcher, both variables unset.
	Getenv func(string) string
	// Yield says whether collectives give the core away while they wait:
	// YieldAuto (the zero value) where the node runs more ranks than it
	// has CPUs, YieldOn or YieldOff whatever the node's load.
	Yield Yield
	// SleepWait makes the yielding collectives sleep between tests
	// instead of giving the core to another process with sched_yield.
	SleepWait bool
}

// Yield is Options.Yield.
type Yield int

const (
	// YieldAuto, the zero value, yields where the node is oversubscribed
	// (Comm.Oversubscribed).
	YieldAuto Yield = iota
	// YieldOn runs the collectives as their nonblocking forms, completed
	// by MPI_Test with the core given away between tests, so that a rank
	// that waits leaves its core to the others.
	YieldOn
	// YieldOff runs the blocking collectives, which poll.
	YieldOff
)

// getenv returns o.Getenv, or a function that finds nothing when it is nil.
func (o Options) getenv() func(string) string {
	if o.Getenv != nil {
		return o.Getenv
	}
	return func(string) string { return "" }
}

// ABI is the binary interface of the loaded library.
type ABI int

const (
	MPICH   ABI = iota + 1 // integer handles
	OpenMPI                // pointer handles
)

func (a ABI) String() string {
	switch a {
	case MPICH:
		return "MPICH"
	case OpenMPI:
		return "Open MPI"
	}
	return "unknown"
}

// Type is an element type of a buffer.
type Type int

const (
	Float32 Type = iota
	Float64
	Int32
	Int64
	Byte
	Uint8
	numTypes
)

var typeSize = [numTypes]int{4, 8, 4, 8, 1, 1}

// Op is a reduction operation.
type Op int

const (
	Sum Op = iota
	Max
	Min
	BitOr
	numOps
)

// handles are the predefined handles of one ABI, as the uintptr passed in
// an argument register (an int for MPICH, an address for Open MPI).
type handles struct {
	world, infoNull uintptr
	inPlace         uintptr
	types           [numTypes]uintptr
	ops             [numOps]uintptr
	typeShared      uintptr
	versionLen      int
	statusIgnore    uintptr // MPI_STATUS_IGNORE
}

// mpichHandles are MPICH's (mpi.h, see the package documentation).
var mpichHandles = handles{
	world: 0x44000000, infoNull: 0x1c000000,
	inPlace: ^uintptr(0), // (void *) -1
	types:   [numTypes]uintptr{0x4c00040a, 0x4c00080b, 0x4c000405, 0x4c00083a, 0x4c00010d, 0x4c00013b},
	ops:     [numOps]uintptr{0x58000003, 0x58000001, 0x58000002, 0x58000008},
	// MPI_COMM_TYPE_SHARED
	typeShared: 1,
	versionLen: 8192,
	// (MPI_Status *)1
	statusIgnore: 1,
}

// openMPISymbols name the globals whose addresses are Open MPI's handles.
var openMPISymbols = struct {
	world, infoNull string
	types           [numTypes]string
	ops             [numOps]string
}{
	world: "ompi_mpi_comm_world", infoNull: "ompi_mpi_info_null",
	types: [numTypes]string{"ompi_mpi_float", "ompi_mpi_double", "ompi_mpi_int", "ompi_mpi_int64_t", "ompi_mpi_byte", "ompi_mpi_uint8_t"},
	ops:   [numOps]string{"ompi_mpi_op_sum", "ompi_mpi_op_max", "ompi_mpi_op_min", "ompi_mpi_op_bor"},
}

// symbols holds the address of every bound MPI function; the tag names it.
type symbols struct {
	initThread     uintptr `sym:"MPI_Init_thread"`
	initialized    uintptr `sym:"MPI_Initialized"`
	finalize       uintptr `sym:"MPI_Finalize"`
	abort          uintptr `sym:"MPI_Abort"`
	commRank       uintptr `sym:"MPI_Comm_rank"`
	commSize       uintptr `sym:"MPI_Comm_size"`
	commSplitType  uintptr `sym:"MPI_Comm_split_type"`
	commFree       uintptr `sym:"MPI_Comm_free"`
	libraryVersion uintptr `sym:"MPI_Get_library_version"`
	barrier        uintptr `sym:"MPI_Barrier"`
	bcast          uintptr `sym:"MPI_Bcast"`
	allreduce      uintptr `sym:"MPI_Allreduce"`
	exscan         uintptr `sym:"MPI_Exscan"`
	allgather      uintptr `sym:"MPI_Allgather"`
	allgatherv     uintptr `sym:"MPI_Allgatherv"`
	gatherv        uintptr `sym:"MPI_Gatherv"`
	alltoall       uintptr `sym:"MPI_Alltoall"`
	alltoallv      uintptr `sym:"MPI_Alltoallv"`
}

// Comm is MPI_COMM_WORLD of an initialised MPI library. Its methods are
// collective: every rank must call them in the same order. It is safe for
// concurrent use (calls are serialised), and it counts the time and bytes
// spent in communication.
type Comm struct {
	lib     string
	abi     ABI
	version string
	h       handles
	fn      symbols
	rank    int
	size    int
	local   int // node-local rank
	nlocal  int // ranks on this node

	// yield: collectives run as their nonblocking forms (nonblocking maps
	// each blocking function to its MPI_I… form), completed by MPI_Test
	// with sleeps in between, so that a waiting rank gives its core to
	// the ranks it waits for (Options.Yield: by default set when the node
	// is oversubscribed).
	yield       bool
	sleepWait   bool // Options.SleepWait
	nonblocking map[uintptr]uintptr
	test        uintptr

	mu    sync.Mutex
	stats Stats

	sdispls, rdispls []int32 // AlltoallvInto's displacements
}

// Stats counts the communication of a Comm since Init.
type Stats struct {
	Calls   int           // collective calls
	Bytes   int64         // bytes this rank contributed (send buffers)
	Elapsed time.Duration // wall time inside MPI calls
}

var (
	once    sync.Once
	world   *Comm
	initErr error
)

// sonames are tried in order when Options.Library is empty: Open MPI's
// first when its launcher started this process (it sets
// OMPI_COMM_WORLD_SIZE in the environment getenv reads), MPICH's
// otherwise.
func sonames(getenv func(string) string) []string {
	mpich := []string{"libmpich.so.12", "libmpi.so.12"}
	ompi := []string{"libmpi.so.40"}
	if getenv("OMPI_COMM_WORLD_SIZE") != "" {
		return append(ompi, mpich...)
	}
	return append(mpich, ompi...)
}

// Init loads the MPI library as o says, calls MPI_Init_thread (once per
// process: a later call returns the first call's Comm, whatever its
// options) and returns MPI_COMM_WORLD. Without mpiexec it gives a world of
// one rank (MPI's singleton initialisation). It returns an error naming
// every library tried with the loader's reason when none loads, or why the
// one loaded cannot be used.
func Init(o Options) (*Comm, error) {
	once.Do(func() { world, initErr = initialise(o) })
	return world, initErr
}

func initialise(o Options) (*Comm, error) {
	// MPICH's progress loop yields the core after 1000 polls by default;
	// with other work on the machine, even at the lowest priority, every
	// yield costs a scheduler slice (measured here: a 1-float Allreduce
	// between two ranks took 0.8–1.7 ms with the default, 3.5 µs without
	// yielding). With one rank per core dainx polls. With more ranks on
	// the node than cores (as the launcher tells them, before MPI_Init),
	// a polling rank holds a core that another rank needs to reach the
	// same collective, and every wait lasts scheduler slices (3 ranks on 2
	// cores spent 9 s of a 10 s test run waiting): then MPICH keeps its
	// default and Open MPI is asked to yield when idle. A variable set in
	// the environment (as o.Getenv reads it) wins either way.
	getenv := o.getenv()
	if n := launcherLocalRanks(getenv); n > NodeCPUs() {
		if getenv("OMPI_MCA_mpi_yield_when_idle") == "" {
			os.Setenv("OMPI_MCA_mpi_yield_when_idle", "1")
		}
	} else if getenv("MPIR_CVAR_POLLS_BEFORE_YIELD") == "" {
		os.Setenv("MPIR_CVAR_POLLS_BEFORE_YIELD", "1000000000")
	}
	paths := sonames(getenv)
	if o.Library != "" {
		paths = []string{o.Library}
	}
	c, err := load(paths)
	if err != nil {
		return nil, err
	}
	switch o.Yield {
	case YieldOn:
		c.yield = true
	case YieldOff:
	case YieldAuto:
		c.yield = c.Oversubscribed()
	default:
		return nil, fmt.Errorf("mpi: unknown Options.Yield %d", int(o.Yield))
	}
	c.sleepWait = o.SleepWait
	return c, nil
}

// launcherLocalRanks returns the number of ranks the launcher started on
// this node, as its environment says (MPICH's Hydra: MPI_LOCALNRANKS;
// Open MPI: OMPI_COMM_WORLD_LOCAL_SIZE; Slurm's srun:
// SLURM_NTASKS_PER_NODE when it is one number), or 0 when none says.
func launcherLocalRanks(getenv func(string) string) int {
	for _, v := range []string{"MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"} {
		if n, err := strconv.Atoi(getenv(v)); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// Oversubscribed reports whether this node runs more ranks than it has
// CPUs (MPI's node-local size against NodeCPUs): the ranks then take
// turns on the cores.
func (c *Comm) Oversubscribed() bool { return c.nlocal > NodeCPUs() }

// NodeCPUs returns the number of CPUs online on this machine
// (/sys/devices/system/cpu/online), not just those this process may run
// on (runtime.NumCPU): a launcher that binds each rank to its own core
// leaves each rank one CPU, which is not oversubscription. Where the file
// cannot be read it returns runtime.NumCPU().
func NodeCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, found := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		z := a
		var err2 error
		if found {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a {
			return runtime.NumCPU()
		}
		n += z - a + 1
	}
	return max(n, 1)
}

// load initialises the first library of paths that opens.
func load(paths []string) (*Comm, error) {
	var tried []string
	for _, p := range paths {
		// RTLD_GLOBAL: Open MPI dlopens its components, which need the
		// library's symbols in the global scope.
		lib, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		return open(lib, p)
	}
	return nil, fmt.Errorf("%w: tried %s (install MPICH or Open MPI, e.g. apt-get install mpich, or name the library in $DAINX_LIBMPI)", ErrNoMPI, strings.Join(tried, "; "))
}

func open(lib uintptr, path string) (*Comm, error) {
	c := &Comm{lib: path}
	v := reflect.ValueOf(&c.fn).Elem()
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Tag.Get("sym")
		p, err := purego.Dlsym(lib, name)
		if err != nil || p == 0 {
			return nil, fmt.Errorf("MPI library %s lacks %s (MPI 3.0 or later is needed)", path, name)
		}
		*(*uintptr)(unsafe.Pointer(v.Field(i).UnsafeAddr())) = p
	}
	c.nonblocking = map[uintptr]uintptr{}
	for blocking, name := range map[uintptr]string{
		c.fn.barrier: "MPI_Ibarrier", c.fn.bcast: "MPI_Ibcast", c.fn.allreduce: "MPI_Iallreduce",
		c.fn.exscan: "MPI_Iexscan", c.fn.allgather: "MPI_Iallgather", c.fn.allgatherv: "MPI_Iallgatherv",
		c.fn.gatherv: "MPI_Igatherv", c.fn.alltoall: "MPI_Ialltoall", c.fn.alltoallv: "MPI_Ialltoallv",
	} {
		if p, err := purego.Dlsym(lib, name); err == nil && p != 0 {
			c.nonblocking[blocking] = p
		}
	}
	if p, err := purego.Dlsym(lib, "MPI_Test"); err == nil && p != 0 {
		c.test = p
	}
	if p, err := purego.Dlsym(lib, openMPISymbols.world); err == nil && p != 0 {
		c.abi = OpenMPI
		c.h = handles{inPlace: 1, typeShared: 0, versionLen: 256, statusIgnore: 0}
		sym := func(name string) (uintptr, error) {
			a, err := purego.Dlsym(lib, name)
			if err != nil || a == 0 {
				return 0, fmt.Errorf("Open MPI library %s lacks %s", path, name)
			}
			return a, nil
		}
		var err error
		if c.h.world, err = sym(openMPISymbols.world); err != nil {
			return nil, err
		}
		if c.h.infoNull, err = sym(openMPISymbols.infoNull); err != nil {
			return nil, err
		}
		for i, n := range openMPISymbols.types {
			if c.h.types[i], err = sym(n); err != nil {
				return nil, err
			}
		}
		for i, n := range openMPISymbols.ops {
			if c.h.ops[i], err = sym(n); err != nil {
				return nil, err
			}
		}
	} else {
		c.abi = MPICH
		c.h = mpichHandles
	}
	// MPI_Get_library_version may be called before MPI_Init.
	buf := make([]byte, max(mpichHandles.versionLen, 256)+1)
	var n int32
	if err := c.call("MPI_Get_library_version", c.fn.libraryVersion, uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n))); err != nil {
		return nil, err
	}
	c.version = strings.TrimSpace(string(buf[:min(max(int(n), 0), len(buf))]))
	if i := strings.IndexByte(c.version, 0); i >= 0 {
		c.version = c.version[:i]
	}
	if c.abi == MPICH && !mpichFamily(c.version) {
		return nil, fmt.Errorf("MPI library %s (%s) is neither Open MPI nor of the MPICH family; dainx knows only their handle values", path, firstLine(c.version))
	}
	var initialised int32
	if err := c.call("MPI_Initialized", c.fn.initialized, uintptr(unsafe.Pointer(&initialised))); err != nil {
		return nil, err
	}
	if initialised == 0 {
		const serialized = 2 // MPI_THREAD_SERIALIZED in both mpi.h
		var provided int32
		if err := c.call("MPI_Init_thread", c.fn.initThread, 0, 0, serialized, uintptr(unsafe.Pointer(&provided))); err != nil {
			return nil, err
		}
		if provided < serialized {
			return nil, fmt.Errorf("MPI library %s provides thread level %d, dainx needs MPI_THREAD_SERIALIZED (2)", path, provided)
		}
	}
	var r, s int32
	if err := c.call("MPI_Comm_rank", c.fn.commRank, c.h.world, uintptr(unsafe.Pointer(&r))); err != nil {
		return nil, err
	}
	if err := c.call("MPI_Comm_size", c.fn.commSize, c.h.world, uintptr(unsafe.Pointer(&s))); err != nil {
		return nil, err
	}
	c.rank, c.size = int(r), int(s)
	if err := c.nodeLocal(); err != nil {
		return nil, err
	}
	return c, nil
}

// Yielding reports whether collectives yield the core while they wait.
func (c *Comm) Yielding() bool { return c.yield }

func mpichFamily(version string) bool {
	v := strings.ToLower(version)
	for _, k := range []string{"mpich", "intel(r) mpi", "mvapich", "cray mpich"} {
		if strings.Contains(v, k) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// nodeLocal finds this rank's number among the ranks of its node
// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED), which picks its GPU.
func (c *Comm) nodeLocal() error {
	var node [8]byte // an MPI_Comm: 4 bytes for MPICH, 8 for Open MPI
	if err := c.call("MPI_Comm_split_type", c.fn.commSplitType, c.h.world, c.h.typeShared, uintptr(c.rank), c.h.infoNull, uintptr(unsafe.Pointer(&node[0]))); err != nil {
		return err
	}
	h := uintptr(*(*uint64)(unsafe.Pointer(&node[0])))
	if c.abi == MPICH {
		h = uintptr(*(*uint32)(unsafe.Pointer(&node[0])))
	}
	var r, s int32
	if err := c.call("MPI_Comm_rank", c.fn.commRank, h, uintptr(unsafe.Pointer(&r))); err != nil {
		return err
	}
	if err := c.call("MPI_Comm_size", c.fn.commSize, h, uintptr(unsafe.Pointer(&s))); err != nil {
		return err
	}
	c.local, c.nlocal = int(r), int(s)
	return c.call("MPI_Comm_free", c.fn.commFree, uintptr(unsafe.Pointer(&node[0])))
}

// call invokes an MPI function and turns a non-zero return into an error
// (with MPI_ERRORS_ARE_FATAL the library aborts first; this is for the
// calls made before MPI_Init and for handlers changed by a host program).
//
//go:uintptrescapes
func (c *Comm) call(name string, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	if code := int32(uint32(r)); code != 0 {
		return &Error{Call: name, Code: int(code)}
	}
	return nil
}

// Error is a failed MPI call.
type Error struct {
	Call string
	Code int
}

func (e *Error) Error() string { return fmt.Sprintf("mpi: %s returned error code %d", e.Call, e.Code) }

// Rank returns this process's rank in MPI_COMM_WORLD.
func (c *Comm) Rank() int { return c.rank }

// Size returns the number of ranks.
func (c *Comm) Size() int { return c.size }

// LocalRank returns this rank's number among the ranks of its node, and
// how many there are.
func (c *Comm) LocalRank() (rank, size int) { return c.local, c.nlocal }

// ABI returns the binary interface of the loaded library.
func (c *Comm) ABI() ABI { return c.abi }

// Library returns the path or soname the library was loaded from.
func (c *Comm) Library() string { return c.lib }

// Version returns the first line of MPI_Get_library_version.
func (c *Comm) Version() string { return firstLine(c.version) }

// Stats returns the communication counted so far.
func (c *Comm) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// collective runs one collective call under the lock, counting its time
// and the bytes sent. It panics on an error: with MPI's default handler a
// failing collective has aborted the job already, and the ranks can no
// longer agree on anything.
//
//go:uintptrescapes
func (c *Comm) collective(name string, fn uintptr, sent int64, args ...uintptr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t0 := time.Now()
	var r uintptr
	if nb := c.nonblocking[fn]; c.yield && nb != 0 && c.test != 0 {
		r = c.yielding(nb, args)
	} else {
		r, _, _ = purego.SyscallN(fn, args...)
	}
	c.stats.Elapsed += time.Since(t0)
	c.stats.Calls++
	c.stats.Bytes += sent
	if code := int32(uint32(r)); code != 0 {
		panic(&Error{Call: name, Code: int(code)})
	}
}

// yielding runs the nonblocking form nb of a collective on args and
// completes it by MPI_Test, polling a few times and then giving the core
// away between tests, so that the ranks it waits for run: with
// sched_yield (Linux), which hands the core to the next runnable process
// of its run queue (with more ranks than cores, mostly the other ranks),
// or, where there is none or Options.SleepWait says so, by sleeping (20 µs,
// doubling up to 200 µs). On the 2-core VM (4 ranks of dainx augment,
// 2M cells) sched_yield took 20.5 s where the sleeps took 227 s: each
// message of a collective waited for its receiver's next wake-up. It
// returns the first non-zero error code, or 0.
func (c *Comm) yielding(nb uintptr, args []uintptr) uintptr {
	var req uint64 // MPI_Request: an int (MPICH) or a pointer (Open MPI)
	r, _, _ := purego.SyscallN(nb, append(args, uintptr(unsafe.Pointer(&req)))...)
	if r != 0 {
		return r
	}
	sleep := 20 * time.Microsecond
	for i := 0; ; i++ {
		var flag int32
		r, _, _ = purego.SyscallN(c.test, uintptr(unsafe.Pointer(&req)), uintptr(unsafe.Pointer(&flag)), c.h.statusIgnore)
		if r != 0 || flag != 0 {
			return r
		}
		if i >= 20 {
			if !c.sleepWait && osYield() {
				continue
			}
			time.Sleep(sleep)
			sleep = min(2*sleep, 200*time.Microsecond)
		}
	}
}

// maxCount is the largest element count of one call (MPI counts are C ints).
const maxCount = 1<<31 - 1

// buffer returns the address, element count and type of a slice of a
// supported element type.
func buffer(buf any) (unsafe.Pointer, int, Type) {
	switch b := buf.(type) {
	case []float32:
		return unsafe.Pointer(unsafe.SliceData(b)), len(b), Float32
	case []float64:
		return unsafe.Pointer(unsafe.SliceData(b)), len(b), Float64
	case []int32:
		return unsafe.Pointer(unsafe.SliceData(b)), len(b), Int32
	case []int64:
		return unsafe.Pointer(unsafe.SliceData(b)), len(b), Int64
	case []byte:
		return unsafe.Pointer(unsafe.SliceData(b)), len(b), Uint8
	}
	panic(fmt.Sprintf("mpi: unsupported buffer type %T", buf))
}

// Barrier waits until every rank has called it.
func (c *Comm) Barrier() {
	c.collective("MPI_Barrier", c.fn.barrier, 0, c.h.world)
}

// Allreduce replaces buf, on every rank, with the element-wise reduction
// op of every rank's buf (in place). buf is a []float32, []float64,
// []int32, []int64 or []byte of the same length on every rank. Buffers of
// more than 2³¹−1 elements go in several calls.
func (c *Comm) Allreduce(buf any, op Op) {
	p, n, t := buffer(buf)
	sz := typeSize[t]
	for off := 0; off < n; off += maxCount {
		k := min(n-off, maxCount)
		c.collective("MPI_Allreduce", c.fn.allreduce, int64(k*sz), c.h.inPlace, uintptr(unsafe.Add(p, off*sz)), uintptr(k), c.h.types[t], c.h.ops[op], c.h.world)
	}
}

// Exscan sets buf, in place, to the reduction op of the bufs of the ranks
// before this one (MPI_Exscan); on rank 0 buf is set to zero (MPI leaves
// it undefined).
func (c *Comm) Exscan(buf any, op Op) {
	p, n, t := buffer(buf)
	if n > maxCount {
		panic("mpi: Exscan of more than 2³¹−1 elements")
	}
	if n == 0 {
		return
	}
	c.collective("MPI_Exscan", c.fn.exscan, int64(n*typeSize[t]), c.h.inPlace, uintptr(p), uintptr(n), c.h.types[t], c.h.ops[op], c.h.world)
	if c.rank == 0 {
		clear(unsafe.Slice((*byte)(p), n*typeSize[t]))
	}
}

// Bcast copies root's buf to every rank's buf (same length everywhere).
func (c *Comm) Bcast(buf any, root int) {
	p, n, t := buffer(buf)
	sz := typeSize[t]
	sent := int64(0)
	if c.rank == root {
		sent = int64(n * sz)
	}
	for off := 0; off < n; off += maxCount {
		k := min(n-off, maxCount)
		c.collective("MPI_Bcast", c.fn.bcast, sent, uintptr(unsafe.Add(p, off*sz)), uintptr(k), c.h.types[t], uintptr(root), c.h.world)
	}
}

// Allgather returns every rank's send (the same length on every rank)
// concatenated in rank order, as a new slice of send's type.
func Allgather[T float32 | float64 | int32 | int64 | byte](c *Comm, send []T) []T {
	out := make([]T, len(send)*c.size)
	if len(send) == 0 {
		return out
	}
	sp, n, t := buffer(send)
	rp, _, _ := buffer(out)
	if len(out) > maxCount {
		panic("mpi: Allgather of more than 2³¹−1 elements")
	}
	c.collective("MPI_Allgather", c.fn.allgather, int64(n*typeSize[t]), uintptr(sp), uintptr(n), c.h.types[t], uintptr(rp), uintptr(n), c.h.types[t], c.h.world)
	return out
}

// counts returns the displacements of counts and their total, panicking
// past MPI's int counts.
func displacements(counts []int32) ([]int32, int) {
	displs := make([]int32, len(counts))
	return displs, displacementsInto(displs, counts)
}

// displacementsInto writes the exclusive prefix sums of counts into displs
// and returns the total. It panics past 2³¹−1 elements.
func displacementsInto(displs, counts []int32) int {
	total := 0
	for i, k := range counts {
		if total > maxCount {
			break
		}
		displs[i] = int32(total)
		total += int(k)
	}
	if total > maxCount {
		panic("mpi: a variable-count collective of more than 2³¹−1 elements")
	}
	return total
}

// Allgatherv returns every rank's send (any length) concatenated in rank
// order, and the length each rank sent.
func Allgatherv[T float32 | float64 | int32 | int64 | byte](c *Comm, send []T) ([]T, []int32) {
	counts := Allgather(c, []int32{int32(len(send))})
	displs, total := displacements(counts)
	out := make([]T, total)
	var zero [1]T
	sb, rb := send, out
	if len(sb) == 0 {
		sb = zero[:]
	}
	if len(rb) == 0 {
		rb = zero[:]
	}
	sp, _, t := buffer(sb)
	rp, _, _ := buffer(rb)
	c.collective("MPI_Allgatherv", c.fn.allgatherv, int64(len(send)*typeSize[t]), uintptr(sp), uintptr(len(send)), c.h.types[t],
		uintptr(rp), uintptr(unsafe.Pointer(&counts[0])), uintptr(unsafe.Pointer(&displs[0])), c.h.types[t], c.h.world)
	return out, counts
}

// Gatherv returns, on root, every rank's send concatenated in rank order
// (nil elsewhere).
func Gatherv[T float32 | float64 | int32 | int64 | byte](c *Comm, send []T, root int) []T {
	counts := Allgather(c, []int32{int32(len(send))})
	displs, total := displacements(counts)
	var out []T
	var zero [1]T
	sb := send
	if len(sb) == 0 {
		sb = zero[:]
	}
	rb := zero[:]
	if c.rank == root {
		out = make([]T, total)
		if total > 0 {
			rb = out
		}
	}
	sp, _, t := buffer(sb)
	rp, _, _ := buffer(rb)
	c.collective("MPI_Gatherv", c.fn.gatherv, int64(len(send)*typeSize[t]), uintptr(sp), uintptr(len(send)), c.h.types[t],
		uintptr(rp), uintptr(unsafe.Pointer(&counts[0])), uintptr(unsafe.Pointer(&displs[0])), c.h.types[t], uintptr(root), c.h.world)
	return out
}

// Alltoallv sends send[sendCounts[0]…] to rank 0, the next sendCounts[1]
// elements to rank 1, and so on, and returns what every rank sent to this
// one, concatenated in rank order, with the count from each rank.
func Alltoallv[T float32 | float64 | int32 | int64 | byte](c *Comm, send []T, sendCounts []int32) ([]T, []int32) {
	if len(sendCounts) != c.size {
		panic(fmt.Sprintf("mpi: Alltoallv with %d counts for %d ranks", len(sendCounts), c.size))
	}
	recvCounts := make([]int32, c.size)
	return AlltoallvInto(c, nil, send, sendCounts, recvCounts, false), recvCounts
}

// AlltoallvInto is Alltoallv without allocating: what this rank receives
// goes into dst, grown only when too short, and is returned; the count
// from each rank goes into recvCounts (one per rank). When known is true
// recvCounts holds those counts already (every rank knows what it
// receives) and the counts are not exchanged: one collective instead of
// two. A per-step exchange that calls it with the same dst allocates
// nothing once dst has grown. Not safe for concurrent use on one Comm.
func AlltoallvInto[T float32 | float64 | int32 | int64 | byte](c *Comm, dst, send []T, sendCounts, recvCounts []int32, known bool) []T {
	if len(sendCounts) != c.size || len(recvCounts) != c.size {
		panic(fmt.Sprintf("mpi: Alltoallv with %d and %d counts for %d ranks", len(sendCounts), len(recvCounts), c.size))
	}
	if !known {
		c.collective("MPI_Alltoall", c.fn.alltoall, int64(4*c.size), uintptr(unsafe.Pointer(&sendCounts[0])), 1, c.h.types[Int32],
			uintptr(unsafe.Pointer(&recvCounts[0])), 1, c.h.types[Int32], c.h.world)
	}
	c.sdispls = slices.Grow(c.sdispls[:0], c.size)[:c.size]
	c.rdispls = slices.Grow(c.rdispls[:0], c.size)[:c.size]
	stotal, rtotal := displacementsInto(c.sdispls, sendCounts), displacementsInto(c.rdispls, recvCounts)
	if stotal != len(send) {
		panic(fmt.Sprintf("mpi: Alltoallv counts sum to %d for %d elements", stotal, len(send)))
	}
	out := slices.Grow(dst[:0], rtotal)[:rtotal]
	var zero [1]T
	sb, rb := send, out
	if len(sb) == 0 {
		sb = zero[:]
	}
	if len(rb) == 0 {
		rb = zero[:]
	}
	sp, _, t := buffer(sb)
	rp, _, _ := buffer(rb)
	c.collective("MPI_Alltoallv", c.fn.alltoallv, int64(len(send)*typeSize[t]),
		uintptr(sp), uintptr(unsafe.Pointer(&sendCounts[0])), uintptr(unsafe.Pointer(&c.sdispls[0])), c.h.types[t],
		uintptr(rp), uintptr(unsafe.Pointer(&recvCounts[0])), uintptr(unsafe.Pointer(&c.rdispls[0])), c.h.types[t], c.h.world)
	return out
}

// Abort ends every rank of the job with the exit code (MPI_Abort).
func (c *Comm) Abort(code int) {
	purego.SyscallN(c.fn.abort, c.h.world, uintptr(code))
}

// Finalize shuts MPI down (MPI_Finalize). Call it once, at the end, on
// every rank.
func (c *Comm) Finalize() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.call("MPI_Finalize", c.fn.finalize)
}

// ErrNoMPI wraps Init's error when no library loads.
var ErrNoMPI = errors.New("no MPI library")
