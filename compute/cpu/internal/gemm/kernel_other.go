//go:build !amd64

package gemm

// AVX2 is nil on other architectures.
var AVX2 *Kernel

// AVX512 is nil on other architectures.
var AVX512 *Kernel

// FMAPeak512 returns 0: there is no AVX-512 peak loop on this architecture.
func FMAPeak512(n int) float64 { return 0 }

// FMAPeak returns 0: there is no FMA peak loop on this architecture.
func FMAPeak(n int) float64 { return 0 }

func copyRows16(d, s []float32, lds, kb int) bool { return false }

func transposeAsm(d []float32, ldd int, s []float32, lds, rows, kb int) int { return 0 }

func packATrans(d, s []float32, lds, kb, npan, mr int) bool { return false }

func copyRows32(d, s []float32, lds, kb int) bool { return false }
