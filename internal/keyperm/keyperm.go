// Package keyperm is a keyed, stateless permutation of 0..n−1: π(i) and
// π⁻¹(j) in O(1) time and memory each, so that a process can place any of
// its own items in a global random order without holding the order.
//
// It is a balanced Feistel network on the smallest domain of 2h bits that
// holds n, with cycle-walking (Black and Rogaway, "Ciphers with arbitrary
// finite domains", CT-RSA 2002): π(i) applies the network to i, and again
// to its result while that is ≥ n. The network is a bijection of [0, 4^h),
// so cycle-walking gives a bijection of [0, n); since 4^h < 4n, a walk
// takes fewer than 4 steps on average. The round function is the
// SplitMix64 finaliser of the right half and the round's key; with
// rounds = 8 the permutation passes the tests' uniformity checks, which is
// what DAIN needs of it (a random split and random batch orders), not
// cryptographic strength.
package keyperm

import (
	"fmt"
	"math/bits"
)

// rounds is the number of Feistel rounds.
const rounds = 8

// Perm is a permutation of 0..n−1 fixed by (n, seed, stream). The zero
// value is the permutation of the empty set.
type Perm struct {
	n    uint64
	half uint   // h: bits of each half
	mask uint64 // 2^h − 1
	keys [rounds]uint64
}

// New returns the permutation of 0..n−1 keyed by seed and stream (two
// streams of one seed give unrelated permutations). It panics if n < 0.
func New(n int, seed, stream uint64) Perm {
	if n < 0 {
		panic(fmt.Sprintf("keyperm: New(%d)", n))
	}
	p := Perm{n: uint64(n)}
	if n <= 1 {
		return p
	}
	b := uint(bits.Len64(uint64(n - 1))) // bits of the largest item
	p.half = max(1, (b+1)/2)
	p.mask = 1<<p.half - 1
	k := mix(seed ^ mix(stream+0x9e3779b97f4a7c15))
	for r := range p.keys {
		k = mix(k + 0x9e3779b97f4a7c15)
		p.keys[r] = k
	}
	return p
}

// Len returns n.
func (p Perm) Len() int { return int(p.n) }

// At returns π(i), the position of item i. It panics if i is outside
// [0, n).
func (p Perm) At(i int) int { return p.walk("At", i, Perm.encrypt) }

// Inv returns π⁻¹(j), the item at position j. It panics if j is outside
// [0, n).
func (p Perm) Inv(j int) int { return p.walk("Inv", j, Perm.decrypt) }

// walk applies net (encrypt or decrypt) to i until the result lies in
// [0, n): cycle-walking. It panics, naming the caller op, if i is outside
// [0, n).
func (p Perm) walk(op string, i int, net func(Perm, uint64) uint64) int {
	if uint64(i) >= p.n {
		panic(fmt.Sprintf("keyperm: %s(%d) of a permutation of %d", op, i, p.n))
	}
	if p.n == 1 {
		return 0
	}
	x := uint64(i)
	for {
		x = net(p, x)
		if x < p.n {
			return int(x)
		}
	}
}

// encrypt is the Feistel network on [0, 4^h): (L, R) → (R, L ⊕ F(R, k))
// per round.
func (p Perm) encrypt(x uint64) uint64 {
	l, r := x>>p.half, x&p.mask
	for _, k := range p.keys {
		l, r = r, l^(mix(r^k)&p.mask)
	}
	return l<<p.half | r
}

// decrypt inverts encrypt.
func (p Perm) decrypt(x uint64) uint64 {
	l, r := x>>p.half, x&p.mask
	for i := rounds - 1; i >= 0; i-- {
		l, r = r^(mix(l^p.keys[i])&p.mask), l
	}
	return l<<p.half | r
}

// mix is SplitMix64's finaliser (Steele, Lea and Flood, OOPSLA 2014).
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
