// Package dain runs DAIN end to end (Oh, Kim, Rossi, Kumar, CIKM 2021,
// Algorithm 1, with the details of SPEC.md):
//
//  0. split the observed cells into train, validation and test;
//  1. train the MLP Θ on train with early stopping on validation;
//  2. score every training cell by TracIn-CP against the validation loss
//     (online, at every epoch checkpoint up to the best);
//  3. aggregate cell importance into per-mode entity importance;
//  4. draw N_aug = ratio·|train| new cells from per-mode alias tables,
//     rejecting observed and repeated cells, and predict their values;
//  5. retrain a fresh model on train ∪ augmentation and report the test
//     RMSE before and after.
//
// Run takes the backend as an argument; nothing here is global.
package dain

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/report"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// Run executes DAIN, or the baseline c.Method names, on the observed cells
// of t with backend be: split, train Θ with TracIn, entity importance,
// N_aug = ⌊Ratio·|train|⌋ new cells with predicted values, and the test RMSE
// of a fresh MLP trained on train ∪ augmentation. rmse_before is the test
// RMSE of the MLP trained on train alone (Θ itself when Model is mlp). It
// returns ctx's error when cancelled, an error for a configuration that
// cannot work with t, and the backend's error if the device failed.
func Run(ctx context.Context, t *tensor.COO, cfg Config, be compute.Backend) (*Result, error) {
	return RunOn(ctx, cluster.Local{}, &tensor.Part{Cells: t, NNZ: t.NNZ()}, cfg, be)
}

// RunCheckpointed is Run saving its state in ck.Dir after every epoch
// of every training stage, and with ck.Resume going on from the state
// saved there (see Checkpoint). On the CPU backend a run interrupted at any
// point (even by SIGKILL) and resumed gives the result of a run never
// interrupted, wall times aside; the wall times of a resumed run count the
// epochs it saved and those it ran. Besides Run's errors, it returns an
// error if ck.Dir holds a checkpoint and ck.Resume is not set
// (ErrCheckpointExists), or if the checkpoint there was made with another
// configuration or input, naming the first difference.
func RunCheckpointed(ctx context.Context, t *tensor.COO, cfg Config, be compute.Backend, ck Checkpoint) (*Result, error) {
	return RunOnCheckpointed(ctx, cluster.Local{}, &tensor.Part{Cells: t, NNZ: t.NNZ()}, cfg, be, ck)
}

// RunOn is Run on the processes of cl (spread.go), each calling it with its
// part of the tensor (a tensor.Part) and the same configuration on its own backend; Run
// is RunOn on cluster.Local, and every setting and Config.Keep work on
// both. Every process returns the same report (with Report.Dist, the
// per-rank times, unless cl is cluster.Local), or the same error, and its share of
// the augmented cells: of Run's N_aug new cells (Report.NAug), Result.Aug
// holds cells Rank·N_aug/Size to (Rank+1)·N_aug/Size − 1 with their
// values, so the processes' shares in rank order are the whole (written
// together by tensor.WriteFileParallel). On one process the cells, values
// and RMSEs are Run's, bit for bit; on several, the split, the
// initialisations, the shuffles and the sampling's draws are those of Run
// with the same seed and only the order in which gradients and importances
// are summed differs. Every method and setting runs on any number of
// processes; with sharded tables (Config.ShardTables) those that need the
// whole table are refused (config.CheckSpreadOn). On more than one process
// Config.Keep's Split and Scores are refused (each process holds its own
// share of them), and Model with a sharded table; the models (replicated)
// are handed to Keep.Model and Keep.Bayes on rank 0 only, and every
// process returns Result.Importance. Progress goes to
// cfg.Progress (give it to one process). Like Run, RunOn keeps the split
// only: once its parts are made it replaces sh.Cells by a tensor of the
// same dims without cells, so that the part's cells can be freed (the
// caller must not need them afterwards).
func RunOn(ctx context.Context, cl cluster.Cluster, sh *tensor.Part, cfg Config, be compute.Backend) (*Result, error) {
	return run(ctx, cl, sh, cfg, be, nil)
}

// RunOnCheckpointed is RunOn made restartable as RunCheckpointed makes
// Run: after every epoch of every training stage each process saves its
// state in a directory of its own under ck.Dir (rank-R-of-P), rank 0
// writes the manifest, and an epoch counts as saved once every process has
// saved it, so a run killed at any moment on any process continues, with
// ck.Resume and as many processes, from the last epoch every process
// saved, to the uninterrupted run's result (bit for bit on the CPU).
// On cluster.Local it is RunCheckpointed, whose checkpoint (one process's
// files at the top of ck.Dir) a job does not resume, nor the reverse.
// ck.Dir must be one directory seen by every process (a shared file
// system across nodes). It needs the keyed split.
func RunOnCheckpointed(ctx context.Context, cl cluster.Cluster, sh *tensor.Part, cfg Config, be compute.Backend, ck Checkpoint) (*Result, error) {
	return run(ctx, cl, sh, cfg, be, &ck)
}

// run is DAIN on the processes of cl (cluster.Local for Run), this one
// holding sh, checkpointed in ck when not nil.
func run(ctx context.Context, cl cluster.Cluster, sh *tensor.Part, cfg Config, be compute.Backend, ck *Checkpoint) (*Result, error) {
	start := time.Now()
	e, rep, err := begin(cl, sh, cfg, be, ck, start)
	if e != nil {
		defer e.Close()
		if e.ck != nil {
			defer e.ck.Close() // the checkpoint directory's lock
		}
	}
	if err != nil {
		return nil, err
	}
	cfg = e.cfg
	out := &Result{}
	if cfg.Keep.Split {
		out.Split = &Split{Train: e.Train, Val: e.Val, Test: e.Test}
	}
	e.keep = &kept{want: cfg.Keep}
	if cfg.Keep.Scores {
		// The kept scores name their cells; otherwise the training cells
		// are not held here, so that the retraining, whose set holds
		// them, can let the split go.
		e.keep.train = e.Train
	}
	runtime.GC()

	nAug, err := AugCount(cfg.Ratio, rep.NTrain)
	if err != nil {
		return nil, err
	}
	aug, saved, err := e.steps14(ctx, &rep, nAug)
	if err != nil {
		return nil, err
	}
	cfg = e.cfg
	if saved == nil {
		if err := e.keepModels(cfg); err != nil {
			return nil, err
		}
		out.Scores, out.Importance = e.keep.scores, e.keep.importance
	}
	if k := cfg.Keep.Model; k != nil {
		e.onRetrained = func(m *nn.Net) error { return k("theta-prime", m) }
	}
	if k := cfg.Keep.Bayes; k != nil {
		e.onRetrainedBayes = func(m *bayes.Model) error { return k("theta-prime", m) }
	}
	if ks, km, kb := cfg.Keep.Ensemble, cfg.Keep.Model, cfg.Keep.Bayes; ks != nil && km != nil && kb != nil {
		e.ensembleSaver = &ensembleSaver{
			net:   func(kind string, m *nn.Net) error { return km("theta-prime."+kind, m) },
			bayes: func(m *bayes.Model) error { return kb("theta-prime."+FinalBayesFM, m) },
			stack: func(kinds []string, w []float64, lo, hi float64) error { return ks("theta-prime", kinds, w, lo, hi) },
		}
	}
	if err := e.step5(ctx, &rep, aug, nAug); err != nil {
		return nil, err
	}
	if err := e.ck.Done(); err != nil {
		return nil, err
	}
	rep.Seconds.Total = time.Since(start).Seconds()
	if d := e.sp.Dist; d != nil {
		d.Mark(cl) // retrain
		rep.Dist = d.Finish(cl, e.logf)
		for _, kind := range rep.Dist.ShardedTables {
			rep.EmbeddingOptimizers[kind] = nn.SparseAdam
		}
	}
	on := "test"
	if rep.NoTest {
		on = "validation (no test set)"
	}
	e.logf("%s RMSE %.6f → %.6f after %d augmented cells (%.1fs)", on, rep.RMSEBefore, rep.RMSEAfter, rep.NAug, rep.Seconds.Total)
	if !rep.Improved {
		e.logf("the augmentation did not lower the %s RMSE: %.6f after it, %.6f before (%+.2f%%); the augmented cells did not help this model on this split", on, rep.RMSEAfter, rep.RMSEBefore, 100*(rep.RMSEAfter/rep.RMSEBefore-1))
	}
	out.Report, out.Aug = rep, aug
	return out, nil
}

// begin is step 0 of run: the checks, the split of sh into the
// experiment's parts, the checkpoint and the report. From here on the run
// uses the split only: sh's cells are dropped, and collected once the
// caller drops them too (dainx augment does), so that a large tensor is
// not held twice. On error the experiment, if not nil, must be closed.
func begin(cl cluster.Cluster, sh *tensor.Part, cfg Config, be compute.Backend, ck *Checkpoint, start time.Time) (*Experiment, Report, error) {
	if err := cfg.CheckKeepOn(cl.Size(), sh.Cells.Dims); err != nil {
		return nil, Report{}, err
	}
	cfg.Keep = cfg.Keep.OnRank0(cl)
	e, err := newExperimentOn(cl, sh, cfg, be)
	if err != nil {
		return nil, Report{}, err
	}
	e.single = true
	cfg = e.cfg
	job := inJob(cl)
	if ck != nil {
		if job {
			e.ck, err = openDistCheckpoint(ck, cfg, be, cl, sh.Cells, sh.NNZ, e.logf)
		} else {
			e.ck, err = openCheckpoint(ck, e, sh.Cells)
		}
		if err != nil {
			return e, Report{}, err
		}
	}
	dims := e.x.Dims
	sh.Cells = &tensor.COO{Dims: dims} // the parts hold the cells now
	c := e.sp.Counts
	var ranks string
	if job {
		e.sp.Dist = spread.NewRecorderFor(cl, start, cfg, dims, e.logf)
		ranks = fmt.Sprintf("; %d ranks (%s)", cl.Size(), e.sp.Dist.Report.Library)
	}
	e.logf("dainx: %d cells, dims %v: %d train, %d validation, %d test; backend %s (%s)%s", sh.NNZ, dims, c[0], c[1], c[2], be.Name(), be.Device(), ranks)
	rep := report.New(&cfg, be, dims, sh.NNZ, c, e.splitPrint.String(), e.logf)
	if err := checkKeep(cfg); err != nil {
		return e, rep, err
	}
	e.sp.Dist.Mark(cl) // split
	return e, rep, nil
}

// steps14 is steps 1–4 of run (or their record in the checkpoint): Θ,
// rmse_before, the final model's choice and the nAug new cells (this
// process's share), recorded in rep. saved is the checkpoint's record when
// the steps finished before an interruption.
func (e *Experiment) steps14(ctx context.Context, rep *Report, nAug int) (aug *tensor.COO, saved *augRecord, err error) {
	cfg := e.cfg
	saved, aug, err = loadAugmented(e.ck)
	if err != nil {
		return nil, nil, err
	}
	if saved != nil {
		if len(cfg.Keep.Steps14Flags()) > 0 {
			// rundir.Dir.LoadAugmented refuses this first, saying
			// whether the run there finished or was interrupted.
			return nil, nil, fmt.Errorf("dain: -resume: the cell scores, entity importance and models Θ and Θ_p come from steps 1–4, whose result the checkpoint holds without them: resume without -scores-out, -importance-out and -model-out-all, or remove the checkpoint directory and run without -resume to have them")
		}
		// Steps 1–4 finished in an earlier run on the checkpoint.
		rep.RMSEBefore, rep.BestEpoch, rep.HistoryBefore = saved.RMSEBefore, saved.BestEpoch, saved.HistoryBefore
		rep.ValRMSEBefore = report.BestValRMSE(saved.HistoryBefore, saved.BestEpoch)
		st := saved.Stats
		rep.NAug = e.sp.GlobalNNZ(aug)
		if e.sp.Dist != nil {
			// This process's share starts after those of the processes
			// before it (Rank·N_aug/Size for CellsShared's; duplication's
			// vary).
			e.augFirst = spread.CountBefore(e.sp.Cl, len(aug.Idx)/e.x.Order())
			aug.Dims = append([]int(nil), e.x.Dims...)
			if aug.Val == nil {
				aug.Val = []float64{}
			}
		}
		rep.Draws, rep.RejectObserved, rep.RejectRepeat = st.Draws, st.RejectObserved, st.RejectRepeat
		rep.Seconds = saved.Seconds
		rep.Diagnostics = saved.Diagnostics
		e.logf("steps 1–4 taken from the checkpoint: test RMSE %.6f before augmentation, %d new cells", rep.RMSEBefore, rep.NAug)
		e.sp.Dist.Mark(e.sp.Cl) // train
		// auto chooses again as it did: the same split and seeds.
		if cfg, rep.AutoChoice, err = e.Resolve(ctx, cfg); err != nil {
			return nil, nil, err
		}
		e.cfg = cfg
		rep.FinalModel, rep.Predictor = cfg.FinalModelName(), cfg.Predictor
		e.sp.Dist.Mark(e.sp.Cl) // augment
		return aug, saved, nil
	}
	// Steps 1–2: Θ (the downstream MLP on train alone, for rmse_before).
	mlp, err := e.model(ctx, Embedding{nn.KindMLP})
	if err != nil {
		return nil, nil, err
	}
	rep.RMSEBefore, rep.BestEpoch, rep.HistoryBefore = mlp.RMSE, mlp.Res.BestEpoch, report.History(mlp.Res)
	rep.ValRMSEBefore = math.Sqrt(mlp.Res.BestValMSE)
	e.sp.Dist.Mark(e.sp.Cl) // train
	if cfg, rep.AutoChoice, err = e.Resolve(ctx, cfg); err != nil {
		return nil, nil, err
	}
	e.cfg = cfg
	rep.FinalModel, rep.Predictor = cfg.FinalModelName(), cfg.Predictor
	if nAug > 0 {
		e.logf("step 4: %s, %d new cells", cfg.Method, nAug)
	}
	var st AugStats
	if aug, st, err = e.Augment(ctx, cfg, nAug); err != nil {
		return nil, nil, err
	}
	rep.NAug = e.sp.GlobalNNZ(aug)
	rep.Draws, rep.RejectObserved, rep.RejectRepeat = st.Draws, st.RejectObserved, st.RejectRepeat
	rep.Diagnostics = e.ImportanceDiagnostics(cfg, aug)
	sh := e.SharedSeconds(cfg)
	rep.Seconds.Train, rep.Seconds.Influence, rep.Seconds.Entity = sh.Train, sh.Influence, sh.Entity
	if sh.Train == 0 {
		rep.Seconds.Train = e.models.Seconds(Embedding{nn.KindMLP}) // the baselines' rmse_before model
	}
	rep.Seconds.Sample, rep.Seconds.Predict = st.Sample, st.Predict+sh.Predictor
	total := 0 // the record of one process (Run) has NAug alone
	if e.sp.Dist != nil {
		total = nAug
	}
	err = e.ck.SaveAugmented(augRecord{RMSEBefore: rep.RMSEBefore, BestEpoch: rep.BestEpoch, HistoryBefore: rep.HistoryBefore,
		NAug: aug.NNZ(), Total: total, Stats: st, Seconds: rep.Seconds, Dims: aug.Dims, Diagnostics: rep.Diagnostics}, aug)
	if err != nil {
		return nil, nil, err
	}
	e.sp.Dist.Mark(e.sp.Cl) // augment
	return aug, nil, nil
}

// step5 is step 5 of run: the final model on train ∪ aug (and, for a final
// model other than the MLP, on train alone for rmse_before), recorded in
// rep.
func (e *Experiment) step5(ctx context.Context, rep *Report, aug *tensor.COO, nAug int) error {
	cfg := e.cfg
	// theta_rmse is Θ's own when Θ is a final-model kind of its own (fm,
	// hybrid) rather than the MLP trained for rmse_before.
	thetaRMSE := rep.RMSEBefore
	if k := (Embedding{cfg.Model}); (k.Kind == FinalFM || k.Kind == FinalHybrid) && e.models[k] != nil {
		thetaRMSE = e.models[k].Val.RMSE
	}
	// Step 5 needs only the split and the new cells: Θ, its scores and
	// the predictor's copies of the split are freed first.
	e.release()
	if cfg.FinalModelName() != FinalMLP {
		// rmse_before: the final model on train alone, so that improved
		// compares one model with and without the new cells.
		e.logf("step 5: %s on the %d training cells alone", cfg.FinalModelName(), rep.NTrain)
		rmse0, res0, _, err := e.downstreamAt(ctx, &tensor.COO{Dims: append([]int(nil), e.x.Dims...)}, "Θ′ without augmentation", "final-alone")
		if err != nil {
			return err
		}
		rep.ThetaRMSE, rep.RMSEBefore = thetaRMSE, rmse0
		rep.ValRMSEBefore = math.Sqrt(res0.BestValMSE)
	}
	e.logf("step 5: retraining on %d + %d cells", rep.NTrain, rep.NAug)
	e.lastStage = true
	rmse, res, secs, err := e.Retrain(ctx, cfg, aug, nAug, "Θ'")
	if err != nil {
		return err
	}
	rep.RMSEAfter, rep.BestEpochAfter, rep.HistoryAfter = rmse, res.BestEpoch, report.History(res)
	rep.BayesPriors, rep.BayesClamp, rep.BayesSweeps = e.bfm.LastPriors, e.bfm.LastClamp, e.bfm.LastSweeps
	if f := e.applyAuto(e.cfg).FinalModelName(); rep.NAug > 0 && (f == FinalBayesFM || f == FinalEnsemble || e.cfg.AugWeight.Resolve(f) != 1) {
		rep.AugWeight = e.cfg.AugWeight.Applied(f)
		if f == FinalBayesFM && e.bfm.Rejected {
			rep.AugWeight = "auto: none (the new cells raised the validation RMSE; Θ′ is the chain on the training cells alone)"
		}
	}
	rep.ValRMSEAfter = math.Sqrt(res.BestValMSE)
	// No new cell is no augmentation: a lower RMSE then is the
	// retraining's noise.
	rep.Improved = rep.NAug > 0 && rep.RMSEAfter < rep.RMSEBefore
	rep.Seconds.Retrain = secs
	return nil
}
