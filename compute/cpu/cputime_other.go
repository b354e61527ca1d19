//go:build !linux

package cpu

import "time"

// threadCPU returns 0: no per-thread CPU clock here, so PeakGFLOPS falls
// back to the wall clock.
func threadCPU() time.Duration { return 0 }
