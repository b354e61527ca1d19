package nets

import (
	"strings"
	"testing"
)

// TestScaleHint: values up to 10⁴ in magnitude need no hint; larger ones
// name the largest and the power of ten to divide by.
func TestScaleHint(t *testing.T) {
	if h := ScaleHint(1e4); h != "" {
		t.Errorf("ScaleHint(1e4) = %q, want none", h)
	}
	if h := ScaleHint(3.5e6); !strings.Contains(h, "3.5e+06") || !strings.Contains(h, "1e+06") {
		t.Errorf("ScaleHint(3.5e6) = %q", h)
	}
}
