//go:build amd64

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestTile4x24AVX512: tile4x24AVX512 gives tile4x24AVX2's bits in every
// epilogue (none, bias, bias and ReLU, mask), with and without earlier k
// blocks' sums, row strides below and at 24, and values that include
// zeros of both signs, NaN and infinities. Skipped where the CPU lacks
// AVX-512.
func TestTile4x24AVX512(t *testing.T) {
	if !narrowAVX512 || !New().simd {
		t.Skip("no AVX-512 (or AVX2) on this CPU")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	val := func() float32 {
		switch rng.IntN(40) {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		case 2:
			return float32(math.NaN())
		case 3:
			return float32(math.Inf(1 - 2*rng.IntN(2)))
		}
		return float32(rng.NormFloat64())
	}
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = val()
		}
		return v
	}
	p := func(v []float32) *float32 {
		if v == nil {
			return nil
		}
		return unsafe.SliceData(v)
	}
	cases := 0
	for _, rows := range []int{4, 8, 36} {
		for _, k := range []int{1, 3, 20, 200} {
			for _, ldc := range []int{20, 24, 30} {
				for mode := 0; mode <= 3; mode++ {
					for _, withPrev := range []bool{false, true} {
						lda, ldm := k+rng.IntN(3), 24+rng.IntN(5)
						a, w, bias := fill((rows-1)*lda+k), fill(24*k), fill(24)
						mask := fill((rows-1)*ldm + 24)
						var prev []float32
						if withPrev {
							prev = fill(rows * 24)
						}
						c1, c2 := fill((rows-1)*ldc+24), []float32(nil)
						c2 = append(c2, c1...)
						tile4x24AVX2(p(c1), p(a), p(w), rows, k, lda, ldc, p(bias), p(mask), p(prev), ldm, mode)
						tile4x24AVX512(p(c2), p(a), p(w), rows, k, lda, ldc, p(bias), p(mask), p(prev), ldm, mode)
						for i := range c1 {
							if math.Float32bits(c1[i]) != math.Float32bits(c2[i]) {
								t.Fatalf("rows %d, k %d, ldc %d, mode %d, prev %v: element %d is %g (%#x) on AVX-512, %g (%#x) on AVX2",
									rows, k, ldc, mode, withPrev, i, c2[i], math.Float32bits(c2[i]), c1[i], math.Float32bits(c1[i]))
							}
						}
						cases++
					}
				}
			}
		}
	}
	t.Logf("%d cases bit-identical", cases)
}

// TestSprows96AVX512: sprows96AVX512 gives sprows96AVX2's bits in every
// mode (store, add to C, mask), for rows with no entries and with many,
// entry lists of stride 1 and 2.
func TestSprows96AVX512(t *testing.T) {
	if !narrowAVX512 || !New().simd {
		t.Skip("no AVX-512 (or AVX2) on this CPU")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	val := func() float32 {
		switch rng.IntN(30) {
		case 0:
			return float32(math.Copysign(0, -1))
		case 1:
			return float32(math.NaN())
		}
		return float32(rng.NormFloat64())
	}
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = val()
		}
		return v
	}
	for _, rows := range []int{1, 5, 20} {
		for _, sstride := range []int{1, 2} {
			for _, mode := range []int{spNone, spAcc, spMask} {
				nb, ldb, ldc, ldm := 40, 96+8*rng.IntN(3), 96+8*rng.IntN(3), 96+8*rng.IntN(3)
				b := fill(nb * ldb)
				var ent []spEnt
				starts := make([]int32, rows*sstride+1)
				for r := range rows {
					starts[r*sstride] = int32(len(ent))
					for range rng.IntN(30) {
						ent = append(ent, spEnt{int32(4 * rng.IntN(nb) * ldb), val()})
					}
					starts[r*sstride+1] = int32(len(ent))
					if sstride == 2 && r+1 < rows {
						starts[r*sstride+2] = int32(len(ent))
					}
				}
				ent = append(ent, spEnt{}) // never read; keeps the slice non-empty
				mask := fill((rows-1)*ldm + 96)
				c1 := fill((rows-1)*ldc + 96)
				c2 := append([]float32(nil), c1...)
				sprows96AVX2(unsafe.SliceData(c1), ldc, rows, unsafe.SliceData(starts), sstride, unsafe.SliceData(ent), unsafe.SliceData(b), unsafe.SliceData(mask), ldm, mode)
				sprows96AVX512(unsafe.SliceData(c2), ldc, rows, unsafe.SliceData(starts), sstride, unsafe.SliceData(ent), unsafe.SliceData(b), unsafe.SliceData(mask), ldm, mode)
				for i := range c1 {
					if math.Float32bits(c1[i]) != math.Float32bits(c2[i]) {
						t.Fatalf("rows %d, stride %d, mode %d: element %d is %g on AVX-512, %g on AVX2", rows, sstride, mode, i, c2[i], c1[i])
					}
				}
			}
		}
	}
}

// TestDwAVX512: dwAVX512 gives dwAVX2's bits, with slots that step through
// rows of x, repeat one value (the ones of db) or a zero.
func TestDwAVX512(t *testing.T) {
	if !narrowAVX512 || !New().simd {
		t.Skip("no AVX-512 (or AVX2) on this CPU")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, rows := range []int{0, 1, 7, 300} {
		ldy, ldx := 24+rng.IntN(5), 3+rng.IntN(4)
		dy, x := make([]float32, max(rows, 1)*ldy+24), make([]float32, max(rows, 1)*ldx+4)
		for i := range dy {
			dy[i] = float32(rng.NormFloat64())
		}
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		one, zero := []float32{1}, []float32{0}
		sl := dwSlots{p: [4]*float32{&x[0], &x[1], &one[0], &zero[0]}, s: [4]int{4 * ldx, 4 * ldx, 0, 0}}
		var a1, a2 [dwAcc]float32
		for i := range a1 {
			a1[i] = float32(rng.NormFloat64())
		}
		a2 = a1
		dwAVX2(&a1[0], unsafe.SliceData(dy), ldy, rows, &sl)
		dwAVX512(&a2[0], unsafe.SliceData(dy), ldy, rows, &sl)
		for i := range a1 {
			if math.Float32bits(a1[i]) != math.Float32bits(a2[i]) {
				t.Fatalf("rows %d: element %d is %g on AVX-512, %g on AVX2", rows, i, a2[i], a1[i])
			}
		}
	}
}
