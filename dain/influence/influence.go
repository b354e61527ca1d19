// Package influence builds the influence passes that ride on a model's
// training (package dain's TracIn stage): TracIn-CP over the last layer or
// every layer, its Adam-aware variant (tracin-adam) and in-run's terms
// taken during the training (issue 35), as accumulators of package tracin
// hooked into the training's configuration; and names and orders the
// passes of one training, as its checkpoint stage names them.
package influence

import (
	"fmt"
	"slices"
	"time"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/config"
	"github.com/dainx/dainx/dain/streams"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tracin"
)

// Pass is one influence pass: its estimator (config.EstimatorTracIn,
// EstimatorAdam or EstimatorInRun), its parameters (Layers: "last" or
// "all"), and in-run's step interval and validation sample size.
type Pass struct {
	Estimator, Layers string
	Every, ValSample  int
}

// Name names p in a training stage's checkpoint name.
func (p Pass) Name() string {
	switch p.Estimator {
	case config.EstimatorAdam:
		return "tracin-adam-" + p.Layers
	case config.EstimatorInRun:
		return fmt.Sprintf("in-run-%s-k%d-v%d", p.Layers, p.Every, p.ValSample)
	}
	return "tracin-" + p.Layers
}

// estimators orders the estimators of the passes on one training (after
// their layers): TracIn-CP's passes first, as before there were others.
var estimators = []string{config.EstimatorTracIn, config.EstimatorAdam, config.EstimatorInRun}

// Rank orders the passes of one training: by layers (in
// config.InfluenceLayers' order), then estimator.
func (p Pass) Rank() int {
	return slices.Index(config.Names(config.InfluenceLayers), p.Layers)*len(estimators) + slices.Index(estimators, p.Estimator)
}

// Accumulator builds the accumulator of p on net, trained on train with
// validation set val, setting what it needs of tc (the validation gradient
// buffer, the Adam state, the step hook). sum adds a buffer over the
// processes (nil on one); sample returns in-run's validation sample of n
// cells and |val|/n (Sample). The passes of a training are built in Rank
// order. It panics on layers other than "last" and "all".
func (p Pass) Accumulator(net *nn.Net, train, val *nn.Set, tc *nn.TrainConfig, sum func([]float32), sample func(n int) (*nn.Set, float64)) tracin.Accumulator {
	if p.Estimator != config.EstimatorTracIn && tc.Adam == nil {
		tc.Adam = &nn.AdamState{}
	}
	var last *tracin.LastLayer
	switch {
	case p.Estimator == config.EstimatorInRun:
		s, scale := sample(p.ValSample)
		a := &inRunPass{InRun: tracin.NewInRun(net, train, s, tracin.InRunConfig{
			Eta: tc.LR, Every: p.Every, ValScale: scale, AllLayers: p.Layers == "all", Adam: tc.Adam})}
		a.SumValGrad(sum) // G_t over every process's part of the sample
		if s != val {
			a.sample = s
		}
		tc.Steps = append(tc.Steps, a)
		return a
	case p.Layers == "all":
		var a *tracin.AllLayers
		if p.Estimator == config.EstimatorAdam {
			a = tracin.NewAllLayersAdam(net, train, val, tc.LR, tc.Adam)
		} else {
			a = tracin.NewAllLayers(net, train, val, tc.LR)
		}
		a.SumValGrad(sum) // G_k over every process's validation cells
		return a
	case p.Layers != "last":
		panic(fmt.Sprintf("dain: TracIn layers %q", p.Layers))
	case p.Estimator == config.EstimatorAdam:
		last = tracin.NewLastLayerAdam(net, train, tc.LR, tc.Adam)
	default:
		last = tracin.NewLastLayer(net, train, tc.LR)
	}
	if tc.ValGradSum == nil {
		tc.ValGradSum = last.ValGradSum()
		return last
	}
	// Train fills one validation gradient: the first last-layer pass's.
	return &sharedGrad{LastLayer: last, be: net.Backend(), g: tc.ValGradSum}
}

// Sample returns in-run's fixed validation sample of n of the nv
// validation cells over every process, drawn without replacement from
// seed's stream (streams.InRunSample) in their global numbering, as a set
// of net of this process's share (its cells val, of order indices each,
// the first of which is valFirst), and nv/n; all of them, whole itself,
// and 1 when there are no more than n.
func Sample(seed uint64, nv, valFirst, order int, val *tensor.COO, whole *nn.Set, net *nn.Net, n int) (*nn.Set, float64) {
	if n >= nv {
		return whole, 1
	}
	pick := streams.New(seed, streams.InRunSample).Perm(nv)[:n]
	slices.Sort(pick)
	cells, vals := make([]int32, 0, n*order), make([]float64, 0, n)
	lo, hi := valFirst, valFirst+val.NNZ() // this process's
	for _, k := range pick {
		if k < lo || k >= hi {
			continue
		}
		k -= lo
		cells = append(cells, val.Idx[k*order:(k+1)*order]...)
		vals = append(vals, val.Val[k])
	}
	return net.NewSet(cells, vals), float64(nv) / float64(n)
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

// Checkpoint makes the checkpoint of every accumulator of accs at the end
// of an epoch (best: the best epoch so far), adding each one's wall time
// to secs (in-run's work inside the epoch's steps included), in seconds.
// An error is the first accumulator's that fails.
func Checkpoint(accs []tracin.Accumulator, secs []float64, best bool) error {
	for i, a := range accs {
		t0 := time.Now()
		if err := a.Checkpoint(best); err != nil {
			return err
		}
		secs[i] += time.Since(t0).Seconds()
		if s, ok := a.(interface{ TakeSeconds() float64 }); ok {
			secs[i] += s.TakeSeconds() // in-run's work inside the epoch's steps
		}
	}
	return nil
}
