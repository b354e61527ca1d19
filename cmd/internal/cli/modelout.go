package cli

import (
	"errors"
	"strings"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/internal/outtx"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/nn"
)

// SaveModels sets k's Keep.Model, Keep.Bayes and Keep.Ensemble to the
// savers of -model-out: Θ′ as DIR/model.{safetensors,json} (a net, or a
// bayes-fm's posterior samples; an ensemble as DIR/model.json with each
// member as DIR/model.KIND.*), Θ as theta.*, the predictor as predictor.*
// (package model), with the run's settings, the index base of its cells
// and the program's version in the metadata. DIR is the transaction's
// staging directory of -model-out (dir.Path), which the transaction
// moves into place when the run's outputs commit.
func SaveModels(k *dain.Keep, a *Augment, dir *outtx.Dir, base int, version string) {
	k.Model = ModelSaver(a, dir, base, version)
	k.Bayes = func(role string, m *bayes.Model) error {
		return saveIn(dir, func(path string) error {
			c := a.Config
			meta := model.Meta{Version: version, Role: role, IndexBase: base, Training: trainingMeta(a)}
			meta.Training["bayes-samples"], meta.Training["bayes-burnin"], meta.Training["bayes-rank"] = c.BayesSamples, c.BayesBurnIn, c.BayesRank
			meta.Training["bayes-priors"], meta.Training["aug-weight"], meta.Training["final-model"] = c.BayesPriors, c.AugWeight.String(), c.FinalModel
			return model.SaveBayes(path, roleName(role), m, meta)
		})
	}
	k.Ensemble = func(role string, kinds []string, weights []float64, lo, hi float64) error {
		return saveIn(dir, func(path string) error {
			meta := model.Meta{Version: version, Role: role, IndexBase: base, Training: trainingMeta(a)}
			meta.Training["final-model"], meta.Training["aug-weight"] = a.Config.FinalModel, a.Config.AugWeight.String()
			return model.SaveEnsemble(path, roleName(role), kinds, weights, lo, hi, meta)
		})
	}
}

// ModelSaver returns the dain.Keep.Model function of -model-out (the nets
// of SaveModels).
func ModelSaver(a *Augment, dir *outtx.Dir, base int, version string) func(role string, net *nn.Net) error {
	return func(role string, net *nn.Net) error {
		return saveIn(dir, func(path string) error {
			c := a.Config
			meta := model.Meta{Version: version, Role: role, IndexBase: base, Training: trainingMeta(a)}
			if net.Kind() == nn.KindMLP {
				meta.Layers = c.Layers
				if meta.Layers == nil {
					meta.Layers = nn.DefaultLayers(net.Order())
				}
			} else {
				meta.Rank, meta.Channels = c.Rank, c.Channels
				meta.Training["costco-lr"], meta.Training["costco-batch"] = c.CoSTCoLR, c.CoSTCoBatch
			}
			return model.Save(path, roleName(role), net, meta)
		})
	}
}

// roleName is the file name of a saved model of role: an ensemble's
// member (role "theta-prime.KIND") is model.KIND (model.MemberName).
func roleName(role string) string {
	if kind, ok := strings.CutPrefix(role, "theta-prime."); ok {
		return model.MemberName(model.DefaultName, kind)
	}
	return map[string]string{"theta-prime": model.DefaultName, "theta": "theta", "predictor": "predictor"}[role]
}

// trainingMeta is the run's settings a saved model's metadata records.
func trainingMeta(a *Augment) map[string]any {
	c := a.Config
	return map[string]any{
		"seed": c.Seed, "epochs": c.Epochs, "batch": c.Batch, "lr": c.LR, "patience": c.Patience, "ratio": c.Ratio,
		"method": a.Method, "embedding-optimizer": c.EmbeddingOptimizer, "test-frac": c.TestFrac, "val-frac": c.ValFrac,
	}
}

// saveIn runs save on the staging directory of dir, naming the user's
// directory rather than the staging one in its errors.
func saveIn(dir *outtx.Dir, save func(path string) error) error {
	path, err := dir.Path()
	if err != nil {
		return err
	}
	if err := save(path); err != nil {
		return errors.New(strings.ReplaceAll(err.Error(), path, dir.UserPath()))
	}
	return nil
}
