package linemap

import "testing"

func TestLineMap(t *testing.T) {
	var m Map
	lines := []int{1, 2, 3, 5, 6, 9, 10, 11, 12, 40}
	for k, l := range lines {
		m.Add(k, l)
	}
	if len(m.first) != 4 {
		t.Errorf("%d runs, want 4", len(m.first))
	}
	for k, l := range lines {
		if got := m.LineOf(k); got != l {
			t.Errorf("lineOf(%d) = %d, want %d", k, got, l)
		}
	}
}
