//go:build !linux

package spread

// peakRSSMiB returns 0: the peak resident memory is read on Linux only.
func peakRSSMiB() float64 { return 0 }
