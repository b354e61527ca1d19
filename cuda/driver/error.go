package driver

import "fmt"

// Result is a CUresult, the status code every driver call returns. It
// implements error so that errors.Is(err, ErrOutOfMemory) works on the
// *Error values this package returns.
type Result int32

// Results worth testing for with errors.Is. The values are those of cuda.h.
const (
	Success                  Result = 0
	ErrInvalidValue          Result = 1
	ErrOutOfMemory           Result = 2
	ErrNotInitialized        Result = 3
	ErrDeinitialized         Result = 4
	ErrStubLibrary           Result = 34
	ErrNoDevice              Result = 100
	ErrInvalidDevice         Result = 101
	ErrInvalidImage          Result = 200
	ErrInvalidContext        Result = 201
	ErrNoBinaryForGPU        Result = 209
	ErrInvalidPTX            Result = 218
	ErrUnsupportedPTXVersion Result = 222
	ErrInvalidHandle         Result = 400
	ErrNotFound              Result = 500
	ErrNotReady              Result = 600
	ErrIllegalAddress        Result = 700
	ErrLaunchOutOfResources  Result = 701
	ErrLaunchFailed          Result = 719
	ErrSystemDriverMismatch  Result = 803
	ErrUnknown               Result = 999
)

// resultNames holds the names of the common results, used when the driver
// cannot be asked (cuGetErrorName failed or no driver is loaded).
var resultNames = map[Result]string{
	Success:                  "CUDA_SUCCESS",
	ErrInvalidValue:          "CUDA_ERROR_INVALID_VALUE",
	ErrOutOfMemory:           "CUDA_ERROR_OUT_OF_MEMORY",
	ErrNotInitialized:        "CUDA_ERROR_NOT_INITIALIZED",
	ErrDeinitialized:         "CUDA_ERROR_DEINITIALIZED",
	ErrStubLibrary:           "CUDA_ERROR_STUB_LIBRARY",
	ErrNoDevice:              "CUDA_ERROR_NO_DEVICE",
	ErrInvalidDevice:         "CUDA_ERROR_INVALID_DEVICE",
	ErrInvalidImage:          "CUDA_ERROR_INVALID_IMAGE",
	ErrInvalidContext:        "CUDA_ERROR_INVALID_CONTEXT",
	ErrNoBinaryForGPU:        "CUDA_ERROR_NO_BINARY_FOR_GPU",
	ErrInvalidPTX:            "CUDA_ERROR_INVALID_PTX",
	ErrUnsupportedPTXVersion: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	ErrInvalidHandle:         "CUDA_ERROR_INVALID_HANDLE",
	ErrNotFound:              "CUDA_ERROR_NOT_FOUND",
	ErrNotReady:              "CUDA_ERROR_NOT_READY",
	ErrIllegalAddress:        "CUDA_ERROR_ILLEGAL_ADDRESS",
	ErrLaunchOutOfResources:  "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	ErrLaunchFailed:          "CUDA_ERROR_LAUNCH_FAILED",
	ErrSystemDriverMismatch:  "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	ErrUnknown:               "CUDA_ERROR_UNKNOWN",
}

// Error returns the cuda.h name of r, e.g. "CUDA_ERROR_OUT_OF_MEMORY", or
// "CUresult(n)" for a code this package does not name.
func (r Result) Error() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("CUresult(%d)", int32(r))
}

// Error is a failed driver call. Its message reads
// "<call>: <name>: <description>", e.g.
// "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: out of memory"; Log, when not
// empty, is appended on the following lines (the JIT error log of
// cuModuleLoadDataEx).
type Error struct {
	Call string // the driver entry point, e.g. "cuMemAlloc_v2"
	Code Result // the CUresult it returned
	Name string // the driver's name for Code, from cuGetErrorName
	Desc string // the driver's description, from cuGetErrorString
	Log  string // extra output of the call, such as a JIT log
}

// Error formats the failure as "<call>: <name>: <description>".
func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = e.Code.Error()
	}
	s := e.Call + ": " + name
	if e.Desc != "" {
		s += ": " + e.Desc
	}
	if e.Log != "" {
		s += "\n" + e.Log
	}
	return s
}

// Unwrap returns the Result, so that errors.Is(err, ErrOutOfMemory) works.
func (e *Error) Unwrap() error { return e.Code }
