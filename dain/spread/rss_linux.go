package spread

import "syscall"

// peakRSSMiB returns the process's peak resident memory in MiB
// (getrusage's ru_maxrss, in KiB on Linux), or 0 if the call fails.
func peakRSSMiB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}
