package driver

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

func TestErrorFormat(t *testing.T) {
	e := &Error{Call: "cuMemAlloc_v2", Code: ErrOutOfMemory, Name: "CUDA_ERROR_OUT_OF_MEMORY", Desc: "out of memory"}
	if got, want := e.Error(), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: out of memory"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, ErrOutOfMemory) {
		t.Error("errors.Is(err, ErrOutOfMemory) = false")
	}
	if errors.Is(e, ErrNoDevice) {
		t.Error("errors.Is(err, ErrNoDevice) = true")
	}
	// Without the driver's strings, the static name is used.
	e = &Error{Call: "cuInit", Code: ErrNoDevice}
	if got, want := e.Error(), "cuInit: CUDA_ERROR_NO_DEVICE"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = &Error{Call: "cuModuleLoadDataEx", Code: ErrInvalidPTX, Name: "CUDA_ERROR_INVALID_PTX", Desc: "a PTX JIT compilation failed", Log: "ptxas error: bad"}
	if got, want := e.Error(), "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed\nptxas error: bad"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := Result(12345).Error(), "CUresult(12345)"; got != want {
		t.Errorf("Result(12345).Error() = %q, want %q", got, want)
	}
}

func TestArgsPacking(t *testing.T) {
	a := NewArgs()
	a.Ptr(0x1122334455667788)
	a.Int32(-2)
	a.Uint32(0xdeadbeef)
	a.Float32(1.5)
	a.Uint64(1 << 40)
	want := []struct {
		size int
		le   uint64
	}{
		{8, 0x1122334455667788},
		{4, 0xfffffffe},
		{4, 0xdeadbeef},
		{4, uint64(math.Float32bits(1.5))},
		{8, 1 << 40},
	}
	if a.Len() != len(want) {
		t.Fatalf("Len() = %d, want %d", a.Len(), len(want))
	}
	for i, w := range want {
		if a.Size(i) != w.size {
			t.Errorf("arg %d: size %d, want %d", i, a.Size(i), w.size)
		}
		b := make([]byte, 8)
		copy(b, a.Bytes(i))
		if got := binary.LittleEndian.Uint64(b); got != w.le {
			t.Errorf("arg %d: bytes %x, want %x", i, got, w.le)
		}
		// The pointer handed to the driver points at the value.
		if a.ptrs[i] != unsafe.Pointer(&a.vals[i]) {
			t.Errorf("arg %d: pointer does not point at its slot", i)
		}
	}
	// Reuse: a short list after a long one leaves no stale bytes.
	a.Reset()
	a.Int32(7)
	if a.Len() != 1 || a.Size(0) != 4 || binary.LittleEndian.Uint32(a.Bytes(0)) != 7 {
		t.Errorf("after Reset: len %d, size %d, bytes %x", a.Len(), a.Size(0), a.Bytes(0))
	}
	if n := testing.AllocsPerRun(100, func() {
		a.Reset()
		a.Ptr(1)
		a.Int32(2)
		a.Float32(3)
		a.Uint64(4)
	}); n != 0 {
		t.Errorf("packing allocates %v times per launch", n)
	}
}

func TestArgsOverflowPanics(t *testing.T) {
	a := NewArgs()
	for i := 0; i < MaxArgs; i++ {
		a.Int32(int32(i))
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "more than") {
			t.Errorf("recover() = %v, want a 'more than' panic", r)
		}
	}()
	a.Int32(0)
}

func TestLoadMissingLibrary(t *testing.T) {
	_, err := LoadLibrary("libcuda-dainx-absent.so.1")
	if err == nil {
		t.Fatal("LoadLibrary of a missing library succeeded")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "no CUDA driver: libcuda-dainx-absent.so.1: ") {
		t.Errorf("error %q does not start with the library name", msg)
	}
	if strings.Count(msg, "libcuda-dainx-absent.so.1") != 1 {
		t.Errorf("error %q repeats the library name", msg)
	}
}

// TestLoad loads the real driver. Where there is none, or no device, it
// checks that the reason is stated; where there is one, it runs a round trip
// through device memory.
func TestLoad(t *testing.T) {
	d, err := Load(Options{Library: os.Getenv("DAINX_LIBCUDA")}) // as the commands do
	if err != nil {
		if err.Error() == "" {
			t.Fatal("Load failed with an empty message")
		}
		t.Skipf("no CUDA device: %v", err)
	}
	v, err := d.Version()
	if err != nil {
		t.Fatal(err)
	}
	n, err := d.DeviceCount()
	if err != nil || n < 1 {
		t.Fatalf("DeviceCount() = %d, %v", n, err)
	}
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	name, err := d.DeviceName(dev)
	if err != nil {
		t.Fatal(err)
	}
	sms, err := d.DeviceAttribute(dev, AttrMultiprocessorCount)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := d.DeviceTotalMem(dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("driver %d, %s, %d SMs, %d MiB", v, name, sms, mem>>20)

	c, err := d.NewContext(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Destroy(); err != nil {
			t.Error(err)
		}
		if err := c.Destroy(); err != nil {
			t.Errorf("second Destroy: %v", err)
		}
		if err := c.Do(func() {}); !errors.Is(err, ErrDestroyed) {
			t.Errorf("Do after Destroy = %v, want ErrDestroyed", err)
		}
	}()
	src := []uint32{1, 2, 3, 4, 5}
	got := make([]uint32, 5)
	var runErr error
	if err := c.Do(func() {
		p, err := c.MemAlloc(int64(4 * len(src)))
		if err != nil {
			runErr = err
			return
		}
		defer c.MemFree(p)
		if runErr = c.MemcpyHtoD(p, unsafe.Pointer(&src[0]), 20); runErr != nil {
			return
		}
		if runErr = c.MemsetD32(p+8, 9, 1); runErr != nil {
			return
		}
		runErr = c.MemcpyDtoH(unsafe.Pointer(&got[0]), p, 20)
	}); err != nil {
		t.Fatal(err)
	}
	if runErr != nil {
		t.Fatal(runErr)
	}
	if want := []uint32{1, 2, 9, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("round trip = %v, want %v", got, want)
	}
	// A huge allocation fails with an error naming the call, not a panic.
	_ = c.Do(func() { _, runErr = c.MemAlloc(1 << 60) })
	if runErr == nil || !strings.HasPrefix(runErr.Error(), "cuMemAlloc_v2: CUDA_ERROR_") {
		t.Errorf("MemAlloc(1<<60) error = %v", runErr)
	}
	// An invalid PTX image fails with the JIT log.
	_ = c.Do(func() { _, runErr = c.LoadModule([]byte(".version 7.8\n.target sm_80\n.address_size 64\nbogus;\n")) })
	if runErr == nil || !strings.HasPrefix(runErr.Error(), "cuModuleLoadDataEx: ") {
		t.Errorf("LoadModule(bogus) error = %v", runErr)
	} else {
		t.Logf("LoadModule(bogus): %v", runErr)
	}
}

// TestLoadSearch checks that Load tries Options.Library first and falls back
// to the loader and the usual driver folders, naming every path it tried
// when none opens.
func TestLoadSearch(t *testing.T) {
	const absent = "/nonexistent/dainx/libcuda.so.1"
	d, err := Load(Options{Library: absent})
	if err == nil {
		if d.Library() == absent {
			t.Errorf("Load used %s, which does not exist", absent)
		}
		t.Logf("driver found at %s after %s failed", d.Library(), absent)
		return
	}
	msg := err.Error()
	var oe *openError
	if errors.As(err, &oe) || !strings.HasPrefix(msg, "no CUDA driver: tried ") {
		if strings.Contains(msg, "cuInit") {
			t.Skipf("a driver opened but has no device: %v", err)
		}
		t.Errorf("Load error %q, want one naming every path tried", msg)
	}
	for _, want := range append([]string{absent, Library + ":"}, libraryDirs...) {
		if !strings.Contains(msg, want) {
			t.Errorf("Load error %q does not name %s", msg, want)
		}
	}
}
