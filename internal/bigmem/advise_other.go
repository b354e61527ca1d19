//go:build !linux

package bigmem

import "unsafe"

func advise(unsafe.Pointer, uintptr) {}
