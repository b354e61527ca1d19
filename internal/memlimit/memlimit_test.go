package memlimit

import (
	"strings"
	"testing"
)

// TestCheck: a sum over the limit is one line naming the largest part and
// its flags and the user's -max-memory; a sum within it, or no limit, is
// nil; parts past int64 are still counted.
func TestCheck(t *testing.T) {
	parts := []Part{{"the cells", "1000 cells", 2e4}, {"the mlp model", "-layers 24,1000000", 3e10}}
	err := Check("the run", parts, 1<<30, 1<<30)
	if err == nil || !strings.Contains(err.Error(), "the largest part is the mlp model (-layers 24,1000000) at 28 GiB") || !strings.Contains(err.Error(), "-max-memory 1.0 GiB") {
		t.Errorf("over the limit: %v", err)
	}
	if err := Check("the run", parts, 1<<40, 0); err != nil {
		t.Errorf("within the limit: %v", err)
	}
	if err := Check("the run", parts, 0, 0); err != nil {
		t.Errorf("no limit: %v", err)
	}
	huge := []Part{{"the CoSTCo model", "-rank 1048576", 1e30}}
	if err := Check("the run", huge, 1<<30, 0); err == nil || !strings.Contains(err.Error(), "EiB") || !strings.Contains(err.Error(), "what the system says is available") {
		t.Errorf("past int64: %v", err)
	}
}

// TestBytesFlag: sizes in SI and binary units, auto and 0 for none; a
// bad size, 0 bytes written otherwise, or one past int64 are refused.
func TestBytesFlag(t *testing.T) {
	for in, want := range map[string]Bytes{"8GiB": 8 << 30, "500MB": 500e6, "2G": 2e9, "auto": 0, "0": 0, "1024": 1024} {
		var b Bytes
		if err := b.Set(in); err != nil || b != want {
			t.Errorf("%q: %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"lots", "-1GB", "0B", "20EiB"} {
		var b Bytes
		if err := b.Set(in); err == nil {
			t.Errorf("%q: accepted as %d", in, b)
		}
	}
	if a := Available(); a < 0 {
		t.Errorf("Available %d", a)
	}
}
