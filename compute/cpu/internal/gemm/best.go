package gemm

// peakFlopsPerIter is the number of flops of one iteration of the FMA peak
// loop: 12 independent 8-wide FMAs.
const peakFlopsPerIter = 12 * 8 * 2

// Best returns the fastest kernel this CPU supports: avx2 where the CPU has
// AVX2 and FMA, otherwise gonum.
func Best() *Kernel {
	if AVX2 != nil {
		return AVX2
	}
	return Gonum
}

// ByName returns the kernel of the given name ("avx2", "gonum", "generic")
// or nil if it is unknown or unsupported on this CPU.
func ByName(name string) *Kernel {
	switch name {
	case "avx2":
		if AVX2 != nil {
			return AVX2
		}
	case "gonum":
		return Gonum
	case "generic":
		return Generic
	}
	return nil
}
