// Package bigmem allocates the large pointer-free slices of a run (COO
// indices and values, training sets, cell sets, permutations) so that the
// kernel backs them with transparent huge pages where it can.
//
// Why: a fresh slice costs one page fault per 4 KiB page when it is first
// written. On virtual machines each fault is expensive (on the 2-core
// development VM a fresh 1 GiB slice took 3.4–3.5 s to write with 4 KiB
// pages, 0.36 s with 2 MiB pages; 2026-11-23), which made reading a .bin
// file run at a third of the speed of decoding it. Linux's default
// transparent-huge-page mode "madvise" gives huge pages only to memory
// that asks for them with madvise(MADV_HUGEPAGE); Go's heap does not ask.
package bigmem

import "unsafe"

// Threshold is the size in bytes from which Make advises huge pages; below
// it a slice spans too few 2 MiB pages for the advice to matter.
const Threshold = 8 << 20

// Make returns make([]T, n, c) (c = n when omitted), zeroed, and when its
// backing array holds at least Threshold bytes, asks the kernel to back the
// 2 MiB-aligned part of it with huge pages before it is first touched
// (Linux; elsewhere, or when the kernel refuses, it is an ordinary slice).
// T must hold no pointers (the advice is about memory the garbage
// collector never scans; it is still an ordinary Go slice and is freed as
// one). It panics as make does for a negative n or c < n.
func Make[T any](n int, c ...int) []T {
	capacity := n
	if len(c) > 0 {
		capacity = c[0]
	}
	s := make([]T, n, capacity)
	var zero T
	if bytes := uintptr(capacity) * unsafe.Sizeof(zero); bytes >= Threshold {
		advise(unsafe.Pointer(unsafe.SliceData(s[:capacity])), bytes)
	}
	return s
}
