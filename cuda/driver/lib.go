package driver

import (
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Library is the file name Load opens: the driver's stable soname.
const Library = "libcuda.so.1"

// Driver is a loaded and initialised CUDA driver library. It holds the
// addresses of the entry points this package binds; it is safe for
// concurrent use and is never unloaded.
type Driver struct {
	lib string
	fn  symbols
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
	cuCtxCreate          uintptr `sym:"cuCtxCreate_v2"`
	cuCtxDestroy         uintptr `sym:"cuCtxDestroy_v2"`
	cuCtxSynchronize     uintptr `sym:"cuCtxSynchronize"`
	cuMemAlloc           uintptr `sym:"cuMemAlloc_v2"`
	cuMemFree            uintptr `sym:"cuMemFree_v2"`
	cuMemGetInfo         uintptr `sym:"cuMemGetInfo_v2"`
	cuMemcpyHtoD         uintptr `sym:"cuMemcpyHtoD_v2"`
	cuMemcpyDtoH         uintptr `sym:"cuMemcpyDtoH_v2"`
	cuMemcpyDtoD         uintptr `sym:"cuMemcpyDtoD_v2"`
	cuMemsetD32          uintptr `sym:"cuMemsetD32_v2"`
	cuModuleLoadDataEx   uintptr `sym:"cuModuleLoadDataEx"`
	cuModuleGetFunction  uintptr `sym:"cuModuleGetFunction"`
	cuModuleUnload       uintptr `sym:"cuModuleUnload"`
	cuFuncGetAttribute   uintptr `sym:"cuFuncGetAttribute"`
	cuLaunchKernel       uintptr `sym:"cuLaunchKernel"`
	cuStreamCreate       uintptr `sym:"cuStreamCreate"`
	cuStreamSynchronize  uintptr `sym:"cuStreamSynchronize"`
	cuStreamDestroy      uintptr `sym:"cuStreamDestroy_v2"`
	cuEventCreate        uintptr `sym:"cuEventCreate"`
	cuEventRecord        uintptr `sym:"cuEventRecord"`
	cuEventSynchronize   uintptr `sym:"cuEventSynchronize"`
	cuEventElapsedTime   uintptr `sym:"cuEventElapsedTime"`
	cuEventDestroy       uintptr `sym:"cuEventDestroy_v2"`
}

// Load opens libcuda.so.1, resolves every bound entry point and calls
// cuInit(0). It is LoadLibrary(Library).
func Load() (*Driver, error) { return LoadLibrary(Library) }

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
		return nil, fmt.Errorf("no CUDA driver: %s", msg)
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
