package compute

import "math/bits"

// Philox4x32-10 constants (Salmon, Moraes, Dror, Shaw, "Parallel random
// numbers: as easy as 1, 2, 3", SC 2011, Table 2 and §4.3).
const (
	philoxM0 = 0xD2511F53
	philoxM1 = 0xCD9E8D57
	philoxW0 = 0x9E3779B9
	philoxW1 = 0xBB67AE85
)

// Philox computes the counter-based generator Philox4x32 with 10 rounds: the
// four 32-bit words it returns are a pure function of the 128-bit counter and
// the 64-bit key. kernels/common.cuh implements the same function; the
// conformance suite checks the two against each other through SampleAlias.
//
// References: Salmon et al., SC 2011.
func Philox(ctr [4]uint32, key [2]uint32) [4]uint32 {
	c0, c1, c2, c3 := ctr[0], ctr[1], ctr[2], ctr[3]
	k0, k1 := key[0], key[1]
	for r := 0; r < 10; r++ {
		hi0, lo0 := bits.Mul32(philoxM0, c0)
		hi1, lo1 := bits.Mul32(philoxM1, c2)
		c0, c1, c2, c3 = hi1^c1^k0, lo1, hi0^c3^k1, lo0
		k0 += philoxW0
		k1 += philoxW1
	}
	return [4]uint32{c0, c1, c2, c3}
}

// AliasDraw returns the draw of SampleAlias for row m of column col: the
// reference both backends must reproduce bit for bit. thresh holds
// ⌊p·2³²⌋ per column as uint32; alias the fallback entity.
func AliasDraw(thresh []uint32, alias []int32, col int, key, ctr uint64, m int) int32 {
	c := ctr + uint64(m)
	r := Philox([4]uint32{uint32(c), uint32(c >> 32), uint32(col), 0}, [2]uint32{uint32(key), uint32(key >> 32)})
	j := uint32((uint64(r[0]) * uint64(len(thresh))) >> 32)
	if r[1] < thresh[j] {
		return int32(j)
	}
	return alias[j]
}
