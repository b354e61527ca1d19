package main

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"context"
	"os"
	"sync"
	"unsafe"

	"github.com/dainx/dainx/tensor"
)

// maxCells bounds nnz·order so that the slices over the caller's arrays
// stay far from the address-space limit (2^40 indices = 4 TiB).
const maxCells = 1 << 40

// The exported functions are internal: shim.c wraps them as the public
// functions of dainx.h (which checks NULL pointers first). Each recovers
// any panic into an error and stores the message with dainx__set_error on
// the calling thread.

var versionOnce sync.Once
var versionC *C.char

//export dainxGoVersion
func dainxGoVersion() *C.char {
	versionOnce.Do(func() { versionC = C.CString(version()) }) // never freed
	return versionC
}

//export dainxGoAugment
func dainxGoAugment(idx *C.int32_t, val *C.double, nnz C.int64_t, order C.int32_t, options *C.char, progress C.dainx_progress, user unsafe.Pointer, out **C.dainx_result) C.int {
	var r *C.dainx_result
	err := safely(func() error {
		t, err := cellTensor(idx, val, nnz, order)
		if err != nil {
			return err
		}
		opts := goString(options)
		var res *augmentResult
		if progress == nil && user == nil {
			res, err = augment(context.Background(), t, opts, os.Stderr, nil)
		} else {
			res, err = augmentEvents(t, opts, progressCall(progress, user))
		}
		if err != nil {
			return err
		}
		if r, err = newResult(res.aug.Idx, res.aug.Val, int(order), res.report); err != nil {
			return err
		}
		return addInfluence(r, res)
	})
	return finish(err, out, r)
}

//export dainxGoRead
func dainxGoRead(path *C.char, options *C.char, out **C.dainx_result) C.int {
	var r *C.dainx_result
	err := safely(func() error {
		t, report, err := readTensor(C.GoString(path), goString(options))
		if err != nil {
			return err
		}
		r, err = newResult(t.Idx, t.Val, t.Order(), report)
		return err
	})
	return finish(err, out, r)
}

//export dainxGoWrite
func dainxGoWrite(path *C.char, idx *C.int32_t, val *C.double, nnz C.int64_t, order C.int32_t, options *C.char) C.int {
	err := safely(func() error {
		is, vs, err := cells(idx, val, nnz, order)
		if err != nil {
			return err
		}
		return writeTensor(C.GoString(path), is, vs, int(order), goString(options))
	})
	return finish(err, nil, nil)
}

//export dainxGoPredict
func dainxGoPredict(path *C.char, idx *C.int32_t, nnz C.int64_t, order C.int32_t, options *C.char, out **C.dainx_result) C.int {
	var r *C.dainx_result
	err := safely(func() error {
		var is []int32
		switch {
		case nnz == 0 && order >= 0: // only load and check the model
		case order <= 0 || nnz <= 0 || int64(nnz) > maxCells/int64(order):
			return inputErr("nnz %d, order %d: want ≥ 1 cell of order ≥ 1 (or nnz 0 to check the model)", nnz, order)
		default:
			is = unsafe.Slice((*int32)(unsafe.Pointer(idx)), int(nnz)*int(order))
		}
		vals, report, err := predictCells(C.GoString(path), is, int(nnz), int(order), goString(options))
		if err != nil {
			return err
		}
		r, err = newResult(is, vals, int(order), report)
		return err
	})
	return finish(err, out, r)
}

// cells returns views of the caller's arrays, after checking the sizes.
func cells(idx *C.int32_t, val *C.double, nnz C.int64_t, order C.int32_t) ([]int32, []float64, error) {
	switch {
	case order <= 0:
		return nil, nil, inputErr("order %d: want ≥ 1", order)
	case nnz <= 0:
		return nil, nil, inputErr("nnz %d: want ≥ 1 cell", nnz)
	case int64(nnz) > maxCells/int64(order):
		return nil, nil, inputErr("nnz %d × order %d: too many indices", nnz, order)
	}
	is := unsafe.Slice((*int32)(unsafe.Pointer(idx)), int(nnz)*int(order))
	vs := unsafe.Slice((*float64)(unsafe.Pointer(val)), int(nnz))
	return is, vs, nil
}

// cellTensor is buildTensor of the caller's arrays (cells).
func cellTensor(idx *C.int32_t, val *C.double, nnz C.int64_t, order C.int32_t) (*tensor.COO, error) {
	is, vs, err := cells(idx, val, nnz, order)
	if err != nil {
		return nil, err
	}
	return buildTensor(is, vs, int(order))
}

// progressCall returns the event callback (augmentEvents, foldInEvents)
// that hands each event, as a C string, to the caller's progress with
// user, and asks to stop when it returns non-zero; with progress NULL it
// never asks to stop.
func progressCall(progress C.dainx_progress, user unsafe.Pointer) func(event []byte) bool {
	return func(event []byte) bool {
		if progress == nil {
			return true
		}
		cs := C.CString(string(event))
		defer C.free(unsafe.Pointer(cs))
		return C.dainx__call_progress(progress, user, cs) == 0
	}
}

// newResult copies cells and a report into a new C result.
func newResult(idx []int32, val []float64, order int, report []byte) (*C.dainx_result, error) {
	r := C.dainx__result_new(C.int64_t(len(val)), C.int32_t(order), C.size_t(len(report)))
	if r == nil {
		return nil, &libError{codeRun, "dainx: out of memory for the result"}
	}
	if len(val) > 0 {
		copy(unsafe.Slice((*int32)(unsafe.Pointer(r.idx)), len(idx)), idx)
		copy(unsafe.Slice((*float64)(unsafe.Pointer(r.val)), len(val)), val)
	}
	if len(report) > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(r.report)), len(report)), report)
	}
	return r, nil
}

// addInfluence copies res's cell scores and entity importance into r.
func addInfluence(r *C.dainx_result, res *augmentResult) error {
	oom := &libError{codeRun, "dainx: out of memory for the result"}
	if s := res.scores; s != nil && len(s.Alpha) > 0 {
		n := len(s.Alpha)
		if C.dainx__result_scores(r, C.int64_t(n)) != 0 {
			return oom
		}
		copy(unsafe.Slice((*int32)(unsafe.Pointer(r.score_idx)), len(s.Cells.Idx)), s.Cells.Idx)
		copy(unsafe.Slice((*float64)(unsafe.Pointer(r.score_val)), n), s.Cells.Val)
		copy(unsafe.Slice((*float32)(unsafe.Pointer(r.alpha)), n), s.Alpha)
		copy(unsafe.Slice((*float32)(unsafe.Pointer(r.score)), n), s.S)
	}
	if imp := res.importance; len(imp) == int(r.order) {
		lens := make([]C.int64_t, len(imp))
		for n, m := range imp {
			lens[n] = C.int64_t(len(m))
		}
		if C.dainx__result_importance(r, &lens[0]) != 0 {
			return oom
		}
		off := unsafe.Slice((*int64)(unsafe.Pointer(r.imp_off)), len(imp)+1)
		for n, m := range imp {
			copy(unsafe.Slice((*float64)(unsafe.Pointer(r.imp)), off[len(imp)])[off[n]:off[n+1]], m)
		}
	}
	return nil
}

// finish stores err as the thread's last error and returns its code, or
// sets *out to r and returns 0.
func finish(err error, out **C.dainx_result, r *C.dainx_result) C.int {
	if err != nil {
		if r != nil {
			C.dainx_result_free(r)
		}
		msg := message(err)
		if len(msg) == 0 {
			msg = "dainx: unknown error"
		}
		C.dainx__set_error((*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
		return C.int(codeOf(err))
	}
	if out != nil {
		*out = r
	}
	return 0
}

func goString(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}
