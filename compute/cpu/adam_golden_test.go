package cpu

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dainx/dainx/compute"
)

// adamGoldenL2Zero is the SHA-256 of the parameters and moments that five
// Adam and five SparseAdam steps leave (adamGoldenRun), recorded with the
// code before AdamStep.L2 existed (commit 8670e4a). A step with L2 = 0
// must still give exactly these bits.
const adamGoldenL2Zero = "954882b14c0d0f5a07453bbfb30ae9bbf0fb5b765f424b8a3fa045675be51438"

// adamGoldenRun runs five dense Adam steps on 4099 elements and five
// SparseAdam steps on a 300×7 table (rows drawn with repeats by
// DistinctRows), on backend be with step settings s (T set per step), and
// returns the SHA-256 of every p, m and v after them.
func adamGoldenRun(t *testing.T, be *Backend, s compute.AdamStep) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 5))
	vals := func(n int, scale float64, nonneg bool) []float32 {
		v := make([]float32, n)
		for i := range v {
			x := rng.NormFloat64() * scale
			if nonneg {
				x = math.Abs(x)
			}
			v[i] = float32(x)
		}
		return v
	}
	h := sha256.New()
	put := func(v []float32) {
		for _, x := range v {
			binary.Write(h, binary.LittleEndian, math.Float32bits(x))
		}
	}
	const n = 4099
	p, m, v := vals(n, 1, false), vals(n, 1e-2, false), vals(n, 1e-4, true)
	for step := 1; step <= 5; step++ {
		s.T = step
		be.Adam(vec(p), vec(vals(n, 1e-1, false)), vec(m), vec(v), s)
	}
	put(p)
	put(m)
	put(v)
	const rows, width, k = 300, 7, 120
	tp, tm, tv := vals(rows*width, 1, false), vals(rows*width, 1e-2, false), vals(rows*width, 1e-4, true)
	for step := 1; step <= 5; step++ {
		cells := make([]int32, k)
		for i := range cells {
			cells[i] = int32(rng.IntN(rows / 2))
		}
		ur, st, pm, cnt := make([]int32, k), make([]int32, k+1), make([]int32, k), make([]int32, 1)
		be.DistinctRows(ivec(ur), ivec(st), ivec(pm), ivec(cnt), ivec(cells))
		s.T = step
		be.SparseAdam(vec(tp), vec(vals(k*width, 1e-1, false)), vec(tm), vec(tv), ivec(ur), ivec(cnt), width, s)
	}
	put(tp)
	put(tm)
	put(tv)
	return hex.EncodeToString(h.Sum(nil))
}

// TestAdamGoldenL2Zero: Adam and SparseAdam without L2 give the bits they
// gave before AdamStep.L2 existed, on every kernel path.
func TestAdamGoldenL2Zero(t *testing.T) {
	for _, k := range Kernels() {
		be, err := NewWith(Options{Kernel: k})
		if err != nil {
			t.Fatal(err)
		}
		got := adamGoldenRun(t, be, compute.AdamStep{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
		if got != adamGoldenL2Zero {
			t.Errorf("%s: Adam and SparseAdam without L2 hash to %s, want %s (the bits before L2)", k, got, adamGoldenL2Zero)
		}
	}
}
