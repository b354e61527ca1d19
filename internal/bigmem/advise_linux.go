//go:build linux

package bigmem

import (
	"syscall"
	"unsafe"
)

const hugePage = 2 << 20

// advise asks for huge pages on the 2 MiB-aligned interior of [p, p+n).
// Errors (a kernel without THP, a mode of "never") are ignored: the slice
// then simply has ordinary pages.
func advise(p unsafe.Pointer, n uintptr) {
	start := (uintptr(p) + hugePage - 1) &^ (hugePage - 1)
	end := (uintptr(p) + n) &^ (hugePage - 1)
	if end <= start {
		return
	}
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvHugepage)
}

const madvHugepage = 14 // MADV_HUGEPAGE, linux/mman.h
