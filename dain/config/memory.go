package config

import (
	"fmt"
	"reflect"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/internal/memlimit"
	"github.com/dainx/dainx/nn"
)

// runCellCopies is how many copies of a cell (its COO indices and value)
// a run holds at its peak: the tensor read, its split, the models' sets of
// it (Θ, the value predictor, the retraining's), the observed-cell sets
// and the new cells; an upper estimate.
const runCellCopies = 12

// RunBytes estimates the memory in bytes of one process's part of a run of
// cfg on a tensor of nnz cells with dims spread over shards processes
// (RunOn; 1 for Run): its share of the cells, each held in about
// runCellCopies copies, the per-entity tables (TableBytes) and, when the
// run fits bayes-fm (Config.UsesBayesFM), its parameters, replicated on
// every process: the chain's state, the value predictor's kept samples and
// those a saved bayes-fm Θ′ keeps (Keep.Bayes: in float64, and in float32
// while it is written).
func (cfg Config) RunBytes(nnz int, dims []int, shards int) float64 {
	if cfg.Layers == nil {
		cfg.Layers = nn.DefaultLayers(len(dims))
	}
	cell := float64(4*len(dims) + 8)
	b := runCellCopies*cell*float64(nnz)/float64(max(shards, 1)) + cfg.TableBytes(dims, 1)
	if cfg.UsesBayesFM() {
		k := cfg.BayesConfig().Rank
		params := 1.0
		for _, d := range dims {
			params += float64(d) * float64(k+1)
		}
		b += 8*params*float64(1+cfg.KeptBayes()) + 12*params*float64(cfg.SavedBayes())
	}
	return b + cfg.settingCellBytes(float64(nnz)/float64(max(shards, 1)))
}

// settingCellBytes is what two settings add per cell of this process's
// nnz: bayes-fm's second running average of the validation and test cells
// (-bayes-clamp mean or auto: 8 bytes each) and a weighted loss's weight
// of each training and new cell (-aug-weight other than 1 for a model
// trained by Adam: 4 bytes each, staged beside its value).
func (cfg Config) settingCellBytes(nnz float64) float64 {
	b := 0.0
	if cfg.UsesBayesFM() && cfg.BayesClampUsed() != bayes.ClampSamples {
		b += 8 * nnz * (cfg.TestFrac + (1-cfg.TestFrac)*cfg.ValFrac)
	}
	if f := cfg.FinalModelName(); f != FinalBayesFM && cfg.AugWeight != AugWeightAuto && cfg.AugWeight != 1 {
		b += 4 * nnz * (1 - cfg.TestFrac) * (1 - cfg.ValFrac) * (1 + cfg.Ratio)
	}
	return b
}

// TableBytes estimates the bytes of the per-entity tables an experiment of
// cfg on a tensor of dims holds at once, on one of shards processes over
// which the embedding tables are sharded by row (1: whole; the alias
// tables stay whole): float32 embeddings of width E for Θ and the
// downstream MLP and of width R for CoSTCo, each four times (parameters,
// gradients, Adam's two moments), and an alias table (8 bytes) per
// entity. cfg.Layers must be set (not nil).
func (cfg Config) TableBytes(dims []int, shards int) float64 {
	e := cfg.Layers[0] / len(dims)
	perEntity := float64(4*4*(2*e+cfg.Rank))/float64(shards) + 8
	total := 0.0
	for _, d := range dims {
		total += float64(d) * perEntity
	}
	return total
}

// estimatedCellCopies is how many copies of a cell (its COO indices and
// value) MemoryParts counts: the tensor read and the sets the models train
// on. It is a lower estimate (a 100M-cell run peaks near 2.7 copies), so
// that the check refuses only what cannot fit.
const estimatedCellCopies = 2

// MemoryParts estimates the memory in bytes of this process's part of a
// run of cfg, whose method trains the embedding models of kinds models (a
// kind may repeat; the final model's and auto's are added here), on nnz
// cells (this process's share) of a tensor with dims, with its embedding
// tables sharded over shards processes (1: whole), by what holds it: the
// cells, the new cells, the largest model the run trains (nn.Bytes:
// parameters, gradients, Adam's moments and activations at its batch and
// the evaluation batch; the run trains its models one at a time), the
// alias tables and bayes-fm's kept samples when it fits one. Each part
// names the flags that size it. It is computed in float64 from the
// settings alone and allocates nothing, so that a configuration whose
// product cannot fit (-layers 24,1000000, -rank and -channels of 2²⁰, a
// batch of 2²⁴ cells) is refused before it is built (issue 46). cfg must
// pass Validate.
func (cfg Config) MemoryParts(nnz int, dims []int, shards int, models []string) []memlimit.Part {
	if cfg.Layers == nil {
		cfg.Layers = nn.DefaultLayers(len(dims))
	}
	order := len(dims)
	parts := []memlimit.Part{{What: "the cells", Flags: fmt.Sprintf("%d cells of the input", nnz),
		Bytes: estimatedCellCopies * float64(4*order+8) * float64(nnz)}}
	// The new cells (-ratio × the training cells, over every process's
	// share alike), each with its value and its place in the observed
	// set's check.
	nAug := cfg.Ratio * float64(nnz) * (1 - cfg.TestFrac) * (1 - cfg.ValFrac)
	parts = append(parts, memlimit.Part{What: "the new cells", Flags: fmt.Sprintf("-ratio %v", cfg.Ratio),
		Bytes: estimatedCellCopies * float64(4*order+8) * nAug})
	kinds := map[string]bool{}
	for _, m := range models {
		kinds[m] = true
	}
	if f := cfg.FinalModelName(); f != FinalAuto {
		kinds[f] = true
	}
	if cfg.FinalModelName() == FinalAuto || cfg.UsesEnsemble() {
		for _, k := range cfg.AutoKinds() {
			kinds[k] = true
		}
	}
	capacity := max(cfg.Batch, cfg.EvalBatch)
	var big memlimit.Part
	for kind := range kinds {
		var m memlimit.Part
		switch kind {
		case FinalMLP, FinalHybrid:
			m = memlimit.Part{What: "the " + kind + " model", Flags: fmt.Sprintf("-layers %s, -batch %d", FormatSetting(reflect.ValueOf(cfg.Layers)), cfg.Batch),
				Bytes: nn.Bytes(dims, cfg.Layers[0]/order, nn.MLPLayers(cfg.Layers), capacity, shards, true)}
		case FinalFM:
			m = memlimit.Part{What: "the fm model", Flags: fmt.Sprintf("-fm-rank %d, -batch %d", cfg.FMRank, cfg.Batch),
				Bytes: nn.Bytes(dims, cfg.FMRank+1, nn.FMLayers(order, cfg.FMRank), capacity, 1, true)}
		case nn.KindCoSTCo:
			m = memlimit.Part{What: "the CoSTCo model", Flags: fmt.Sprintf("-rank %d, -channels %d, -costco-batch %d", cfg.Rank, cfg.Channels, cfg.CoSTCoBatch),
				Bytes: nn.Bytes(dims, cfg.Rank, nn.CoSTCoLayers(order, cfg.Rank, cfg.Channels), max(cfg.CoSTCoBatch, cfg.EvalBatch), shards, true)}
		default:
			continue
		}
		if m.Bytes > big.Bytes || (m.Bytes == big.Bytes && m.What < big.What) {
			big = m
		}
	}
	if big.Bytes > 0 {
		parts = append(parts, big)
	}
	alias := 0.0
	for _, d := range dims {
		alias += 8 * float64(d)
	}
	parts = append(parts, memlimit.Part{What: "the alias tables", Flags: fmt.Sprintf("dims %v", dims), Bytes: alias})
	if cfg.UsesBayesFM() {
		k := cfg.BayesConfig().Rank
		params := 1.0
		for _, d := range dims {
			params += float64(d) * float64(k+1)
		}
		parts = append(parts, memlimit.Part{What: "bayes-fm's kept samples", Flags: fmt.Sprintf("-bayes-rank %d", k), Bytes: 8*params*float64(1+cfg.KeptBayes()) + 12*params*float64(cfg.SavedBayes())})
	}
	if b := cfg.settingCellBytes(float64(nnz)); b > 0 {
		parts = append(parts, memlimit.Part{What: "the clamp averages and loss weights of the cells", Flags: fmt.Sprintf("-bayes-clamp %s, -aug-weight %s", cfg.BayesClampUsed(), cfg.AugWeight.String()), Bytes: b})
	}
	return parts
}
