package driver

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Library is the driver's stable soname, the name Load asks the dynamic
// loader for.
const Library = "libcuda.so.1"

// Options says where Load looks for the driver. The zero value searches
// the usual places only.
type Options struct {
	// Library, when not empty, names the driver library (a file or a
	// soname) that Load tries first. The dainx commands take it from
	// $DAINX_LIBCUDA (docs/environment.md); this package reads no
	// environment.
	Library string
}

// libraryDirs are the folders where drivers are commonly installed outside
// the loader's search path (containers mount the host's driver under
// /usr/local/nvidia; the CUDA toolkit's forward-compatibility driver lives
// in /usr/local/cuda/compat). Load tries Library in each, in this order,
// after the loader's own search.
var libraryDirs = []string{
	"/usr/local/nvidia/lib64",
	"/usr/lib/x86_64-linux-gnu",
	"/usr/local/cuda/compat",
	"/usr/lib64",
}

// Driver is a loaded and initialised CUDA driver library. It holds the
// addresses of the entry points this package binds; it is safe for
// concurrent use and is never unloaded.
type Driver struct {
	lib     string
	fn      symbols
	missing []string // optional entry points the library lacks
}

// symbols holds one address per bound driver entry point. The field tag
// names the exported symbol.
type symbols struct {
	cuInit               uintptr `sym:"cuInit"`
	cuDriverGetVersion   uintptr `sym:"cuDriverGetVersion"`
	cuGetErrorName       uintptr `sym:"cuGetErrorName"`
	cuGetErrorString     uintptr `sym:"cuGetErrorString"`
	cuDeviceGet          uintptr `sym:"cuDeviceGet"`
	cuDeviceGetCount     uintptr `sym:"cuDeviceGetCount"`
	cuDeviceGetName      uintptr `sym:"cuDeviceGetName"`
	cuDeviceGetAttribute uintptr `sym:"cuDeviceGetAttribute"`
	cuDeviceTotalMem     uintptr `sym:"cuDeviceTotalMem_v2"`
	cuPrimaryCtxRetain   uintptr `sym:"cuDevicePrimaryCtxRetain"`
	cuPrimaryCtxRelease  uintptr `sym:"cuDevicePrimaryCtxRelease_v2"`
	cuCtxSetCurrent      uintptr `sym:"cuCtxSetCurrent"`
	cuCtxSynchronize     uintptr `sym:"cuCtxSynchronize"`
	cuMemAlloc           uintptr `sym:"cuMemAlloc_v2"`
	cuMemFree            uintptr `sym:"cuMemFree_v2"`
	cuMemGetInfo         uintptr `sym:"cuMemGetInfo_v2"`
	cuMemcpyHtoD         uintptr `sym:"cuMemcpyHtoD_v2"`
	cuMemcpyDtoH         uintptr `sym:"cuMemcpyDtoH_v2"`
	cuMemcpyDtoD         uintptr `sym:"cuMemcpyDtoD_v2"`
	cuMemsetD32          uintptr `sym:"cuMemsetD32_v2"`
	cuMemsetD32Async     uintptr `sym:"cuMemsetD32Async"`
	cuMemcpyHtoDAsync    uintptr `sym:"cuMemcpyHtoDAsync_v2"`
	cuMemcpyDtoHAsync    uintptr `sym:"cuMemcpyDtoHAsync_v2"`
	cuMemcpyDtoDAsync    uintptr `sym:"cuMemcpyDtoDAsync_v2"`
	cuModuleLoadDataEx   uintptr `sym:"cuModuleLoadDataEx"`
	cuModuleGetFunction  uintptr `sym:"cuModuleGetFunction"`
	cuModuleUnload       uintptr `sym:"cuModuleUnload"`
	cuFuncGetAttribute   uintptr `sym:"cuFuncGetAttribute"`
	cuFuncSetAttribute   uintptr `sym:"cuFuncSetAttribute"`
	cuLaunchKernel       uintptr `sym:"cuLaunchKernel"`
	cuStreamCreate       uintptr `sym:"cuStreamCreate"`
	cuStreamSynchronize  uintptr `sym:"cuStreamSynchronize"`
	cuStreamDestroy      uintptr `sym:"cuStreamDestroy_v2"`
	cuEventCreate        uintptr `sym:"cuEventCreate"`
	cuEventRecord        uintptr `sym:"cuEventRecord"`
	cuEventSynchronize   uintptr `sym:"cuEventSynchronize"`
	cuEventElapsedTime   uintptr `sym:"cuEventElapsedTime"`
	cuEventDestroy       uintptr `sym:"cuEventDestroy_v2"`

	// Graphs (CUDA 11.4 and later; optional: without them Graphs reports
	// false and Capture fails with a clear error).
	cuStreamBeginCapture uintptr `sym:"cuStreamBeginCapture_v2" optional:"graphs"`
	cuStreamEndCapture   uintptr `sym:"cuStreamEndCapture" optional:"graphs"`
	cuGraphInstantiate   uintptr `sym:"cuGraphInstantiateWithFlags" optional:"graphs"`
	cuGraphLaunch        uintptr `sym:"cuGraphLaunch" optional:"graphs"`
	cuGraphExecDestroy   uintptr `sym:"cuGraphExecDestroy" optional:"graphs"`
	cuGraphDestroy       uintptr `sym:"cuGraphDestroy" optional:"graphs"`
}

// Load opens the CUDA driver library, resolves every bound entry point and
// calls cuInit(0). It tries, in order: o.Library (if not empty),
// libcuda.so.1 through the dynamic loader's search, then libcuda.so.1
// in /usr/local/nvidia/lib64, /usr/lib/x86_64-linux-gnu,
// /usr/local/cuda/compat and /usr/lib64. The first library that opens is
// used (a later failure, such as cuInit finding no device, is returned as
// is). When none opens, the error names every path tried with the loader's
// reason: "no CUDA driver: tried …".
func Load(o Options) (*Driver, error) {
	var paths []string
	if o.Library != "" {
		paths = append(paths, o.Library)
	}
	paths = append(paths, Library)
	for _, dir := range libraryDirs {
		paths = append(paths, filepath.Join(dir, Library))
	}
	var tried []string
	for _, p := range paths {
		d, err := LoadLibrary(p)
		if err == nil {
			return d, nil
		}
		var oe *openError
		if !errors.As(err, &oe) {
			return nil, err
		}
		tried = append(tried, oe.reason)
	}
	return nil, fmt.Errorf("no CUDA driver: tried %s", strings.Join(tried, "; "))
}

// openError is LoadLibrary's error when the library file does not open.
type openError struct{ reason string }

func (e *openError) Error() string { return "no CUDA driver: " + e.reason }

// Library returns the path or soname the driver was loaded from.
func (d *Driver) Library() string { return d.lib }

// LoadLibrary opens the driver library at path (a soname or a file), resolves
// every bound entry point and calls cuInit(0).
//
// It returns an error, never panics: "no CUDA driver: libcuda.so.1: …" with
// the dynamic loader's reason when the library cannot be opened, "CUDA
// driver libcuda.so.1 lacks cuX (driver too old?)" when an entry point is
// missing, and the *Error of cuInit when the driver finds no usable device
// (for instance "cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is
// detected").
func LoadLibrary(path string) (*Driver, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, path) {
			msg = path + ": " + msg
		}
		return nil, &openError{msg}
	}
	d := &Driver{lib: path}
	if err := d.resolve(h); err != nil {
		return nil, err
	}
	if err := d.call("cuInit", d.fn.cuInit, 0); err != nil {
		return nil, err
	}
	return d, nil
}

// resolve looks up every entry point named by the tags of symbols in the
// library h.
func (d *Driver) resolve(h uintptr) error {
	v := reflect.ValueOf(&d.fn).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name := t.Field(i).Tag.Get("sym")
		p, err := purego.Dlsym(h, name)
		if err != nil || p == 0 {
			if feature := t.Field(i).Tag.Get("optional"); feature != "" {
				d.missing = append(d.missing, name)
				continue
			}
			return fmt.Errorf("CUDA driver %s lacks %s (driver too old?)", d.lib, name)
		}
		*(*uintptr)(unsafe.Pointer(v.Field(i).UnsafeAddr())) = p
	}
	return nil
}

// call invokes the driver entry point fn and turns a failing CUresult into an
// *Error naming the call. Pointer arguments converted to uintptr at the call
// site are kept alive and on the heap for the duration of the call.
//
//go:uintptrescapes
func (d *Driver) call(name string, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	// CUresult is a 32-bit enum returned in eax; the upper half of the
	// register is undefined.
	res := Result(int32(uint32(r)))
	if res == Success {
		return nil
	}
	return d.newError(name, res)
}

// newError builds the *Error of a failed call, asking the driver for the
// name and description of the code.
func (d *Driver) newError(name string, res Result) *Error {
	e := &Error{Call: name, Code: res}
	var s unsafe.Pointer
	if r, _, _ := purego.SyscallN(d.fn.cuGetErrorName, uintptr(res), uintptr(unsafe.Pointer(&s))); uint32(r) == 0 {
		e.Name = cString(s, 256)
	}
	s = nil
	if r, _, _ := purego.SyscallN(d.fn.cuGetErrorString, uintptr(res), uintptr(unsafe.Pointer(&s))); uint32(r) == 0 {
		e.Desc = cString(s, 1024)
	}
	return e
}

// cString copies the NUL-terminated string at p (at most max bytes), which
// lives in the driver's memory, into a Go string.
func cString(p unsafe.Pointer, max int) string {
	if p == nil {
		return ""
	}
	n := 0
	for n < max && *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}

// Version returns the CUDA version the driver supports, as 1000·major +
// 10·minor (12040 for CUDA 12.4).
func (d *Driver) Version() (int, error) {
	var v int32
	if err := d.call("cuDriverGetVersion", d.fn.cuDriverGetVersion, uintptr(unsafe.Pointer(&v))); err != nil {
		return 0, err
	}
	return int(v), nil
}
