package dain

import (
	"fmt"
	"slices"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tracin"
)

// streamInRunSample draws in-run's validation sample (kept apart from
// experiment.go's and the variants' streams).
const streamInRunSample = 0x300

// passName names a pass in a training stage's checkpoint name.
func (s TracIn) passName() string {
	switch s.Estimator {
	case EstimatorAdam:
		return "tracin-adam-" + s.Layers
	case EstimatorInRun:
		return fmt.Sprintf("in-run-%s-k%d-v%d", s.Layers, s.Every, s.ValSample)
	}
	return "tracin-" + s.Layers
}

// estimators orders the estimators of the passes on one training (after
// their layers): TracIn-CP's passes first, as before there were others.
var estimators = []string{EstimatorTracIn, EstimatorAdam, EstimatorInRun}

// passRank orders the passes of one training: by layers, then estimator.
func passRank(p TracIn) int {
	return slices.Index(Names(InfluenceLayers), p.Layers)*len(estimators) + slices.Index(estimators, p.Estimator)
}

// accumulator builds the accumulator of pass s on the net that t holds,
// setting what it needs of tc (the validation gradient buffer, the Adam
// state, the step hook). The passes of a training are built in passRank
// order.
func (s TracIn) accumulator(e *Experiment, t *trained, tc *nn.TrainConfig) tracin.Accumulator {
	net := t.net
	if s.Estimator != EstimatorTracIn && tc.Adam == nil {
		tc.Adam = &nn.AdamState{}
	}
	var last *tracin.LastLayer
	switch {
	case s.Estimator == EstimatorInRun:
		sample, scale := e.inRunSample(t, s.ValSample)
		a := &inRunPass{InRun: tracin.NewInRun(net, t.train, sample, tracin.InRunConfig{
			Eta: tc.LR, Every: s.Every, ValScale: scale, AllLayers: s.Layers == "all", Adam: tc.Adam})}
		a.SumValGrad(e.sp.SummerF32()) // G_t over every process's part of the sample
		if sample != t.val {
			a.sample = sample
		}
		tc.Steps = append(tc.Steps, a)
		return a
	case s.Layers == "all":
		var a *tracin.AllLayers
		if s.Estimator == EstimatorAdam {
			a = tracin.NewAllLayersAdam(net, t.train, t.val, tc.LR, tc.Adam)
		} else {
			a = tracin.NewAllLayers(net, t.train, t.val, tc.LR)
		}
		a.SumValGrad(e.sp.SummerF32()) // G_k over every process's validation cells
		return a
	case s.Layers != "last":
		panic(fmt.Sprintf("dain: TracIn layers %q", s.Layers))
	case s.Estimator == EstimatorAdam:
		last = tracin.NewLastLayerAdam(net, t.train, tc.LR, tc.Adam)
	default:
		last = tracin.NewLastLayer(net, t.train, tc.LR)
	}
	if tc.ValGradSum == nil {
		tc.ValGradSum = last.ValGradSum()
		return last
	}
	// Train fills one validation gradient: the first last-layer pass's.
	return &sharedGrad{LastLayer: last, be: net.Backend(), g: tc.ValGradSum}
}

// inRunSample returns in-run's fixed validation sample of t's validation
// cells, n of them drawn without replacement (all of them, t.val itself,
// when there are no more than n), and |val|/n.
func (e *Experiment) inRunSample(t *trained, n int) (*nn.Set, float64) {
	nv := e.sp.Counts[1] // over every process
	if n >= nv {
		return t.val, 1
	}
	pick := rng(e.cfg.Seed, streamInRunSample).Perm(nv)[:n]
	slices.Sort(pick)
	order := e.x.Order()
	cells, vals := make([]int32, 0, n*order), make([]float64, 0, n)
	lo, hi := e.sp.ValFirst, e.sp.ValFirst+e.Val.NNZ() // this process's
	for _, k := range pick {
		if k < lo || k >= hi {
			continue
		}
		k -= lo
		cells = append(cells, e.Val.Idx[k*order:(k+1)*order]...)
		vals = append(vals, e.Val.Val[k])
	}
	return t.net.NewSet(cells, vals), float64(nv) / float64(n)
}

// inRunPass is an in-run accumulator with the validation sample it owns
// (nil when it is the validation set).
type inRunPass struct {
	*tracin.InRun
	sample *nn.Set
}

func (a *inRunPass) Free() {
	a.InRun.Free()
	if a.sample != nil {
		a.sample.Free()
	}
}

// sharedGrad is a last-layer pass on a training whose validation
// gradient another pass's buffer receives: it copies G_k from there
// before each checkpoint.
type sharedGrad struct {
	*tracin.LastLayer
	be compute.Backend
	g  compute.F32
}

func (a *sharedGrad) Checkpoint(best bool) error {
	a.be.Copy(a.LastLayer.ValGradSum(), a.g)
	return a.LastLayer.Checkpoint(best)
}
