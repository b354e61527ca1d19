package gemm

// peakFlopsPerIter is the number of flops of one iteration of the FMA peak
// loop: 12 independent 8-wide FMAs.
const peakFlopsPerIter = 12 * 8 * 2

// Best returns the fastest kernel this CPU supports.
func Best() *Kernel {
	if AVX2 != nil {
		return AVX2
	}
	return Generic
}

// ByName returns the kernel of the given name ("avx2", "generic") or nil if
// it is unknown or unsupported on this CPU.
func ByName(name string) *Kernel {
	switch name {
	case "avx2":
		return AVX2
	case "generic":
		return Generic
	}
	return nil
}
