package computetest

import (
	"fmt"
	"slices"

	"github.com/dainx/dainx/compute/ref"
)

// testSampleAlias checks SampleAlias against compute.AliasDraw (through
// ref.SampleAlias) exactly: the draws are integers and the generator is
// counter-based, so every backend must give the same entities. Tables of 1
// to 100003 entities hold thresholds of every kind (0: always the alias,
// 2³²−1: almost never, and uniform), counters cross the 2³² boundary of
// their low word and wrap around 2⁶⁴, and keys use both halves. Columns
// other than col must keep their contents.
func testSampleAlias(s *suite) {
	keys := []struct{ key, ctr uint64 }{
		{0, 0},
		{0x0123456789abcdef, 0xfffffff0},         // lo(c) wraps within the batch
		{0xfedcba9876543210, ^uint64(0) - 100},   // c wraps around 2⁶⁴
		{0x00000000ffffffff, 0x1234567800000000}, // key with an empty high word
	}
	for _, entities := range []int{1, 2, 7, 1000, 100003} {
		th := make([]uint32, entities)
		al := make([]int32, entities)
		for j := range th {
			switch s.rng.IntN(8) {
			case 0:
				th[j] = 0
			case 1:
				th[j] = ^uint32(0)
			default:
				th[j] = s.rng.Uint32()
			}
			al[j] = int32(s.rng.IntN(entities))
		}
		thI32 := make([]int32, entities)
		for j, t := range th {
			thI32[j] = int32(t)
		}
		thresh := s.i32("thresh", thI32)
		alias := s.i32("alias", al)
		i := 0
		for _, rows := range batches {
			for order := 1; order <= 4; order++ {
				for col := 0; col < order; col++ {
					kc := keys[i%len(keys)]
					i++
					desc := fmt.Sprintf("SampleAlias I=%d M=%d order=%d col=%d key=%#x ctr=%#x", entities, rows, order, col, kc.key, kc.ctr)
					init := make([]int32, rows*order)
					for j := range init {
						init[j] = -1 - int32(j)
					}
					outb := s.i32("out", init)
					want := slices.Clone(init)
					ref.SampleAlias(want, order, col, th, al, kc.key, kc.ctr)
					sh := NewShape("out", "m,n", rows, order)
					run := func() {
						s.be.SampleAlias(outb.view, order, col, thresh.view, alias.view, kc.key, kc.ctr)
					}
					run()
					s.equalI32(desc, sh, s.readI32(desc, outb), want)
					run()
					s.equalI32(desc+" (applied twice)", sh, s.readI32(desc, outb), want)
					s.be.UploadI32(outb.view, init)
					run()
					s.equalI32(desc+" (rerun)", sh, s.readI32(desc, outb), want)
					outb.parent.Free()
					s.i32s = s.i32s[:len(s.i32s)-1]
				}
			}
		}
		s.unchanged("SampleAlias I="+fmt.Sprint(entities), nil, []*ibuf{thresh, alias})
		s.freeAll()
	}
}
