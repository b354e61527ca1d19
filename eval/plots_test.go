package eval

import (
	"bytes"
	"math"
	"os"
	"testing"
)

// TestForest: a forest plot draws rows significant either way, rows
// without an interval (one split) or without a difference (no paired
// split), a family of one row and an empty one; forestName makes a file
// name of any reference. DAINX_PLOT_DIR=dir keeps the PNG for a look.
func TestForest(t *testing.T) {
	nan := math.NaN()
	rows := []Comparison{
		{Method: "better", Diff: -0.02, Lo: -0.03, Hi: -0.01, N: 10, P: 1e-5, PHolm: 1e-4},
		{Method: "worse", Diff: 0.015, Lo: 0.01, Hi: 0.02, N: 10, P: 1e-3, PHolm: 0.004},
		{Method: "not significant", Diff: 0.001, Lo: -0.01, Hi: 0.012, N: 10, P: 0.8, PHolm: 1},
		{Method: "one split", Diff: -0.005, Lo: nan, Hi: nan, N: 1, P: nan, PHolm: nan},
		{Method: "no split", Diff: nan, Lo: nan, Hi: nan, N: 0, P: nan, PHolm: nan},
	}
	for _, f := range []family{{"degree", 0.5, rows}, {"dain", 0.5, rows[:1]}, {NoAug, 0.1, nil}} {
		var b bytes.Buffer
		if err := forest(&b, f); err != nil {
			t.Fatalf("%s: %v", f.ref, err)
		}
		if b.Len() < 8 || string(b.Bytes()[1:4]) != "PNG" {
			t.Errorf("%s: not a PNG", f.ref)
		}
		if dir := os.Getenv("DAINX_PLOT_DIR"); dir != "" {
			os.WriteFile(dir+"/"+forestName(f.ref, f.ratio), b.Bytes(), 0o644)
		}
	}
	for ref, want := range map[string]string{"degree": "forest-degree-50.png", NoAug: "forest-no-augmentation-50.png", "dain-tau0.5": "forest-dain-tau0.5-50.png", "a/b c": "forest-a-b-c-50.png"} {
		if got := forestName(ref, 0.5); got != want {
			t.Errorf("forestName(%q) = %q; want %q", ref, got, want)
		}
	}
	if got := forestName("x", 0.125); got != "forest-x-12.5.png" {
		t.Errorf("forestName at 12.5%%: %q", got)
	}
}
