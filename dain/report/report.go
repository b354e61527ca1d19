// Package report is the JSON report of a dainx run (package dain's
// Report): its fields, filled from the configuration when the run starts
// (New) and from each step as it runs, the epochs of a training, the
// choice of -final-model auto, and the diagnostics of an entity
// importance (diagnostics.go). Its types are also the record of steps 1–4
// that a checkpoint keeps, under their names (gob).
package report

import (
	"math"
	"reflect"
	"strings"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/config"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/nn"
)

// Report is the JSON summary of a run.
type Report struct {
	Input  string `json:"input,omitempty"`
	Dims   []int  `json:"dims"`
	NNZ    int    `json:"nnz"`
	NTrain int    `json:"n_train"`
	NVal   int    `json:"n_val"`
	NTest  int    `json:"n_test"`
	NAug   int    `json:"n_aug"`
	// RMSEBefore is the test RMSE of the MLP Θ on train alone,
	// √mean(e²); RMSEAfter that after retraining on train ∪ aug. With no
	// test set (TestFrac 0, NoTest) they are the validation RMSEs.
	RMSEBefore float64 `json:"rmse_before"`
	RMSEAfter  float64 `json:"rmse_after"`
	// NoTest says the run held out no test cells (TestFrac 0, the
	// production mode): rmse_before and rmse_after are then on the
	// validation cells, which also chose the best epoch.
	NoTest bool `json:"no_test,omitempty"`
	// ValRMSEBefore and ValRMSEAfter are the validation RMSEs of Θ and Θ′
	// at their best epochs.
	ValRMSEBefore  float64 `json:"val_rmse_before"`
	ValRMSEAfter   float64 `json:"val_rmse_after"`
	Improved       bool    `json:"improved"`   // whether the augmentation lowered the RMSE: rmse_after < rmse_before
	BestEpoch      int     `json:"best_epoch"` // K, Θ's best checkpoint
	BestEpochAfter int     `json:"best_epoch_after"`
	Backend        string  `json:"backend"`
	Device         string  `json:"device"`
	Seed           uint64  `json:"seed"`
	Ratio          float64 `json:"ratio"`
	Layers         []int   `json:"layers"`
	Epochs         int     `json:"epochs"`
	Batch          int     `json:"batch"`
	Patience       int     `json:"patience"`
	LR             float64 `json:"lr"`
	TestFrac       float64 `json:"test_frac"`
	ValFrac        float64 `json:"val_frac"`
	Method         string  `json:"method"` // the cell maker (a Methods name)
	// Variant is the -method name when it named one of Variants (e.g.
	// dain-mix-avg, whose cell maker is dain-average with mix 0.5).
	Variant        string `json:"variant,omitempty"`
	Model          string `json:"model"`
	Predictor      string `json:"predictor"`
	Influence      string `json:"influence"`
	InfLayers      string `json:"influence_layers"`
	Entity         string `json:"entity"`
	Draws          int    `json:"sample_draws"`
	RejectObserved int    `json:"sample_rejected_observed"`
	RejectRepeat   int    `json:"sample_rejected_repeated"`
	// EmbeddingOptimizer is the setting (auto, adam or sparse-adam);
	// EmbeddingOptimizers what each model kind the run trains used.
	EmbeddingOptimizer  string            `json:"embedding_optimizer"`
	EmbeddingOptimizers map[string]string `json:"embedding_optimizers"`
	Split               string            `json:"split"` // legacy or keyed (Config.Split)
	// Graphs is Config.Graphs (on or off): whether training replayed its
	// steps as graphs on a backend that records them (CUDA; the others
	// ignore it).
	Graphs string `json:"graphs"`
	// GemmTune is how the CUDA backend chose its GEMM kernels (off, model
	// or time: dainx -gemm-tune); absent on the CPU.
	GemmTune string `json:"gemm_tune,omitempty"`
	// SplitFingerprint identifies which cells the split put in each part
	// (splitPrint): equal for every number of processes of the same run.
	SplitFingerprint string     `json:"split_fingerprint"`
	Seconds          Seconds    `json:"seconds"`
	HistoryBefore    []EpochLog `json:"history_before"`
	HistoryAfter     []EpochLog `json:"history_after"`
	// Dist describes a run on the processes of a job (RunOn on any
	// cluster but cluster.Local, even of one process); nil for Run.
	Dist *spread.Report `json:"dist,omitempty"`
	// Version is dainx's version and commit, set by the program that
	// ran it (dainx augment, libdainx); empty when not set.
	Version string `json:"version,omitempty"`
	// FinalModel is the model Θ′ of step 5 (Config.FinalModel); ThetaRMSE
	// is Θ's test RMSE when the final model is not an MLP (rmse_before is
	// then the final model's on train alone).
	FinalModel string `json:"final_model"`
	// AutoChoice, with -final-model auto or -predictor auto, is what they
	// chose on this split (FinalModel and Predictor then hold the choice).
	AutoChoice *AutoChoice `json:"auto_choice,omitempty"`
	// BayesPriors is the prior grouping bayes-fm's final chain used
	// (mode or shared; with auto, the one it chose).
	BayesPriors config.BayesPriorGroups `json:"bayes_priors,omitempty"`
	// BayesClamp is the clamp rule bayes-fm's final chain used (samples
	// or mean; with auto, the one validation chose).
	BayesClamp bayes.ClampRule `json:"bayes_clamp,omitempty"`
	// BayesSweeps is the sweeps bayes-fm's final chain ran (fewer than
	// -bayes-samples when -bayes-stop ended it); 0 without a bayes-fm.
	BayesSweeps int `json:"bayes_sweeps,omitempty"`
	// AugWeight says how much the new cells counted in the fit of the
	// final model (Config.AugWeight with auto resolved): "weight 1" (as
	// observations), "weight 0.1", "learned" (bayes-fm), prefixed "auto: "
	// when -aug-weight was auto; empty without new cells, and for an
	// Adam-trained final model (mlp, fm, hybrid) that counted them as
	// observations.
	AugWeight string `json:"aug_weight,omitempty"`
	// Preset is the -preset the settings came from (set by the program
	// that parsed them; empty when none).
	Preset    string  `json:"preset,omitempty"`
	ThetaRMSE float64 `json:"theta_rmse,omitempty"`

	// InfluenceEvery and InfluenceValSample are in-run's k and validation
	// sample size (Config's, resolved), with -influence in-run only.
	InfluenceEvery     int `json:"influence_every,omitempty"`
	InfluenceValSample int `json:"influence_val_sample,omitempty"`

	// Values is where the new cells' values came from (Config.Values):
	// predictor (each method's own) or oracle (the tensor's generator plus
	// its noise).
	Values string `json:"values,omitempty"`
	// Diagnostics compare, per mode, the entity importance the new cells
	// were drawn from with the entities' training-cell counts
	// (Experiment.ImportanceDiagnostics); absent for a method that draws
	// from none (and for a run resumed from a checkpoint written before
	// them).
	Diagnostics []ModeDiagnostics `json:"diagnostics,omitempty"`
	// Outputs names every file and directory the command wrote, as the
	// user gave them, the report's own file included (set by the program
	// that writes them, e.g. cmd/dainx; empty when none).
	Outputs []string `json:"outputs,omitempty"`
}

// Seconds holds the wall time of each step.
type Seconds struct {
	Train     float64 `json:"train"`     // step 1, training Θ (without the TracIn passes)
	Influence float64 `json:"influence"` // step 2, TracIn passes at every checkpoint
	Entity    float64 `json:"entity"`    // step 3, aggregation and alias tables
	Sample    float64 `json:"sample"`    // step 4, drawing new cells
	Predict   float64 `json:"predict"`   // step 4, predicting their values
	Retrain   float64 `json:"retrain"`   // step 5, training on train ∪ augmentation
	Total     float64 `json:"total"`     // the whole run, split included
}

// EpochLog is one epoch of a training run in the report.
type EpochLog struct {
	Epoch    int     `json:"epoch"`
	TrainMSE float64 `json:"train_mse"`
	ValMSE   float64 `json:"val_mse"`
	Seconds  float64 `json:"seconds"`
}

// AutoChoice records what -final-model auto (or -predictor auto) chose on
// a split: the candidates' validation RMSE trained on the training cells
// alone, and the final model and value predictor that follow.
type AutoChoice struct {
	// Candidates maps each candidate final model to its validation RMSE.
	Candidates map[string]float64 `json:"candidates"`
	// FinalModel is the candidate of lowest validation RMSE; Predictor
	// the value predictor that goes with it (config.AutoPredictor).
	FinalModel string `json:"final_model"`
	Predictor  string `json:"predictor"`
}

// New returns the report of a run of c on backend be over a tensor of the
// given dims and nnz cells, split into counts (train, validation, test)
// with the split's fingerprint (Report.SplitFingerprint), before anything
// is trained: the run's shape
// and every setting the report records, resolved (auto and "" made the
// effective values). It is the one place where a setting is copied from
// Config to Report, for Run and RunOn alike. The automatic embedding
// optimisers are said through logf.
func New(c *config.Config, be compute.Backend, dims []int, nnz int, counts [3]int, fingerprint string, logf func(string, ...any)) Report {
	rep := Report{
		Dims: append([]int(nil), dims...), NNZ: nnz, Backend: be.Name(), Device: be.Device(),
		NTrain: counts[0], NVal: counts[1], NTest: counts[2],
	}
	reportSettings(c, &rep)
	if c.Influence == "in-run" {
		rep.InfluenceEvery, rep.InfluenceValSample = c.InfluenceEveryUsed(), min(c.InfluenceValSampleUsed(), rep.NVal)
	}
	if t, ok := be.(interface{ GemmTune() string }); ok {
		rep.GemmTune = t.GemmTune()
	}
	rep.EmbeddingOptimizer, rep.EmbeddingOptimizers = c.EmbeddingOptimizerSetting(), c.EmbeddingOptimizers(dims, logf)
	rep.SplitFingerprint = fingerprint
	rep.NoTest = rep.NTest == 0
	return rep
}

// reportSettings sets each field of rep that a setting names
// (Setting.Report, the field's JSON key) to c's value of the setting, its
// Unset in the stead of the zero value.
func reportSettings(c *config.Config, rep *Report) {
	r := reflect.ValueOf(rep).Elem()
	for _, s := range config.Settings() {
		if s.Report == "" {
			continue
		}
		f := r.FieldByIndex(reportField(s.Report))
		f.Set(reflect.ValueOf(s.Resolved(*c)).Convert(f.Type()))
	}
}

// reportField returns the index of Report's field of JSON key key.
func reportField(key string) []int {
	t := reflect.TypeFor[Report]()
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == key {
			return t.Field(i).Index
		}
	}
	panic("dain: Settings names no Report field of key " + key)
}

// History returns the epochs of training result r as the report lists
// them (Report.HistoryBefore, HistoryAfter), seconds of wall time each.
func History(r nn.Result) []EpochLog {
	out := make([]EpochLog, len(r.Epochs))
	for i, e := range r.Epochs {
		out[i] = EpochLog{Epoch: e.N, TrainMSE: e.TrainMSE, ValMSE: e.ValMSE, Seconds: e.Seconds}
	}
	return out
}

// BestValRMSE is the validation RMSE of the best epoch in h.
func BestValRMSE(h []EpochLog, best int) float64 {
	for _, ep := range h {
		if ep.Epoch == best {
			return math.Sqrt(ep.ValMSE)
		}
	}
	return math.NaN()
}

// Shared is the wall time in seconds of the shared work a configuration
// uses (package dain's Experiment.SharedSeconds), each part measured once
// however many runs share it.
type Shared struct {
	Train     float64 // training Θ, without the TracIn passes
	Influence float64 // the cell-importance passes this configuration uses
	Entity    float64 // entity importance and alias tables (or neighbours)
	Predictor float64 // training the value predictor Θ_p when it is not Θ
}

// Total returns the sum of the parts.
func (s Shared) Total() float64 { return s.Train + s.Influence + s.Entity + s.Predictor }
