package config

import (
	"fmt"
)

// The Adam-aware influence estimators of issue 35 (package tracin's
// NewLastLayerAdam, NewAllLayersAdam and InRun) as TracIn passes riding
// on Θ's training: TracIn.Estimator names them.
const (
	// EstimatorTracIn is TracIn-CP (Estimator ""), the paper's.
	EstimatorTracIn = ""
	// EstimatorAdam is TracIn-CP with each checkpoint's Adam
	// preconditioner (-influence tracin-adam).
	EstimatorAdam = "adam"
	// EstimatorInRun is the in-run estimator (-influence in-run).
	EstimatorInRun = "in-run"
)

// Defaults of -influence-every and -influence-val-sample (Config's
// InfluenceEvery and InfluenceValSample; 0 means these): every second
// step, against 1024 validation cells. Measured on MovieLens (-layers
// 48,64,32, batch 1024, 3 epochs, the 2-core CPU VM while another job
// used it): Θ's training with in-run over the output layer took 1.2× its
// time without it at these settings, 1.5× at every step (the per-step
// work is a forward pass over the sample and a few small operations, so
// on the CPU their dispatch weighs as much as their arithmetic); see
// docs/design.md, "Adam-aware influence".
const (
	DefaultInfluenceEvery     = 2
	DefaultInfluenceValSample = 1024
)

// InfluenceEveryUsed returns -influence-every, 0 resolved to its default (the
// table's Unset).
func (c Config) InfluenceEveryUsed() int { return Resolved[int](c, "InfluenceEvery") }

// InfluenceValSampleUsed returns -influence-val-sample, 0 resolved to its
// default (the table's Unset).
func (c Config) InfluenceValSampleUsed() int { return Resolved[int](c, "InfluenceValSample") }

// checkInfluence validates the in-run settings.
func (c Config) checkInfluence() error {
	if c.InfluenceEvery < 0 || c.InfluenceValSample < 0 {
		return fmt.Errorf("influence every %d, validation sample %d: want ≥ 1 (0: the defaults %d and %d)", c.InfluenceEvery, c.InfluenceValSample, DefaultInfluenceEvery, DefaultInfluenceValSample)
	}
	return nil
}

// The -influence values of Uncertainty.
const (
	InfluenceUncertainty       = "uncertainty"
	InfluenceUncertaintyTracIn = "uncertainty-tracin"
)

// UsesUncertainty reports whether c's cell importance needs bayes-fm's
// kept samples (Uncertainty).
func (c Config) UsesUncertainty() bool {
	return c.Influence == InfluenceUncertainty || c.Influence == InfluenceUncertaintyTracIn
}
