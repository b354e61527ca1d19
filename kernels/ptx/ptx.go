// Package ptx holds the PTX of every kernel of kernels/, as compiled by
// `make kernels` (nvcc -arch=compute_80 -O3 -lineinfo --ptx, comments
// stripped) and committed, so that a Go build needs no CUDA toolkit. The
// driver JIT-compiles it for the GPU at hand when package cuda starts.
//
// It lives here, beside the sources it is built from, because go:embed
// cannot reach outside a package's directory; package cuda imports it.
// `make check-kernels` fails when a file here differs from what nvcc makes
// of kernels/NAME.cu.
package ptx

import "embed"

// FS holds NAME.ptx for every kernels/NAME.cu.
//
//go:embed *.ptx
var FS embed.FS
