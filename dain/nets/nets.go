// Package nets builds the models a DAIN run trains (package dain's
// embedding model Θ, value predictor and final models: the MLP, fm,
// hybrid and CoSTCo of package nn) from the run's configuration, and says
// why a training failed.
package nets

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dainx/dainx/checkpoint/rundir"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/config"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tracin"
)

// New builds on be a fresh model of kind (mlp, fm, hybrid or costco) as
// c sets it, over a tensor of dims, initialised from r, with its
// embedding table sharded by shard (nil: replicated; a sharded table
// trains with sparse Adam), and its training configuration. The fm and
// hybrid global bias starts at trainMean, the training cells' mean. An
// error is nn's, or names an unknown kind.
func New(be compute.Backend, c config.Config, dims []int, kind string, shard *nn.Sharding, trainMean float64, r *rand.Rand) (*nn.Net, nn.TrainConfig, error) {
	tc := nn.TrainConfig{Epochs: c.Epochs, Batch: c.Batch, Patience: c.Patience, LR: c.LR, L2: c.L2, Eager: c.GraphsUsed() == config.GraphsOff}
	tc.EmbeddingOptimizer, _ = c.EmbeddingOptimizerFor(kind, dims)
	if shard != nil {
		tc.EmbeddingOptimizer = nn.SparseAdam
	}
	switch kind {
	case nn.KindMLP:
		mc := MLPConfig(c, dims)
		mc.Shard = shard
		m, err := nn.NewMLP(be, mc, r)
		return m, tc, err
	case config.FinalFM, config.FinalHybrid:
		var m *nn.Net
		var err error
		if kind == config.FinalFM {
			m, err = nn.NewFM(be, nn.FMConfig{Dims: dims, Rank: c.FMRank, Capacity: max(c.Batch, c.EvalBatch)}, r)
		} else {
			m, err = nn.NewHybrid(be, MLPConfig(c, dims), r)
		}
		if err == nil {
			// The global bias starts at the training cells' mean (as an
			// FM's w₀ settles at it), not at 0: Adam moves a bias by about
			// the learning rate per step, so from 0 it would take
			// thousands of steps to reach a rating's scale.
			_, b := m.OutputLayer()
			be.Upload(b, []float32{float32(trainMean)})
		}
		return m, tc, err
	case nn.KindCoSTCo:
		tc.LR, tc.Batch = c.CoSTCoLR, c.CoSTCoBatch
		m, err := nn.NewCoSTCo(be, nn.CoSTCoConfig{Dims: dims, Rank: c.Rank, Channels: c.Channels, Capacity: max(c.CoSTCoBatch, c.EvalBatch), Shard: shard}, r)
		return m, tc, err
	}
	return nil, tc, fmt.Errorf("dain: unknown model %q", kind)
}

// MLPConfig is the configuration of the MLP of cfg over a tensor of dims
// (cfg.Layers nil: nn's default layers).
func MLPConfig(cfg config.Config, dims []int) nn.Config {
	return nn.Config{Dims: dims, Layers: cfg.Layers, Capacity: max(cfg.Batch, cfg.EvalBatch)}
}

// TrainError turns a training error of the model labelled label (of kind
// "mlp" or "costco") into the run's: a divergence names
// the stage and epoch and suggests a remedy.
func TrainError(c config.Config, trainMaxAbs float64, label, kind string, err error) error {
	var div *nn.DivergenceError
	if !errors.As(err, &div) {
		return fmt.Errorf("dain: training %s: %w", label, err)
	}
	lr, flag := c.LR, "-lr"
	if kind == nn.KindCoSTCo {
		lr, flag = c.CoSTCoLR, "-costco-lr"
	}
	return fmt.Errorf("dain: training %s (%s) diverged at epoch %d: %s (train MSE %.6g, validation MSE %.6g); lower the learning rate (%s %g; try %g) or rescale the values%s",
		label, kind, div.Epoch, div.Reason, div.TrainMSE, div.ValMSE, flag, lr, lr/10, ScaleHint(trainMaxAbs))
}

// ScaleHint returns, when the training values are large (trainMaxAbs, the
// largest |value| of the training cells, (above 10⁴ in
// magnitude), a parenthesis naming the largest and the power of ten to
// divide them by; otherwise "".
func ScaleHint(trainMaxAbs float64) string {
	big := trainMaxAbs
	if !(big > 1e4) {
		return ""
	}
	return fmt.Sprintf(" (the largest |value| is %.3g: dividing the values by about %.0e brings them to order 1)", big, math.Pow(10, math.Floor(math.Log10(big))))
}

// Trained is an embedding model trained on a run's training cells (package
// dain's Θ, the value predictor, the final models): its net, its sets of
// this process's training, validation and test cells, the result of its
// training, its test RMSE (the validation RMSE without test cells) and the
// TracIn accumulators that rode on its training.
type Trained struct {
	Net              *nn.Net
	Train, Val, Test *nn.Set
	Res              nn.Result
	RMSE             float64
	Accs             []tracin.Accumulator
}

// Free frees the model, its sets and its TracIn sums.
func (t *Trained) Free() {
	t.Shed()
	t.Net.Free()
}

// Shed frees the model's copies of the split and its TracIn sums, keeping
// the model.
func (t *Trained) Shed() {
	for _, a := range t.Accs {
		a.Free()
	}
	t.Accs = nil
	t.Train.Free()
	t.Val.Free()
	t.Test.Free()
}

// Checkpoint is t as a checkpoint saves and restores it (rundir.Model).
func (t *Trained) Checkpoint() rundir.Model {
	return rundir.Model{Net: t.Net, Result: &t.Res, RMSE: &t.RMSE, Accs: t.Accs}
}
