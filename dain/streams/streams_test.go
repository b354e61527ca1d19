package streams

import "testing"

// TestStreamsPinned: the streams keep their numbers (a seed's results and
// checkpoints depend on them).
func TestStreamsPinned(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"Init", Init, 1}, {"Replace", Replace, 10}, {"Bayes", Bayes, 11}, {"BayesPredictor", BayesPredictor, 12},
		{"DuplicateShares", DuplicateShares, 13}, {"ReplaceShares", ReplaceShares, 14},
		{"Near", Near, 0x100}, {"NearShares", NearShares, 0x101}, {"Oracle", Oracle, 0x200}, {"InRunSample", InRunSample, 0x300},
		{"Rank(Near, 2)", Rank(Near, 2), 0x100 + 2<<40},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}
