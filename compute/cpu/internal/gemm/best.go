package gemm

// peakFlopsPerIter is the number of flops of one iteration of the FMA peak
// loop: 12 independent 8-wide FMAs.
const peakFlopsPerIter = 12 * 8 * 2

// peak512FlopsPerIter is the number of flops of one iteration of the
// AVX-512 FMA peak loop: 16 independent 16-wide FMAs.
const peak512FlopsPerIter = 16 * 16 * 2

// Best returns the fastest kernel this CPU supports: avx512 where the CPU has
// AVX-512F (and AVX2 and FMA), else avx2 where it has AVX2 and FMA,
// otherwise gonum.
func Best() *Kernel {
	if AVX512 != nil {
		return AVX512
	}
	if AVX2 != nil {
		return AVX2
	}
	return Gonum
}

// ByName returns the kernel of the given name ("avx512", "avx2", "gonum",
// "generic") or nil if it is unknown or unsupported on this CPU.
func ByName(name string) *Kernel {
	switch name {
	case "avx512":
		if AVX512 != nil {
			return AVX512
		}
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
