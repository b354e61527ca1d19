package nn

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestDivergenceBounds: each bound of divergence, and healthy epochs that
// pass.
func TestDivergenceBounds(t *testing.T) {
	first := Epoch{N: 1, TrainMSE: 2, ValMSE: 1.5}
	for _, c := range []struct {
		ep   Epoch
		ms   float64
		want string // "" = no error
	}{
		{Epoch{N: 3, TrainMSE: 0.5, ValMSE: 0.7}, 1, ""},
		{Epoch{N: 1, TrainMSE: 1.9e6, ValMSE: 1}, 1, ""}, // below 10⁶·(1+1)
		{Epoch{N: 1, TrainMSE: math.NaN(), ValMSE: 1}, 1, "training MSE is not finite"},
		{Epoch{N: 2, TrainMSE: 1, ValMSE: math.Inf(1)}, 1, "validation MSE is not finite"},
		{Epoch{N: 1, TrainMSE: 1e15, ValMSE: 1}, 8.5, "exceeds 1e+06 × (mean squared value 8.5 + 1)"},
		{Epoch{N: 2, TrainMSE: 1, ValMSE: 1e13}, 8.5, "validation MSE exceeds"},
		{Epoch{N: 4, TrainMSE: 2001, ValMSE: 1}, 1e6, "grew more than 1000-fold over epoch 1's 2"},
		{Epoch{N: 4, TrainMSE: 1999, ValMSE: 1}, 1e6, ""},
		{Epoch{N: 1, TrainMSE: 1e20, ValMSE: 1e20}, 1e18, ""}, // large values, large MSE: not divergence by itself
	} {
		f := first
		if c.ep.N == 1 {
			f = c.ep
		}
		err := divergence(c.ep, f, c.ms)
		var d *DivergenceError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v, ms %g: %v", c.ep, c.ms, err)
		case c.want != "" && (!errors.As(err, &d) || !strings.Contains(err.Error(), c.want) || d.Epoch != c.ep.N):
			t.Errorf("%+v, ms %g: %v, want %q", c.ep, c.ms, err, c.want)
		}
	}
}
