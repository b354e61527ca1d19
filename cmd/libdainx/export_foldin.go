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
		t, err := cellTensor(idx, val, nnz, order)
		if err != nil {
			return err
		}
		model, opts := C.GoString(path), goString(options)
		var report []byte
		if progress == nil && user == nil {
			report, err = foldIn(context.Background(), model, t, opts, os.Stderr, nil)
		} else {
			report, err = foldInEvents(model, t, opts, progressCall(progress, user))
		}
		if err != nil {
			return err
		}
		r, err = newResult(nil, nil, int(order), report)
		return err
	})
	return finish(err, out, r)
}
