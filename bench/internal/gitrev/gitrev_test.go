package gitrev

import (
	"regexp"
	"testing"
)

// TestHead: in this checkout, 12 hex digits and perhaps "+dirty"; without
// git, "unknown".
func TestHead(t *testing.T) {
	if h := Head(); !regexp.MustCompile(`^([0-9a-f]{12}(\+dirty)?|unknown)$`).MatchString(h) {
		t.Errorf("Head() = %q", h)
	}
}
