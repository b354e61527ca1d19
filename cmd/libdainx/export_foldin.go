package main

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"context"
	"os"
	"unsafe"
)

//export dainxGoFoldIn
func dainxGoFoldIn(path *C.char, idx *C.int32_t, val *C.double, nnz C.int64_t, order C.int32_t, options *C.char, progress C.dainx_progress, user unsafe.Pointer, out **C.dainx_result) C.int {
	var r *C.dainx_result
	err := safely(func() error {
		is, vs, err := cells(idx, val, nnz, order)
		if err != nil {
			return err
		}
		t, err := buildTensor(is, vs, int(order))
		if err != nil {
			return err
		}
		model, opts := C.GoString(path), goString(options)
		var report []byte
		if progress == nil && user == nil {
			report, err = foldIn(context.Background(), model, t, opts, os.Stderr, nil)
		} else {
			report, err = foldInEvents(model, t, opts, func(event []byte) bool {
				if progress == nil {
					return true
				}
				cs := C.CString(string(event))
				defer C.free(unsafe.Pointer(cs))
				return C.dainx__call_progress(progress, user, cs) == 0
			})
		}
		if err != nil {
			return err
		}
		r, err = newResult(nil, nil, int(order), report)
		return err
	})
	return finish(err, out, r)
}
