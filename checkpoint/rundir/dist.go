package rundir

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tracin"
)

// Dist is the checkpoint of a run spread over processes (OpenDist): each
// process saves its own state (its replica of the model being trained,
// its cells' TracIn sums, its share of the new cells) with the
// one-process Dir in a directory of its own under
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
type Dist struct {
	c        *Dir
	cl       cluster.Cluster
	rank, np int
	release  func() // rank 0: the checkpoint directory's lock
}

// OpenDist prepares the checkpoint of this process (the rank of cl) in
// ck.Dir for run over a tensor of nnz cells of which shard holds this
// process's, as Open does for one process, in ck.Dir/rank-R-of-P (only
// rank 0 logs, with run.Logf). It refuses a checkpoint made by another
// kind of run or number of processes (ErrKind) and, without Resume, a
// directory that holds one (ErrExists). Every process gets an error if
// any does (cluster.ErrAgreed). run.Ranks is set to the number of
// processes. The Dist must be closed (Close).
func OpenDist(ck *Checkpoint, run Run, cl cluster.Cluster, shard *tensor.COO, nnz int) (*Dist, error) {
	rank, np := cl.Rank(), cl.Size()
	d := &Dist{cl: cl, rank: rank, np: np}
	// Rank 0 holds the directory's lock (lock.go) and reads what wrote
	// it (every rank sees the same).
	err := os.MkdirAll(ck.Dir, 0o755)
	this := ckKind{kind: ckMPI, ranks: np}
	var have ckKind
	if err == nil && rank == 0 {
		d.release, err = Lock(ck.Dir)
		if err == nil {
			sweep(ck.Dir)
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
			err = kindErrorf(ErrExists, "dain: %s holds the checkpoint of %s (%s); to continue it, run the same command with -resume; to start afresh, remove %s or give another -checkpoint directory", ck.Dir, state, have, ck.Dir)
		}
	}
	if err := d.agree(err); err != nil {
		d.Close()
		return nil, err
	}
	own := *ck
	own.Dir = filepath.Join(ck.Dir, fmt.Sprintf("rank-%d-of-%d", rank, np))
	if rank != 0 {
		run.Logf = func(string, ...any) {}
	}
	run.Ranks = np
	d.c, err = Open(&own, run, shard)
	if err := d.agree(err); err != nil {
		d.Close()
		return nil, err
	}
	// Recorded once every process has accepted the directory and before
	// any checkpoint file.
	if rank == 0 && filepath.Base(have.from) != ckManifestName {
		err = writeCkManifest(ck.Dir, ckManifest{Kind: ckMPI, Dainx: ck.Program, Ranks: np, Input: ck.Input, Cells: nnz})
	}
	if err := d.agree(err); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// SaveModel is Dir.writeModel once every process has written its
// record, and then the training state dropped.
func (d *Dist) SaveModel(stage string, m Model, seconds float64, tracinSecs []float64) error {
	if d == nil {
		return nil
	}
	return d.finish(stage, func() error { return d.c.writeModel(stage, m, seconds, tracinSecs) })
}

// SaveAugmented is Dir.SaveAugmented, agreed by every process.
func (d *Dist) SaveAugmented(r any, aug *tensor.COO) error {
	if d == nil {
		return nil
	}
	return d.agree(d.c.SaveAugmented(r, aug))
}

// Done records, on rank 0 once every process finished, that the run
// finished.
func (d *Dist) Done() error {
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

// Close releases the locks this process holds: its own directory's, and
// on rank 0 the checkpoint directory's.
func (d *Dist) Close() {
	if d == nil {
		return
	}
	d.c.Close()
	if d.release != nil {
		d.release()
		d.release = nil
	}
}

// agree returns err on the process that has it, an error saying that
// another process failed (cluster.ErrOtherProcess) on the others when any
// has one, and nil when none has. Every process then returns an error at
// the same point, so the job can end without MPI_Abort (cluster.ErrAgreed).
func (d *Dist) agree(err error) error { return cluster.Agree(d.cl, err, "dain: checkpoint") }

// all reports whether have holds on every process.
func (d *Dist) all(have bool) bool {
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
func (d *Dist) trainEpoch(path, stage string) int {
	f, err := ReadFile(path, "train")
	if err != nil || d.c.Compatible(f.Header, path) != nil || f.Header.Kind != KindTrain || f.Header.Stage != stage {
		return 0
	}
	var r trainRecord
	if f.Decode("train", &r) != nil {
		return 0
	}
	return r.Epoch
}

// Fit sets tc to resume the training of stage from the last epoch every
// process has saved (none: from the beginning) and to save each epoch's
// state with the processes' agreement (see Dist). accs and secs
// are the stage's TracIn accumulators and their seconds, shuffle the
// source of tc.Shuffle; since returns the seconds the stage has run here.
// It returns the seconds the stage ran before the interruption.
func (d *Dist) Fit(tc *nn.TrainConfig, stage, label string, shuffle *rand.PCG, accs []tracin.Accumulator, secs []float64, logf func(string, ...any), since func() float64) (float64, error) {
	if d == nil {
		return 0, nil
	}
	cur := d.c.path(KindTrain, stage)
	d.c.pending = true
	pending := d.c.path(KindTrain, stage)
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
func (d *Dist) finish(stage string, write func() error) error {
	if d == nil {
		return nil
	}
	if err := d.agree(write()); err != nil {
		return err
	}
	return d.agree(d.c.remove(KindTrain, stage))
}

// LoadModel is Dir.LoadModel when every process has the record.
func (d *Dist) LoadModel(stage string, m Model) (float64, []float64, bool, error) {
	if d == nil {
		return 0, nil, false, nil
	}
	_, err := os.Stat(d.c.path(KindModel, stage))
	if !d.all(err == nil) {
		return 0, nil, false, nil
	}
	seconds, secs, found, err := d.c.LoadModel(stage, m)
	if err := d.agree(err); err != nil {
		return 0, nil, false, err
	}
	return seconds, secs, found, nil
}

// LoadAugmented is Dir.LoadAugmented when every process has the record:
// this process's share of the new cells.
func (d *Dist) LoadAugmented(r Augmented) (*tensor.COO, bool, error) {
	if d == nil {
		return nil, false, nil
	}
	_, err := os.Stat(d.c.path(KindAugmented, ""))
	if !d.all(err == nil) {
		return nil, false, nil
	}
	aug, found, err := d.c.LoadAugmented(r)
	if err := d.agree(err); err != nil {
		return nil, false, err
	}
	return aug, found, nil
}

// At is Dir.At of this process.
func (d *Dist) At(stage string, epoch int, event string) error {
	if d == nil {
		return nil
	}
	return d.c.At(stage, epoch, event)
}
