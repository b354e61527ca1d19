package dain

import (
	"fmt"

	"github.com/dainx/dainx/checkpoint/rundir"
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/tensor"
)

// Checkpoint makes a run restartable (RunCheckpointed). After every epoch
// of every training stage — Θ with its TracIn passes, the value predictor
// (CoSTCo), the retraining — the run saves in Dir what it needs to go on:
// the parameters, Adam's moments and step, the best parameters and epoch
// so far, the shuffling generator's state and cell order, and the TracIn
// running and best sums. A finished model is saved with its TracIn scores,
// and the augmented cells with their values once made. Each file is written
// to a temporary name, synced and renamed, so a run killed at any moment
// leaves whole files only.
//
// With Resume, a run first reads Dir and goes on from the last saved
// epoch of the unfinished stage, skipping the finished ones. On the CPU
// backend the result is bit-identical to that of a run never interrupted
// (wall times aside). Every file records the dainx version, the
// configuration (every setting of Config and the backend) and a
// fingerprint of the input tensor (its cell count, dims and the SHA-256 of
// its indices and values); a run whose configuration or input differs is
// refused, naming the difference.
//
// Files in Dir (names may change between format versions):
//
//	<stage>.train.ckpt  the state of an unfinished training stage after its last epoch
//	<stage>.done.ckpt   a finished model Θ or Θc: parameters, result, TracIn scores
//	augmented.ckpt      the new cells and their values, and what the report needs of the steps before
//
// where <stage> is theta-<model>[.tracin-<layers>…] or retrain.
type Checkpoint = rundir.Checkpoint

// CheckpointPoint is a point of a checkpointed run at which
// Checkpoint.Hook is called (rundir.Point).
type CheckpointPoint = rundir.Point

// The errors of a checkpoint directory, wrapped: ErrCheckpointExists when
// a run without Resume finds a checkpoint in it, ErrCheckpointInUse when
// another process holds its lock, ErrCheckpointKind when another kind of
// run wrote it (one process against an MPI job, or MPI jobs of different
// sizes).
var (
	ErrCheckpointExists = rundir.ErrExists
	ErrCheckpointInUse  = rundir.ErrInUse
	ErrCheckpointKind   = rundir.ErrKind
)

// ErrOtherProcess is the error of the processes of a run spread over
// processes that did not fail when another did (cluster.ErrOtherProcess).
var ErrOtherProcess = cluster.ErrOtherProcess

// ErrAgreed marks (errors.Is) an error that every process of a run spread
// over processes returned at the same point, so the job may end with
// MPI_Finalize rather than MPI_Abort (cluster.ErrAgreed).
var ErrAgreed = cluster.ErrAgreed

// LockCheckpoint takes the lock of the checkpoint directory dir (which must
// exist) for this process, and returns the function that releases it; an
// error (ErrCheckpointInUse) names the process that holds it (rundir.Lock).
func LockCheckpoint(dir string) (release func(), err error) { return rundir.Lock(dir) }

// openCheckpoint prepares ck's directory for experiment e on input x
// (rundir.Open): it creates it, removes temporary files a killed run left,
// and, with Resume, checks that every file there belongs to this
// configuration and input; without Resume it refuses a directory that
// holds a checkpoint.
func openCheckpoint(ck *Checkpoint, e *Experiment, x *tensor.COO) (*rundir.Dir, error) {
	return rundir.Open(ck, e.cfg.CkRun(e.be.Name(), e.be.Device(), e.logf, x.Dims, 0), x)
}

// openDistCheckpoint prepares the checkpoint of this process (rank of
// cl) in ck.Dir for a run of cfg on be over a tensor of nnz cells of which
// shard holds this process's (rundir.OpenDist); it refuses a run whose
// split is not keyed, and a checkpoint made with another number of
// processes. Every process gets an error if any does.
func openDistCheckpoint(ck *Checkpoint, cfg Config, be compute.Backend, cl cluster.Cluster, shard *tensor.COO, nnz int, logf func(string, ...any)) (*rundir.Dist, error) {
	if cfg.SplitUsed() != SplitKeyed {
		return nil, fmt.Errorf("dain: a run over processes is checkpointed with the keyed split only (-split keyed, the default)")
	}
	return rundir.OpenDist(ck, cfg.CkRun(be.Name(), be.Device(), logf, shard.Dims, cl.Size()), cl, shard, nnz)
}

// augRecord is the gob-encoded part of the augmented record: what Run's
// report needs of steps 1–4.
type augRecord struct {
	RMSEBefore    float64
	BestEpoch     int
	HistoryBefore []EpochLog
	NAug          int // the cells held here
	Total         int // over all processes of a run spread over them (0: NAug)
	Stats         AugStats
	Seconds       Seconds // Train, Influence, Entity, Sample and Predict
	Dims          []int
	// Diagnostics are the report's importance diagnostics (none in
	// records written before them).
	Diagnostics []ModeDiagnostics
}

// Counts returns the record's cells, their total and dims
// (rundir.Augmented).
func (r *augRecord) Counts() (n, total int, dims []int) { return r.NAug, r.Total, r.Dims }

// loadAugmented returns the augmented record of ck and its cells (this
// process's share), nil if there is none (rundir.Store.LoadAugmented).
func loadAugmented(ck rundir.Store) (*augRecord, *tensor.COO, error) {
	var r augRecord
	aug, found, err := ck.LoadAugmented(&r)
	if err != nil || !found {
		return nil, nil, err
	}
	return &r, aug, nil
}

// stageName is the checkpoint name of training model kind with passes.
func stageName(kind string, passes []TracIn) string {
	s := "theta-" + kind
	for _, p := range passes {
		s += "." + p.pass().Name()
	}
	return s
}
