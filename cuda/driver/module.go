package driver

import (
	"strings"
	"unsafe"
)

// Module is a loaded CUmodule.
type Module struct {
	c *Context
	h uintptr
}

// Function is a CUfunction: a kernel entry point of a loaded module.
type Function struct {
	c    *Context
	h    uintptr
	name string
}

// JIT options of cuModuleLoadDataEx (CUjit_option values of cuda.h).
const (
	jitInfoLogBuffer       = 3
	jitInfoLogBufferBytes  = 4
	jitErrorLogBuffer      = 5
	jitErrorLogBufferBytes = 6
)

// jitLogBytes is the size of each JIT log buffer.
const jitLogBytes = 16 << 10

// jitCall holds the arguments of one cuModuleLoadDataEx call in one heap
// object, so that the pointers stored in vals stay valid during the call.
type jitCall struct {
	opts   [4]int32
	vals   [4]uintptr
	errLog [jitLogBytes]byte
	info   [jitLogBytes]byte
}

// LoadModule JIT-compiles and loads a PTX (or cubin) image for the
// context's device (cuModuleLoadDataEx). A PTX image need not be
// NUL-terminated. On failure the *Error's Log holds the JIT compiler's error
// log. Context thread only.
func (c *Context) LoadModule(image []byte) (*Module, error) {
	img := make([]byte, len(image)+1) // NUL-terminated copy
	copy(img, image)
	j := new(jitCall)
	j.opts = [4]int32{jitErrorLogBuffer, jitErrorLogBufferBytes, jitInfoLogBuffer, jitInfoLogBufferBytes}
	j.vals = [4]uintptr{uintptr(unsafe.Pointer(&j.errLog[0])), jitLogBytes, uintptr(unsafe.Pointer(&j.info[0])), jitLogBytes}
	var h uintptr
	err := c.d.call("cuModuleLoadDataEx", c.d.fn.cuModuleLoadDataEx,
		uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&img[0])),
		uintptr(len(j.opts)), uintptr(unsafe.Pointer(&j.opts[0])), uintptr(unsafe.Pointer(&j.vals[0])))
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Log = strings.TrimSpace(cBytes(j.errLog[:]))
		}
		return nil, err
	}
	return &Module{c: c, h: h}, nil
}

// cBytes returns the NUL-terminated prefix of b as a string.
func cBytes(b []byte) string {
	for i, x := range b {
		if x == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// Function looks up the kernel name in m (cuModuleGetFunction). Context
// thread only.
func (m *Module) Function(name string) (*Function, error) {
	cname := make([]byte, len(name)+1)
	copy(cname, name)
	var h uintptr
	if err := m.c.d.call("cuModuleGetFunction", m.c.d.fn.cuModuleGetFunction, uintptr(unsafe.Pointer(&h)), m.h, uintptr(unsafe.Pointer(&cname[0]))); err != nil {
		return nil, err
	}
	return &Function{c: m.c, h: h, name: name}, nil
}

// Unload unloads m (cuModuleUnload); its functions become invalid. Context
// thread only.
func (m *Module) Unload() error {
	return m.c.d.call("cuModuleUnload", m.c.d.fn.cuModuleUnload, m.h)
}

// Name returns the kernel's name.
func (f *Function) Name() string { return f.name }

// FuncAttribute is a CUfunction_attribute.
type FuncAttribute int32

// Function attributes; the values are those of cuda.h.
const (
	FuncMaxThreadsPerBlock FuncAttribute = 0
	FuncSharedSizeBytes    FuncAttribute = 1
	FuncNumRegs            FuncAttribute = 4
	// FuncMaxDynamicSharedSizeBytes is the dynamic shared memory a launch
	// may ask for; above 48 KiB a kernel must be given it first
	// (SetAttribute), up to the device's opt-in limit.
	FuncMaxDynamicSharedSizeBytes FuncAttribute = 8
)

// SetAttribute sets attribute a of f to v (cuFuncSetAttribute). Context
// thread only.
func (f *Function) SetAttribute(a FuncAttribute, v int) error {
	return f.c.d.call("cuFuncSetAttribute", f.c.d.fn.cuFuncSetAttribute, f.h, uintptr(a), uintptr(int32(v)))
}

// Attribute returns attribute a of f (cuFuncGetAttribute). Context thread
// only.
func (f *Function) Attribute(a FuncAttribute) (int, error) {
	var v int32
	if err := f.c.d.call("cuFuncGetAttribute", f.c.d.fn.cuFuncGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), f.h); err != nil {
		return 0, err
	}
	return int(v), nil
}
