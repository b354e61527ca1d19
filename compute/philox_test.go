package compute_test

import (
	"math/rand/v2"
	"testing"

	"github.com/dainx/dainx/compute"
)

// TestPhiloxKnownAnswers checks Philox4x32-10 against the known-answer
// vectors of Random123 (file tests/kat_vectors of the Random123
// distribution by D. E. Shaw Research), as copied into Random123-Boost,
// github.com/DEShawResearch/Random123-Boost, libs/random/test/test_philox.cpp
// (test_kat_philox4x32, the three lines with 10 rounds). The same three
// vectors appear in TensorFlow's compiler/tests/stateful_random_ops_test.py
// (testPhilox4x32). Each vector is counter words 0..3, key words 0..1, then
// the output words 0..3.
func TestPhiloxKnownAnswers(t *testing.T) {
	for _, c := range []struct {
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{
			[4]uint32{0x00000000, 0x00000000, 0x00000000, 0x00000000},
			[2]uint32{0x00000000, 0x00000000},
			[4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
		},
		{
			[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
			[2]uint32{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
		},
		{ // the hexadecimal digits of π
			[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
			[2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1},
		},
	} {
		if got := compute.Philox(c.ctr, c.key); got != c.want {
			t.Errorf("Philox(%08x, %08x) = %08x, want %08x", c.ctr, c.key, got, c.want)
		}
	}
}

// draw is the draw of AliasDraw spelled out from the SampleAlias contract
// in backend.go: counter (lo(c), hi(c), col, 0) with c = ctr+m, key
// (lo(key), hi(key)), j = ⌊r₀·I/2³²⌋, j kept if r₁ < thresh[j].
func draw(entities, col int, key, ctr uint64, m int) (j uint32, r1 uint32) {
	c := ctr + uint64(m)
	r := compute.Philox(
		[4]uint32{uint32(c & 0xffffffff), uint32(c >> 32), uint32(col), 0},
		[2]uint32{uint32(key & 0xffffffff), uint32(key >> 32)})
	return uint32(uint64(r[0]) * uint64(entities) >> 32), r[1]
}

// TestAliasDraw checks that AliasDraw returns only j or alias[j], for the j
// and the acceptance test of the SampleAlias contract, across table sizes,
// columns, keys and counters that carry into the high word or wrap.
func TestAliasDraw(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	counters := []uint64{0, 1, 0xffffffff, 0xfffffff0, 1<<32 + 5, ^uint64(0) - 3}
	keys := []uint64{0, 1, 0xffffffff00000000, 0x0123456789abcdef}
	for _, entities := range []int{1, 2, 3, 7, 1000, 65537} {
		thresh := make([]uint32, entities)
		alias := make([]int32, entities)
		for j := range thresh {
			thresh[j] = rng.Uint32()
			switch rng.IntN(8) {
			case 0:
				thresh[j] = 0
			case 1:
				thresh[j] = ^uint32(0)
			}
			alias[j] = int32(rng.IntN(entities))
		}
		// Marked aliases: alias[j] = I + j is never a valid j, so the
		// result tells which branch was taken.
		marked := make([]int32, entities)
		for j := range marked {
			marked[j] = int32(entities + j)
		}
		for _, ctr := range counters {
			for _, key := range keys {
				for col := range 4 {
					for m := range 40 {
						j, r1 := draw(entities, col, key, ctr, m)
						if int(j) >= entities {
							t.Fatalf("I=%d: j = %d out of range", entities, j)
						}
						got := compute.AliasDraw(thresh, alias, col, key, ctr, m)
						want := alias[j]
						if r1 < thresh[j] {
							want = int32(j)
						}
						if got != int32(j) && got != alias[j] {
							t.Fatalf("I=%d col=%d key=%#x ctr=%#x m=%d: AliasDraw = %d, neither j = %d nor alias[j] = %d",
								entities, col, key, ctr, m, got, j, alias[j])
						}
						if got != want {
							t.Fatalf("I=%d col=%d key=%#x ctr=%#x m=%d: AliasDraw = %d, want %d (j = %d, r₁ = %#x, thresh[j] = %#x)",
								entities, col, key, ctr, m, got, want, j, r1, thresh[j])
						}
						// thresh = 0 never keeps j; with marked aliases the
						// result reveals j itself.
						if got := compute.AliasDraw(make([]uint32, entities), marked, col, key, ctr, m); got != int32(entities)+int32(j) {
							t.Fatalf("I=%d col=%d key=%#x ctr=%#x m=%d: with thresh 0 AliasDraw = %d, want alias[%d] = %d",
								entities, col, key, ctr, m, got, j, int32(entities)+int32(j))
						}
					}
				}
			}
		}
	}
}

// TestAliasDrawCounter checks that row m of a draw with counter ctr is the
// draw of row 0 with counter ctr+m, so that a batch split into pieces gives
// the same entities as one batch, including across the 2³² carry.
func TestAliasDrawCounter(t *testing.T) {
	const entities = 1009
	thresh := make([]uint32, entities)
	alias := make([]int32, entities)
	rng := rand.New(rand.NewPCG(1, 1))
	for j := range thresh {
		thresh[j] = rng.Uint32()
		alias[j] = int32(rng.IntN(entities))
	}
	const key, ctr = 0x9e3779b97f4a7c15, 0xffffffe0
	for m := range 100 {
		a := compute.AliasDraw(thresh, alias, 2, key, ctr, m)
		b := compute.AliasDraw(thresh, alias, 2, key, ctr+uint64(m), 0)
		if a != b {
			t.Fatalf("row %d of counter %#x draws %d, row 0 of counter %#x draws %d", m, uint64(ctr), a, uint64(ctr)+uint64(m), b)
		}
	}
}
