package dain

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tracin"
)

// stageCheckpoint is what the stages of an Experiment save their state in
// and resume from: the checkpointer of one process (RunCheckpointed), or a
// distCheckpoint, each process's in a directory of its own, the processes
// agreeing on every record (RunOnCheckpointed over several processes).
// Every method does nothing (and finds nothing) on a nil receiver: a run
// without a checkpoint.
type stageCheckpoint interface {
	// loadModel loads stage's finished model into t if saved: its
	// training's seconds and its TracIn passes' seconds.
	loadModel(stage string, t *trained) (seconds float64, tracinSecs []float64, found bool, err error)
	// saveModel records stage's finished model and drops its training
	// state.
	saveModel(stage string, t *trained, seconds float64, tracinSecs []float64) error
	// fit sets tc to resume stage's training from its saved state and to
	// save its state after every epoch; it returns the seconds the stage
	// ran before the interruption.
	fit(tc *nn.TrainConfig, stage, label string, shuffle *rand.PCG, accs []tracin.Accumulator, secs []float64, logf func(string, ...any), since func() float64) (float64, error)
	// at calls the test hook at a point of stage's epoch.
	at(stage string, epoch int, event string) error
	// loadAugmented and saveAugmented load and save the new cells (this
	// process's share) with the record of steps 1–4.
	loadAugmented() (*augRecord, *tensor.COO, error)
	saveAugmented(r augRecord, aug *tensor.COO) error
	// done records that the run finished (its result is whole); close
	// releases the checkpoint directory's lock (cklock.go).
	done() error
	close()
}

var (
	_ stageCheckpoint = (*checkpointer)(nil)
	_ stageCheckpoint = (*distCheckpoint)(nil)
)

// saveModel is checkpointer.writeModel once every process has written its
// record, and then the training state dropped.
func (d *distCheckpoint) saveModel(stage string, t *trained, seconds float64, tracinSecs []float64) error {
	if d == nil {
		return nil
	}
	return d.finish(stage, func() error { return d.c.writeModel(stage, t, seconds, tracinSecs) })
}

// saveAugmented is checkpointer.saveAugmented, agreed by every process.
func (d *distCheckpoint) saveAugmented(r augRecord, aug *tensor.COO) error {
	if d == nil {
		return nil
	}
	return d.agree(d.c.saveAugmented(r, aug))
}

// distCheckpoint is the checkpoint of a run spread over processes
// (RunOnCheckpointed): each process saves its own state (its replica of
// the model being trained, its cells' TracIn sums, its share of the new
// cells) with the one-process checkpointer in a directory of its own under
// Checkpoint.Dir, rank-R-of-P, and rank 0 writes manifest.json naming the
// number of processes. A record counts only once every process has it:
//
//   - an epoch's training state is written to a pending file; once every
//     process has written its own they all replace their record with it,
//     so a process killed at any moment leaves every process with the
//     epoch before or with that epoch, pending or in place, and -resume
//     takes the last epoch every process has;
//   - a finished stage's record (a trained Θ, the new cells) is taken on
//     resume only if every process has it, and the stage's training state
//     is removed only after every process has written it.
type distCheckpoint struct {
	c        *checkpointer
	cl       cluster.Cluster
	rank, np int
	release  func() // rank 0: the checkpoint directory's lock
}

// openDistCheckpoint prepares the checkpoint of this process (rank of
// cl) in ck.Dir for a run of cfg on be over a tensor of nnz cells of which
// shard holds this process's, as openCheckpoint does for one process; it
// refuses a checkpoint made with another number of processes. Every
// process gets an error if any does.
func openDistCheckpoint(ck *Checkpoint, cfg Config, be compute.Backend, cl cluster.Cluster, shard *tensor.COO, nnz int, logf func(string, ...any)) (*distCheckpoint, error) {
	rank, np := cl.Rank(), cl.Size()
	d := &distCheckpoint{cl: cl, rank: rank, np: np}
	if cfg.split() != SplitKeyed {
		return nil, fmt.Errorf("dain: a run over processes is checkpointed with the keyed split only (-split keyed, the default)")
	}
	// Rank 0 holds the directory's lock (cklock.go) and reads what wrote
	// it (every rank sees the same).
	err := os.MkdirAll(ck.Dir, 0o755)
	this := ckKind{kind: ckMPI, ranks: np}
	var have ckKind
	if err == nil && rank == 0 {
		d.release, err = LockCheckpoint(ck.Dir)
		if err == nil {
			sweepCheckpoint(ck.Dir)
			have, err = checkpointKind(ck.Dir)
		}
		if err == nil {
			err = checkKind(ck.Dir, have, this)
		}
		if err == nil && have.kind != "" && !ck.Resume {
			state := "an interrupted run"
			if m, merr := readCkManifest(filepath.Join(ck.Dir, ckManifestName)); merr == nil && m.Finished {
				state = "a finished run"
			}
			err = kindErrorf(ErrCheckpointExists, "dain: %s holds the checkpoint of %s (%s); to continue it, run the same command with -resume; to start afresh, remove %s or give another -checkpoint directory", ck.Dir, state, have, ck.Dir)
		}
	}
	if err := d.agree(err); err != nil {
		d.close()
		return nil, err
	}
	own := *ck
	own.Dir = filepath.Join(ck.Dir, fmt.Sprintf("rank-%d-of-%d", rank, np))
	if rank != 0 {
		logf = func(string, ...any) {}
	}
	d.c, err = openCheckpointFor(&own, cfg, be, logf, shard, np)
	if err := d.agree(err); err != nil {
		d.close()
		return nil, err
	}
	// Recorded once every process has accepted the directory and before
	// any checkpoint file.
	if rank == 0 && filepath.Base(have.from) != ckManifestName {
		err = writeCkManifest(ck.Dir, ckManifest{Kind: ckMPI, Dainx: ck.Program, Ranks: np, Input: ck.Input, Cells: nnz})
	}
	if err := d.agree(err); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// done records, on rank 0 once every process finished, that the run
// finished.
func (d *distCheckpoint) done() error {
	if d == nil {
		return nil
	}
	d.c.finished = true
	var err error
	if d.rank == 0 {
		err = markFinished(d.c.manifest)
	}
	return d.agree(err)
}

// close releases the locks this process holds: its own directory's, and
// on rank 0 the checkpoint directory's.
func (d *distCheckpoint) close() {
	if d == nil {
		return
	}
	d.c.close()
	if d.release != nil {
		d.release()
		d.release = nil
	}
}

// agree returns err on the process that has it, an error saying that
// another process failed (ErrOtherProcess) on the others when any has one,
// and nil when none has. Every process then returns an error at the same
// point, so the job can end without MPI_Abort (ErrAgreed).
func (d *distCheckpoint) agree(err error) error { return agreeOn(d.cl, err, "dain: checkpoint") }

// agreeOn is agree over cl, the others' error prefixed by what.
func agreeOn(cl cluster.Cluster, err error, what string) error {
	flag := []int64{0}
	if err != nil {
		flag[0] = 1
	}
	cl.SumI64(flag)
	switch {
	case err != nil:
		return agreed{err}
	case flag[0] > 0:
		return agreed{fmt.Errorf("%s: %w", what, ErrOtherProcess)}
	}
	return nil
}

// ErrOtherProcess is the error of the processes of a run spread over
// processes that did not fail when another did (which reports its own).
var ErrOtherProcess = errors.New("another process failed")

// ErrAgreed marks (errors.Is) an error that every process of a run spread
// over processes returned at the same point, each its own or
// ErrOtherProcess: none is left waiting in a collective, so the job may
// end with MPI_Finalize rather than MPI_Abort.
var ErrAgreed = errors.New("every process failed")

// agreed is an error that every process returned (ErrAgreed).
type agreed struct{ error }

func (a agreed) Is(target error) bool { return target == ErrAgreed }
func (a agreed) Unwrap() error        { return a.error }

// all reports whether have holds on every process.
func (d *distCheckpoint) all(have bool) bool {
	n := []int64{0}
	if have {
		n[0] = 1
	}
	d.cl.SumI64(n)
	return int(n[0]) == d.np
}

// trainEpoch returns the epoch of the training state at path, 0 if there
// is none or it cannot be read. It reads the file's header and training
// record only (the state is read, and verified, once the epoch is chosen).
func (d *distCheckpoint) trainEpoch(path, stage string) int {
	f, err := readCkFile(path, "train")
	if err != nil || d.c.compatible(f.header, path) != nil || f.header.Kind != kindTrain || f.header.Stage != stage {
		return 0
	}
	var r trainRecord
	if f.decode("train", &r) != nil {
		return 0
	}
	return r.Epoch
}

// fit sets tc to resume the training of stage from the last epoch every
// process has saved (none: from the beginning) and to save each epoch's
// state with the processes' agreement (see distCheckpoint). accs and secs
// are the stage's TracIn accumulators and their seconds, shuffle the
// source of tc.Shuffle; since returns the seconds the stage has run here.
// It returns the seconds the stage ran before the interruption.
func (d *distCheckpoint) fit(tc *nn.TrainConfig, stage, label string, shuffle *rand.PCG, accs []tracin.Accumulator, secs []float64, logf func(string, ...any), since func() float64) (float64, error) {
	if d == nil {
		return 0, nil
	}
	cur := d.c.path(kindTrain, stage)
	d.c.pending = true
	pending := d.c.path(kindTrain, stage)
	d.c.pending = false
	// The last epoch every process has, in place or pending.
	ep := make([]int64, 2*d.np)
	ep[2*d.rank], ep[2*d.rank+1] = int64(d.trainEpoch(cur, stage)), int64(d.trainEpoch(pending, stage))
	d.cl.SumI64(ep)
	e := int64(0)
	for _, c := range ep {
		ok := c > e
		for r := 0; ok && r < d.np; r++ {
			ok = ep[2*r] == c || ep[2*r+1] == c
		}
		if ok {
			e = c
		}
	}
	var err error
	switch {
	case e > 0 && ep[2*d.rank] != e:
		err = os.Rename(pending, cur)
	case e == 0:
		if err = os.Remove(cur); errors.Is(err, os.ErrNotExist) {
			err = nil
		}
	}
	if rerr := os.Remove(pending); err == nil && rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = rerr
	}
	if err := d.agree(err); err != nil {
		return 0, err
	}
	f := &fitting{c: d.c, stage: stage, label: label, shuffle: shuffle, accs: accs, secs: secs}
	if err := d.agree(f.resume(tc, logf, since)); err != nil {
		return 0, err
	}
	save := tc.Save
	tc.Save = func(st *nn.TrainState) error {
		d.c.pending = true
		err := save(st)
		d.c.pending = false
		if err := d.agree(err); err != nil {
			return err
		}
		return d.agree(os.Rename(pending, cur))
	}
	return f.prior, nil
}

// finish drops stage's training state once every process has written the
// stage's finished record (written by write).
func (d *distCheckpoint) finish(stage string, write func() error) error {
	if d == nil {
		return nil
	}
	if err := d.agree(write()); err != nil {
		return err
	}
	return d.agree(d.c.remove(kindTrain, stage))
}

// loadModel is checkpointer.loadModel when every process has the record.
func (d *distCheckpoint) loadModel(stage string, t *trained) (float64, []float64, bool, error) {
	if d == nil {
		return 0, nil, false, nil
	}
	_, err := os.Stat(d.c.path(kindModel, stage))
	if !d.all(err == nil) {
		return 0, nil, false, nil
	}
	seconds, secs, found, err := d.c.loadModel(stage, t)
	if err := d.agree(err); err != nil {
		return 0, nil, false, err
	}
	return seconds, secs, found, nil
}

// loadAugmented is checkpointer.loadAugmented when every process has the
// record: this process's share of the new cells.
func (d *distCheckpoint) loadAugmented() (*augRecord, *tensor.COO, error) {
	if d == nil {
		return nil, nil, nil
	}
	_, err := os.Stat(d.c.path(kindAugmented, ""))
	if !d.all(err == nil) {
		return nil, nil, nil
	}
	r, aug, err := d.c.loadAugmented()
	if err := d.agree(err); err != nil {
		return nil, nil, err
	}
	return r, aug, nil
}

// at calls the hook at point p.
func (d *distCheckpoint) at(stage string, epoch int, event string) error {
	if d == nil {
		return nil
	}
	return d.c.at(stage, epoch, event)
}
