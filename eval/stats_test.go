package eval

import (
	"math"
	"testing"
)

// TestHolm: the worked example of R's p.adjust(c(0.01, 0.04, 0.03, 0.005),
// "holm") = 0.03 0.06 0.06 0.02: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3,
// 2, 1 give 0.02, 0.03, 0.06, 0.04, made monotone 0.02, 0.03, 0.06, 0.06.
// A NaN stays NaN and does not count; values cap at 1.
func TestHolm(t *testing.T) {
	for _, tc := range []struct{ p, want []float64 }{
		{[]float64{0.01, 0.04, 0.03, 0.005}, []float64{0.03, 0.06, 0.06, 0.02}},
		{[]float64{0.01, math.NaN(), 0.04, 0.03, 0.005}, []float64{0.03, math.NaN(), 0.06, 0.06, 0.02}},
		{[]float64{0.5, 0.2}, []float64{0.5, 0.4}},
		{[]float64{0.9, 0.8, 0.7}, []float64{1, 1, 1}},
		{nil, []float64{}},
	} {
		got := Holm(tc.p)
		if len(got) != len(tc.want) {
			t.Fatalf("Holm(%v) = %v", tc.p, got)
		}
		for i := range got {
			if math.IsNaN(tc.want[i]) != math.IsNaN(got[i]) || math.Abs(got[i]-tc.want[i]) > 1e-12 {
				t.Errorf("Holm(%v) = %v, want %v", tc.p, got, tc.want)
				break
			}
		}
	}
}

// TestMeanCI: differences 1, 2, 3, 4, 5 (mean 3, s = √2.5) with
// t_{0.975, 4} = 2.776445 give 3 ± 1.963243.
func TestMeanCI(t *testing.T) {
	a := []float64{2, 4, 6, 8, 10}
	b := []float64{1, 2, 3, 4, 5}
	m, lo, hi := MeanCI(a, b, 0.95)
	h := 2.7764451051977987 * math.Sqrt(2.5) / math.Sqrt(5)
	if m != 3 || math.Abs(lo-(3-h)) > 1e-9 || math.Abs(hi-(3+h)) > 1e-9 {
		t.Errorf("MeanCI = %v [%v, %v], want 3 ± %v", m, lo, hi, h)
	}
	if m, _, _ := MeanCI(a, b[:4], 0.95); !math.IsNaN(m) {
		t.Error("MeanCI of unequal lengths is not NaN")
	}
}

// TestCompare: each method against each reference present, on the splits
// both ran, with Holm over the family of one reference and ratio.
func TestCompare(t *testing.T) {
	r := &Results{Spec: Spec{Methods: []string{"dain", "degree", "x"}}}
	for rep := 1; rep <= 4; rep++ {
		f := float64(rep)
		r.Runs = append(r.Runs,
			Run{Repeat: rep, Method: "dain", Ratio: 0, RMSE: 1 + f/100},
			Run{Repeat: rep, Method: "degree", Ratio: 0, RMSE: 1 + f/100},
			Run{Repeat: rep, Method: "x", Ratio: 0, RMSE: 1 + f/100},
			Run{Repeat: rep, Method: "dain", Ratio: 0.5, RMSE: 0.9 + f/100 + 0.001*f*f},
			Run{Repeat: rep, Method: "degree", Ratio: 0.5, RMSE: 0.91 + f/100},
			Run{Repeat: rep, Method: "x", Ratio: 0.5, RMSE: 0.89 + f/100 - 0.001*f},
		)
	}
	cs := r.Compare()
	refs := map[string]int{}
	for _, c := range cs {
		refs[c.Reference]++
		if c.N != 4 || c.Ratio != 0.5 {
			t.Errorf("%+v", c)
		}
		if c.PHolm < c.P {
			t.Errorf("Holm p %v below raw p %v", c.PHolm, c.P)
		}
	}
	if refs["degree"] != 2 || refs["dain"] != 2 || refs[NoAug] != 3 || len(refs) != 3 {
		t.Errorf("references %v", refs)
	}
	for _, c := range cs {
		if c.Method == "x" && c.Reference == "degree" {
			if math.Abs(c.Diff-(-0.02-0.0025)) > 1e-12 || !(c.Lo < c.Diff && c.Diff < c.Hi) {
				t.Errorf("x − degree: %+v", c)
			}
		}
	}
}
