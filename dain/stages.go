package dain

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/cellmath"
	"github.com/dainx/dainx/dain/config"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/dain/streams"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tracin"
)

// This file builds DAIN's ablated steps: the stage each variant of a step
// names (package config's registry, choices.go, is the one place that
// lists the variants and the named methods, by name; Config.Validate, the
// command line's help and `dainx eval`'s method list are generated from
// it). docs/design.md ("Adding an ablation") shows how to extend them.

// Methods are config.Methods with the stage each builds.
var Methods = withBuild(config.Methods, map[string]func(Config) Pipeline{
	"dain": func(c Config) Pipeline {
		return Pipeline{Cells: ImportanceCells{Entity: entityOf(c)}, Values: &Predictor{Model: Embedding{c.Predictor}}}
	},
	"duplication": func(c Config) Pipeline {
		return Pipeline{Cells: Duplicate{}}
	},
	"entity-replacement": func(c Config) Pipeline {
		return Pipeline{Cells: ReplaceEntity{Model: Embedding{c.Model}}}
	},
	"random": func(c Config) Pipeline {
		return Pipeline{Cells: UniformCells{}, Values: &Predictor{Model: Embedding{c.Predictor}}}
	},
	"degree": func(c Config) Pipeline {
		return Pipeline{Cells: ImportanceCells{Entity: withTemperature(c, FrequencyEntity{})}, Values: &Predictor{Model: Embedding{c.Predictor}}}
	},
	"no-aug-steps": func(c Config) Pipeline {
		return Pipeline{Cells: NoCells{}, MatchSteps: true}
	},
	"near-cells": func(c Config) Pipeline {
		return Pipeline{Cells: NearCells{Entity: entityOf(c)}, Values: &Predictor{Model: Embedding{c.Predictor}}}
	},
	"dain-average": func(c Config) Pipeline {
		return Pipeline{Cells: AverageValues{Cells: ImportanceCells{Entity: entityOf(c)}, A: Embedding{nn.KindCoSTCo}, B: Embedding{nn.KindMLP}}}
	},
	"random-average": func(c Config) Pipeline {
		return Pipeline{Cells: AverageValues{Cells: UniformCells{}, A: Embedding{nn.KindCoSTCo}, B: Embedding{nn.KindMLP}}}
	},
	"dain-agree": func(c Config) Pipeline {
		return Pipeline{Cells: AgreeCells{Cells: ImportanceCells{Entity: entityOf(c)}, A: Embedding{nn.KindCoSTCo}, B: Embedding{nn.KindMLP}}}
	},
})

// Influences are config.Influences with the stage each builds.
var Influences = withBuild(config.Influences, map[string]func(Config) CellImportance{
	"tracin": func(c Config) CellImportance {
		return TracIn{Model: Embedding{c.Model}, Layers: string(c.InfluenceLayers)}
	},
	"representer": func(c Config) CellImportance {
		return Representer{Model: Embedding{c.Model}}
	},
	"tracin-adam": func(c Config) CellImportance {
		return TracIn{Model: Embedding{c.Model}, Layers: string(c.InfluenceLayers), Estimator: EstimatorAdam}
	},
	InfluenceUncertainty: func(c Config) CellImportance {
		return Uncertainty{Model: Embedding{c.Model}}
	},
	InfluenceUncertaintyTracIn: func(c Config) CellImportance {
		return Uncertainty{Model: Embedding{c.Model}, Influence: TracIn{Model: Embedding{c.Model}, Layers: string(c.InfluenceLayers)}}
	},
	"in-run": func(c Config) CellImportance {
		return TracIn{Model: Embedding{c.Model}, Layers: string(c.InfluenceLayers), Estimator: EstimatorInRun, Every: c.InfluenceEveryUsed(), ValSample: c.InfluenceValSampleUsed()}
	},
})

// Entities are config.Entities with the stage each builds.
var Entities = withBuild(config.Entities, map[string]func(Config, CellImportance) EntityImportance{
	"sum": func(c Config, s CellImportance) EntityImportance {
		return SumEntity{Cells: s}
	},
	"cp1": func(c Config, s CellImportance) EntityImportance {
		return CP1Entity{Cells: s, Lambda: c.CPLambda, Sweeps: c.CPSweeps}
	},
	"max": func(c Config, s CellImportance) EntityImportance {
		return MaxEntity{Cells: s}
	},
	"mean": func(c Config, s CellImportance) EntityImportance {
		return MeanEntity{Cells: s}
	},
})

// Signs are config.Signs with the stage each builds.
var Signs = withBuild(config.Signs, map[string]func(CellImportance) CellImportance{
	"abs": func(s CellImportance) CellImportance { return s },
	"positive": func(s CellImportance) CellImportance {
		return Signed{Cells: s}
	},
})

// withBuild returns names (a registry of package config, in its order)
// with each one's stage builder from build. It panics on a name without a
// builder or a builder without a name (a programming error, at
// initialisation).
func withBuild[B any](names []config.Choice[struct{}], build map[string]B) []Choice[B] {
	out := make([]Choice[B], len(names))
	for i, c := range names {
		b, ok := build[c.Name]
		if !ok {
			panic("dain: no stage builder for " + c.Name)
		}
		out[i] = Choice[B]{Name: c.Name, Doc: c.Doc, Build: b}
	}
	if len(build) != len(names) {
		panic(fmt.Sprintf("dain: %d stage builders for %d names", len(build), len(names)))
	}
	return out
}

// Pipeline is a method as a composition of stages: the cells it makes
// (step 4, with steps 1–3 behind it) and the predictor of their values.
type Pipeline struct {
	Cells  CellMaker
	Values *Predictor // nil when Cells keeps the training cells' values
	// MatchSteps: the retraining on train alone runs the optimiser steps of
	// train ∪ N_aug cells (Experiment.Retrain).
	MatchSteps bool
}

// PipelineOf returns the composition of stages c names. It panics if c
// does not pass Validate.
func PipelineOf(c Config) Pipeline {
	build, err := config.Lookup("method", string(c.Method), Methods)
	if err != nil {
		panic("dain: " + err.Error())
	}
	return build(c)
}

// entityOf returns the entity importance c names, its cell importance
// signed and tempered as c says.
func entityOf(c Config) EntityImportance {
	inf, err := config.Lookup("influence", string(c.Influence), Influences)
	if err != nil {
		panic("dain: " + err.Error())
	}
	ent, err := config.Lookup("entity importance", string(c.Entity), Entities)
	if err != nil {
		panic("dain: " + err.Error())
	}
	sign, err := config.Lookup("sign", string(c.SignUsed()), Signs)
	if err != nil {
		panic("dain: " + err.Error())
	}
	return withTemperature(c, ent(c, sign(inf(c))))
}

// A stage is one step of Algorithm 1 in one variant. Stages are comparable
// values holding their own settings, and a stage's value is its cache
// identity: within an Experiment, equal stages are computed once and their
// result, buffers and wall time kept. deps lists the stages it uses.
type stage interface {
	deps() []stage
}

// walk calls f on s and every stage it depends on, each once.
func walk(s stage, seen map[stage]bool, f func(stage)) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	f(s)
	for _, d := range s.deps() {
		walk(d, seen, f)
	}
}

// Embedding is step 1: the embedding model Θ of one kind (a Models name),
// trained on the training cells with early stopping; the TracIn passes the
// experiment's methods need ride on its training.
type Embedding struct{ Kind string }

func (Embedding) deps() []stage { return nil }

// CellImportance is step 2: a score per training cell (in the order of the
// training set), computed from a trained embedding model.
type CellImportance interface {
	stage
	// scores returns the scores and the trained model they rank cells of.
	scores(ctx context.Context, e *Experiment) (compute.F32, *trained, error)
}

// TracIn is TracIn-CP cell importance (eq. 5) over Layers ("last" or
// "all") of Model, accumulated at every checkpoint of its training.
type TracIn struct {
	Model  Embedding
	Layers string
	// Estimator is EstimatorTracIn (""), EstimatorAdam or EstimatorInRun
	// (influence.go); Every and ValSample are in-run's k and validation
	// sample size (0 for the others).
	Estimator        string
	Every, ValSample int
}

func (s TracIn) deps() []stage { return []stage{s.Model} }

func (s TracIn) scores(ctx context.Context, e *Experiment) (compute.F32, *trained, error) {
	if _, trainedAlready := e.models[s.Model]; !trainedAlready && !slices.Contains(e.plan[s.Model], s) {
		e.plan[s.Model] = append(e.plan[s.Model], s) // ride on Θ's first training
	}
	t, err := e.model(ctx, s.Model)
	if err != nil {
		return nil, nil, err
	}
	if d := e.cellScores[s]; d != nil {
		return d.Val, t, nil
	}
	// Not planned when the experiment began: train Θ again (the same
	// seeds give the same model) with this accumulator.
	t, _, err = s.Model.train(ctx, e, []TracIn{s})
	if err != nil {
		return nil, nil, err
	}
	e.retrained = append(e.retrained, t)
	return e.cellScores[s].Val, t, nil
}

// Representer is representer-point cell importance (the paper's §5.4
// ablation) of the trained Model.
type Representer struct{ Model Embedding }

func (s Representer) deps() []stage { return []stage{s.Model} }

func (s Representer) scores(ctx context.Context, e *Experiment) (compute.F32, *trained, error) {
	t, err := e.model(ctx, s.Model)
	if err != nil {
		return nil, nil, err
	}
	v, err := e.cellScores.Get(s, func() (compute.F32, float64, error) {
		t0 := time.Now()
		v, err := tracin.RepresenterSummed(t.Net, t.Train, t.Val, e.sp.SummerF32())
		if err != nil {
			return nil, 0, fmt.Errorf("dain: %w", err)
		}
		e.owned = append(e.owned, v)
		return v, time.Since(t0).Seconds(), nil
	})
	return v, t, err
}

// EntityImportance is step 3: per-mode entity weights from cell importance.
type EntityImportance interface {
	stage
	cells() CellImportance
	// aggregate returns one weight per entity of every mode from the cell
	// scores s of t's training cells.
	aggregate(e *Experiment, s compute.F32, t *trained) ([][]float64, error)
}

// SumEntity is eq. 6: the sum of |α_z| over the training cells of each
// entity, normalised per mode.
type SumEntity struct{ Cells CellImportance }

func (s SumEntity) deps() []stage         { return []stage{s.Cells} }
func (s SumEntity) cells() CellImportance { return s.Cells }
func (s SumEntity) aggregate(e *Experiment, v compute.F32, t *trained) ([][]float64, error) {
	return tracin.EntityImportanceSummed(e.be, v, t.Train.Rows, e.x.Dims, e.sp.SummerF64())
}

// CP1Entity is eq. 7: the factors of a rank-1 CP decomposition of the cell
// importance tensor, with ridge Lambda and Sweeps ALS sweeps.
type CP1Entity struct {
	Cells  CellImportance
	Lambda float64
	Sweeps int
}

func (s CP1Entity) deps() []stage         { return []stage{s.Cells} }
func (s CP1Entity) cells() CellImportance { return s.Cells }
func (s CP1Entity) aggregate(e *Experiment, v compute.F32, t *trained) ([][]float64, error) {
	return tracin.EntityImportanceCP1Summed(e.be, v, t.Train.Rows, e.x.Dims, s.Lambda, s.Sweeps, e.sp.SummerF64())
}

// MaxEntity is entity importance by the largest |α_z| over the training
// cells of each entity instead of their sum (eq. 6), normalised per mode.
type MaxEntity struct{ Cells CellImportance }

func (s MaxEntity) deps() []stage         { return []stage{s.Cells} }
func (s MaxEntity) cells() CellImportance { return s.Cells }
func (s MaxEntity) aggregate(e *Experiment, v compute.F32, t *trained) ([][]float64, error) {
	alpha := make([]float32, v.Len())
	if err := e.be.Download(alpha, v); err != nil {
		return nil, err
	}
	return cellmath.MaxImportance(e.sp.Cl, e.x.Dims, e.Train, alpha)
}

// CellMaker is step 4's choice of new cells: n cells never observed nor
// repeated (duplication excepted), with values when it keeps training
// values, counting its draws in st.
type CellMaker interface {
	stage
	cells(ctx context.Context, e *Experiment, n int, st *AugStats) (*tensor.COO, error)
}

// ImportanceCells draws each index from Entity's per-mode alias tables
// (Algorithm 1, lines 6–15).
type ImportanceCells struct{ Entity EntityImportance }

func (s ImportanceCells) deps() []stage { return []stage{s.Entity} }

func (s ImportanceCells) cells(ctx context.Context, e *Experiment, n int, st *AugStats) (*tensor.COO, error) {
	tables, err := e.tables(ctx, s.Entity)
	if err != nil {
		return nil, err
	}
	return e.sample(ctx, tables, streams.New(e.cfg.Seed, streams.Sample).Uint64(), n, st)
}

// UniformCells draws every index uniformly (the Random baselines).
type UniformCells struct{}

func (UniformCells) deps() []stage { return nil }

func (UniformCells) cells(ctx context.Context, e *Experiment, n int, st *AugStats) (*tensor.COO, error) {
	var tables []*sampling.Alias
	for _, d := range e.x.Dims {
		w := make([]float64, d)
		for i := range w {
			w[i] = 1
		}
		a, err := sampling.NewAlias(w)
		if err != nil {
			return nil, fmt.Errorf("dain: %w", err)
		}
		tables = append(tables, a)
	}
	return e.sample(ctx, tables, streams.New(e.cfg.Seed, streams.Random).Uint64(), n, st)
}

// Duplicate copies distinct random training cells with their values,
// cycling when n exceeds |train|. Spread over processes, each process
// copies its own training cells: its number of the n draws comes from
// spread.DistinctShares (every process alike), then it draws that many from a
// permutation of its cells as one process does from all of them (process 0
// with one process's stream, so that one process of a cluster of one makes
// one process's cells). The new cells are then a uniformly random set as
// one process's are, but not the same cells; memory is O(cells/P).
type Duplicate struct{}

func (Duplicate) deps() []stage { return nil }

func (Duplicate) cells(ctx context.Context, e *Experiment, n int, st *AugStats) (*tensor.COO, error) {
	t0 := time.Now()
	cl := e.sp.Cl
	shares := spread.DistinctShares(streams.New(e.cfg.Seed, streams.DuplicateShares), n, spread.Counts(cl, e.Train.NNZ()))
	rank := cl.Rank()
	rows := make([]int, shares[rank])
	if len(rows) > 0 {
		perm := streams.New(e.cfg.Seed, streams.Rank(streams.Duplicate, rank)).Perm(e.Train.NNZ())
		for i := range rows {
			rows[i] = perm[i%len(perm)]
		}
	}
	aug := e.Train.Subset(rows)
	e.augFirst = spread.Sum(shares[:rank])
	st.Sample = time.Since(t0).Seconds()
	return aug, nil
}

// ReplaceEntity is entity replacement: a random training cell whose index
// in a random mode is replaced by one of that entity's 10 nearest
// neighbours in Model's embedding table, keeping the value.
type ReplaceEntity struct{ Model Embedding }

func (s ReplaceEntity) deps() []stage { return []stage{Neighbours(s)} }

func (s ReplaceEntity) cells(ctx context.Context, e *Experiment, n int, st *AugStats) (*tensor.COO, error) {
	nbr, err := e.neighbours(ctx, Neighbours(s))
	if err != nil {
		return nil, err
	}
	return e.replace(ctx, nbr, n, st)
}

// Neighbours is the 10 nearest entities of every entity of the training
// cells in Model's embedding table (part of step 3 for entity replacement).
type Neighbours struct{ Model Embedding }

func (s Neighbours) deps() []stage { return []stage{s.Model} }

// Predictor is step 4's value predictor Θ_p: the trained Model of that
// kind (for "mlp", Θ itself).
type Predictor struct{ Model Embedding }

func (s Predictor) deps() []stage { return []stage{s.Model} }
