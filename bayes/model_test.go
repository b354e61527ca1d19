package bayes

import (
	"math"
	"strings"
	"testing"
)

// TestNewModel: NewModel rebuilds a model from its samples (the same
// predictions bit for bit), Thin keeps evenly spaced samples with the last,
// and bad shapes or values are errors naming the sample and mode.
func TestNewModel(t *testing.T) {
	train, _ := fmTensor([]int{9, 7, 5}, 2, 150, 0.1, 5)
	cfg := DefaultConfig()
	cfg.Rank, cfg.Samples, cfg.KeepSamples = 2, 12, 6
	res, err := Fit(t.Context(), train, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Model
	var samples []Sample
	for s := range m.NumSamples() {
		samples = append(samples, m.Sample(s))
	}
	m2, err := NewModel(m.Dims, m.Rank, m.Min, m.Max, samples)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Predict(train)
	b, _ := m2.Predict(train)
	for c := range a {
		if a[c] != b[c] {
			t.Fatalf("cell %d: %v rebuilt, %v", c, b[c], a[c])
		}
	}
	th := m.Thin(2)
	if th.NumSamples() != 2 || th.Sample(0).W0 != m.Sample(2).W0 || th.Sample(1).W0 != m.Sample(5).W0 {
		t.Errorf("Thin(2) of 6 samples: w0 %v %v, want samples 2 and 5's", th.Sample(0).W0, th.Sample(1).W0)
	}
	short := samples[0]
	short.W = [][]float64{short.W[0][:1], short.W[1], short.W[2]}
	nan := samples[0]
	nan.V = [][]float64{append([]float64{math.NaN()}, nan.V[0][1:]...), nan.V[1], nan.V[2]}
	for _, c := range []struct {
		name    string
		rank    int
		lo, hi  float64
		samples []Sample
		want    string
	}{
		{"no sample", 2, 0, 1, nil, "no sample"},
		{"rank", 0, 0, 1, samples, "rank 0"},
		{"clamp", 2, 2, 1, samples, "clamp range"},
		{"short", 2, 0, 1, []Sample{samples[0], short}, "sample 1, mode 1"},
		{"nan", 2, 0, 1, []Sample{nan}, "sample 0, mode 1: value NaN"},
	} {
		if _, err := NewModel(m.Dims, c.rank, c.lo, c.hi, c.samples); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
