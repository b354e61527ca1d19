package version

import (
	"strings"
	"testing"
)

// TestString: the version starts with Base, names a commit (or unknown),
// never says "(devel)", and a stamp wins.
func TestString(t *testing.T) {
	v := String()
	if !strings.HasPrefix(v, Base+"+") || strings.Contains(v, "devel") || len(v) <= len(Base)+1 {
		t.Errorf("version %q", v)
	}
	Stamp = "9.9.9+stamped"
	defer func() { Stamp = "" }()
	if String() != "9.9.9+stamped" {
		t.Errorf("stamped version %q", String())
	}
}
