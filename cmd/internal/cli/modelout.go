package cli

import (
	"errors"
	"strings"

	"github.com/dainx/dainx/internal/outtx"

	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/nn"
)

// ModelSaver returns the dain.Keep.Model function of -model-out: Θ′ as
// DIR/model.{safetensors,json}, Θ as theta.*, the predictor as
// predictor.* (package model), with the run's settings, the index base of
// its cells and the program's version in the metadata. DIR is the
// transaction's staging directory of -model-out (dir.Path), which the
// transaction moves into place when the run's outputs commit.
func ModelSaver(a *Augment, dir *outtx.Dir, base int, version string) func(role string, net *nn.Net) error {
	return func(role string, net *nn.Net) error {
		path, err := dir.Path()
		if err != nil {
			return err
		}
		c := a.Config
		name := map[string]string{"theta-prime": "model", "theta": "theta", "predictor": "predictor"}[role]
		meta := model.Meta{Version: version, Role: role, IndexBase: base, Training: map[string]any{
			"seed": c.Seed, "epochs": c.Epochs, "batch": c.Batch, "lr": c.LR, "patience": c.Patience, "ratio": c.Ratio,
			"method": a.Method, "embedding-optimizer": c.EmbeddingOptimizer, "test-frac": c.TestFrac, "val-frac": c.ValFrac,
		}}
		if net.Kind() == "mlp" {
			meta.Layers = c.Layers
			if meta.Layers == nil {
				meta.Layers = nn.DefaultLayers(net.Order())
			}
		} else {
			meta.Rank, meta.Channels = c.Rank, c.Channels
			meta.Training["costco-lr"], meta.Training["costco-batch"] = c.CoSTCoLR, c.CoSTCoBatch
		}
		if err := model.Save(path, name, net, meta); err != nil {
			// The user knows the directory by its name, not the staging one's.
			return errors.New(strings.ReplaceAll(err.Error(), path, dir.UserPath()))
		}
		return nil
	}
}
