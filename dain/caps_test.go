package dain

import (
	"strings"
	"testing"
)

// TestAugCount: ⌊ratio·|train|⌋ new cells, refused (naming both, and the
// limit) when it would not fit: without the check, ratio 1000 over 3·10⁶
// training cells is 3·10⁹ cells asked of the sampler, and a ratio of
// 1e300 converts to a negative int.
func TestAugCount(t *testing.T) {
	if n, err := AugCount(0.5, 11); n != 5 || err != nil {
		t.Errorf("AugCount(0.5, 11) = %d, %v; want 5", n, err)
	}
	if n, err := AugCount(0, 11); n != 0 || err != nil {
		t.Errorf("AugCount(0, 11) = %d, %v; want 0", n, err)
	}
	_, err := AugCount(1000, 3_000_000)
	if err == nil || !strings.Contains(err.Error(), "ratio 1000 × 3000000 training cells = 3e+09 new cells: above the limit of 2147483647 new cells per run") {
		t.Errorf("AugCount(1000, 3e6): %v", err)
	}
	if _, err := AugCount(1e300, 10); err == nil {
		t.Errorf("AugCount(1e300, 10): no error")
	}
	for _, r := range []float64{1e300, MaxRatio + 1} {
		if err := CheckRatio(r); err == nil || !strings.Contains(err.Error(), "above the limit 1000") {
			t.Errorf("CheckRatio(%v): %v", r, err)
		}
	}
	if err := CheckRatio(0); err != nil {
		t.Errorf("CheckRatio(0), eval's baseline: %v", err)
	}
	c := DefaultConfig()
	c.EvalBatch = MaxBatch + 1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "eval batch 16777217: above the limit 16777216 cells") {
		t.Errorf("eval batch: %v", err)
	}
}
