package dain

import (
	"github.com/dainx/dainx/dain/report"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/tensor"
)

// The report of a run is package report's; these are its types as
// package dain has always named them.
type (
	// Report is the JSON summary of a run (report.Report).
	Report = report.Report
	// Seconds holds the wall time of each step, in seconds
	// (report.Seconds).
	Seconds = report.Seconds
	// EpochLog is one epoch of a training run in the report
	// (report.EpochLog).
	EpochLog = report.EpochLog
	// AutoChoice records what -final-model auto (or -predictor auto)
	// chose on a split (report.AutoChoice).
	AutoChoice = report.AutoChoice
	// ModeDiagnostics describe, for one mode, the entity importance that
	// new cells were drawn from against the entities' frequency
	// (report.ModeDiagnostics).
	ModeDiagnostics = report.ModeDiagnostics
	// DistReport describes a run spread over processes in the report
	// (spread.Report).
	DistReport = spread.Report
	// RankSeconds is one rank's time per stage, in seconds, and memory,
	// in MiB (DistReport.PerRank; spread.RankSeconds).
	RankSeconds = spread.RankSeconds
)

// Result is what Run returns: the report and the augmented cells.
type Result struct {
	Report Report
	// Aug holds the N_aug new cells and their predicted values, with the
	// input's Dims.
	Aug *tensor.COO
	// Split, Scores and Importance are filled when Config.Keep asks for
	// them, else nil. Importance[n][i] is entity i of mode n's share of
	// mode n's draws (each mode sums to 1).
	Split      *Split
	Scores     *CellScores
	Importance [][]float64
}

// Split is the train/validation/test partition of a run's observed cells
// (tensor.Split over the input's cell order), each with the input's Dims
// and values.
type Split struct {
	Train, Val, Test *tensor.COO
}

// CellScores are the cell importances of a run's training cells, in the
// order of Split.Train (and Result.Split.Train's cells in Cells).
type CellScores struct {
	// Cells are the training cells, with their values.
	Cells *tensor.COO
	// Alpha[z] is α_z, the importance the entity aggregation used:
	// |S_z| with -sign abs (eq. 5), max(S_z, 0) with -sign positive.
	Alpha []float32
	// S[z] is the signed score S_z: TracIn-CP's Σ_k η ∇ℓ(Θ_k, z)·G_k
	// (positive when a step on z lowers the validation loss), or the
	// representer value with -influence representer.
	S []float32
}
