package dain

import (
	"github.com/dainx/dainx/dain/influence"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tracin"
)

// pass is s as an influence pass of its training (influence.Pass).
func (s TracIn) pass() influence.Pass {
	return influence.Pass{Estimator: s.Estimator, Layers: s.Layers, Every: s.Every, ValSample: s.ValSample}
}

// accumulator builds the accumulator of pass s on the net that t holds
// (influence.Pass.Accumulator), its sums over the processes and in-run's
// validation sample drawn from e's.
func (s TracIn) accumulator(e *Experiment, t *trained, tc *nn.TrainConfig) tracin.Accumulator {
	sample := func(n int) (*nn.Set, float64) {
		return influence.Sample(e.cfg.Seed, e.sp.Counts[1], e.sp.ValFirst, e.x.Order(), e.Val, t.Val, t.Net, n)
	}
	return s.pass().Accumulator(t.Net, t.Train, t.Val, tc, e.sp.SummerF32(), sample)
}
