package memo

import (
	"errors"
	"testing"
)

// TestGet: a stage is computed once and its seconds kept; an error is
// returned and nothing kept, so that the next Get computes it again.
func TestGet(t *testing.T) {
	m := Map[string, int]{}
	calls := 0
	f := func() (int, float64, error) { calls++; return 7, 1.5, nil }
	for range 2 {
		if v, err := m.Get("a", f); v != 7 || err != nil {
			t.Fatalf("Get: %v, %v", v, err)
		}
	}
	if calls != 1 || m.Seconds("a") != 1.5 || m.Seconds("b") != 0 {
		t.Errorf("%d calls, seconds %v and %v; want 1, 1.5 and 0", calls, m.Seconds("a"), m.Seconds("b"))
	}
	bad := errors.New("bad")
	if _, err := m.Get("b", func() (int, float64, error) { return 0, 0, bad }); err != bad || m["b"] != nil {
		t.Errorf("a failed stage: %v, kept %v", err, m["b"])
	}
}
