package rundir

import (
	"fmt"
	"math/rand/v2"

	"github.com/dainx/dainx/checkpoint"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tracin"
)

// A training stage's state (KindTrain) is saved after every epoch: the
// parameters, Adam's moments and step, the best parameters and epoch so
// far, the shuffling generator's state and cell order, and the TracIn
// running and best sums. A finished model (KindModel) is saved with its
// TracIn scores.

// Store is what the stages of a run save their state in and resume from:
// the *Dir of one process (Open), or a *Dist, each process's in a
// directory of its own, the processes agreeing on every record (OpenDist).
// Every method does nothing (and finds nothing) on a nil receiver: a run
// without a checkpoint. Errors name the file and say what to run.
type Store interface {
	// LoadModel loads stage's finished model into m if saved: its
	// training's seconds and its TracIn passes' seconds.
	LoadModel(stage string, m Model) (seconds float64, tracinSecs []float64, found bool, err error)
	// SaveModel records stage's finished model and drops its training
	// state.
	SaveModel(stage string, m Model, seconds float64, tracinSecs []float64) error
	// Fit sets tc to resume stage's training from its saved state and to
	// save its state after every epoch; it returns the seconds the stage
	// ran before the interruption.
	Fit(tc *nn.TrainConfig, stage, label string, shuffle *rand.PCG, accs []tracin.Accumulator, secs []float64, logf func(string, ...any), since func() float64) (float64, error)
	// At calls the test hook at a point of stage's epoch.
	At(stage string, epoch int, event string) error
	// LoadAugmented and SaveAugmented load and save the new cells (this
	// process's share) with the record of the steps before them.
	LoadAugmented(r Augmented) (*tensor.COO, bool, error)
	SaveAugmented(r any, aug *tensor.COO) error
	// Done records that the run finished (its result is whole); Close
	// releases the checkpoint directory's lock (lock.go).
	Done() error
	Close()
}

var (
	_ Store = (*Dir)(nil)
	_ Store = (*Dist)(nil)
)

// Model is a trained model as a checkpoint saves and restores it: its
// network (parameters, and this process's rows of a sharded table), the
// result of its training and its test RMSE (set by LoadModel), and its
// TracIn accumulators (their best sums saved and restored).
type Model struct {
	Net    *nn.Net
	Result *nn.Result
	RMSE   *float64
	Accs   []tracin.Accumulator
}

// trainRecord is the gob-encoded part of a training stage's state; the
// arrays are sections of their own.
type trainRecord struct {
	Epoch, Step   int
	Result        nn.Result
	Shuffle       []byte    // the shuffling PCG's state (rand.PCG.MarshalBinary)
	Seconds       float64   // the stage's wall time so far, TracIn included
	TracInSeconds []float64 // each TracIn pass's share of it
	TracInK       []int     // each TracIn accumulator's checkpoint count
}

// fitting is one checkpointed training stage.
type fitting struct {
	c       *Dir
	stage   string
	label   string
	shuffle *rand.PCG
	accs    []tracin.Accumulator
	secs    []float64 // TracIn seconds, shared with the caller
	prior   float64   // wall time of the stage before this process
}

// resume sets tc to continue the stage's saved training, if any, and to
// save its state after every epoch.
func (f *fitting) resume(tc *nn.TrainConfig, logf func(string, ...any), since func() float64) error {
	if f.c == nil {
		return nil
	}
	file, err := f.c.read(KindTrain, f.stage)
	if err != nil {
		return err
	}
	if file != nil {
		var r trainRecord
		if err := file.Decode("train", &r); err != nil {
			return fmt.Errorf("dain: -resume: %s: %w", f.c.path(KindTrain, f.stage), err)
		}
		bad := func(what string) error {
			return fmt.Errorf("dain: -resume: %s: %w: %s", f.c.path(KindTrain, f.stage), ErrNotCheckpoint, what)
		}
		if len(r.TracInK) != len(f.accs) || len(r.TracInSeconds) != len(f.accs) {
			return bad(fmt.Sprintf("%d TracIn accumulators saved, %d here", len(r.TracInK), len(f.accs)))
		}
		st := &nn.TrainState{Epoch: r.Epoch, Step: r.Step, Result: r.Result,
			Params: file.F32["params"], AdamM: file.F32["adam_m"], AdamV: file.F32["adam_v"], Best: file.F32["best"], Perm: file.I32["perm"],
			Shard: file.F32["shard"], ShardM: file.F32["shard_adam_m"], ShardV: file.F32["shard_adam_v"], ShardBest: file.F32["shard_best"]}
		tc.Resume = st
		if err := f.shuffle.UnmarshalBinary(r.Shuffle); err != nil {
			return bad("shuffle state: " + err.Error())
		}
		for i, a := range f.accs {
			s := tracin.State{K: r.TracInK[i], Run: file.F32[fmt.Sprintf("tracin_run_%d", i)], Best: file.F32[fmt.Sprintf("tracin_best_%d", i)]}
			if err := a.Restore(s); err != nil {
				return bad(err.Error())
			}
		}
		copy(f.secs, r.TracInSeconds)
		f.prior = r.Seconds
		logf("%s: resuming after epoch %d", f.label, r.Epoch)
	}
	tc.Save = func(st *nn.TrainState) error {
		r := trainRecord{Epoch: st.Epoch, Step: st.Step, Result: st.Result, Seconds: f.prior + since(),
			TracInSeconds: append([]float64(nil), f.secs...), TracInK: make([]int, len(f.accs))}
		var err error
		if r.Shuffle, err = f.shuffle.MarshalBinary(); err != nil {
			return fmt.Errorf("dain: checkpoint: %w", err)
		}
		states := make([]tracin.State, len(f.accs))
		for i, a := range f.accs {
			if states[i], err = a.State(); err != nil {
				return err
			}
			r.TracInK[i] = states[i].K
		}
		err = f.c.write(KindTrain, f.stage, func(w *checkpoint.Writer) {
			w.Gob("train", r)
			w.F32("params", st.Params)
			w.F32("adam_m", st.AdamM)
			w.F32("adam_v", st.AdamV)
			w.F32("best", st.Best)
			w.I32("perm", st.Perm)
			if st.Shard != nil { // this process's rows of a sharded table
				w.F32("shard", st.Shard)
				w.F32("shard_adam_m", st.ShardM)
				w.F32("shard_adam_v", st.ShardV)
				w.F32("shard_best", st.ShardBest)
			}
			for i, s := range states {
				w.F32(fmt.Sprintf("tracin_run_%d", i), s.Run)
				w.F32(fmt.Sprintf("tracin_best_%d", i), s.Best)
			}
		})
		if err != nil {
			return err
		}
		return f.c.At(f.stage, st.Epoch, "saved")
	}
	return nil
}

// modelRecord is the gob-encoded part of a finished model's record.
type modelRecord struct {
	Result        nn.Result
	RMSE          float64
	Seconds       float64 // training without the TracIn passes
	TracInSeconds []float64
	TracInK       []int
}

// Fit sets tc to continue stage's saved training, if any (its parameters,
// Adam's state, the generator shuffle, which is tc's, and the TracIn
// accumulators accs with their seconds secs, len(accs)), and to save its
// state after every epoch (then calling the hook at "saved"). label names
// the stage in the line logged; since returns the seconds the stage has
// run in this process. It returns the seconds it ran before; an error
// names the file.
func (c *Dir) Fit(tc *nn.TrainConfig, stage, label string, shuffle *rand.PCG, accs []tracin.Accumulator, secs []float64, logf func(string, ...any), since func() float64) (float64, error) {
	f := &fitting{c: c, stage: stage, label: label, shuffle: shuffle, accs: accs, secs: secs}
	err := f.resume(tc, logf, since)
	return f.prior, err
}

// SaveModel records the finished model m of stage (its TracIn passes'
// scores and wall times included: seconds of training without them,
// tracinSecs of each) and drops the stage's training state.
func (c *Dir) SaveModel(stage string, m Model, seconds float64, tracinSecs []float64) error {
	if c == nil {
		return nil
	}
	if err := c.writeModel(stage, m, seconds, tracinSecs); err != nil {
		return err
	}
	return c.remove(KindTrain, stage)
}

// writeModel is SaveModel without dropping the training state.
func (c *Dir) writeModel(stage string, m Model, seconds float64, tracinSecs []float64) error {
	params := make([]float32, m.Net.Params().Len())
	if err := m.Net.Backend().Download(params, m.Net.Params()); err != nil {
		return fmt.Errorf("dain: checkpoint: %w", err)
	}
	var shard []float32 // this process's rows of a sharded table
	if sr := m.Net.ShardRows(); sr != nil {
		shard = make([]float32, sr.Len())
		if err := m.Net.Backend().Download(shard, sr); err != nil {
			return fmt.Errorf("dain: checkpoint: %w", err)
		}
	}
	r := modelRecord{Result: *m.Result, RMSE: *m.RMSE, Seconds: seconds, TracInSeconds: tracinSecs, TracInK: make([]int, len(m.Accs))}
	states := make([]tracin.State, len(m.Accs))
	for i, a := range m.Accs {
		var err error
		if states[i], err = a.State(); err != nil {
			return err
		}
		r.TracInK[i] = states[i].K
	}
	return c.write(KindModel, stage, func(w *checkpoint.Writer) {
		w.Gob("model", r)
		w.F32("params", params)
		if shard != nil {
			w.F32("shard", shard)
		}
		for i, s := range states {
			w.F32(fmt.Sprintf("tracin_%d", i), s.Best)
		}
	})
}

// LoadModel restores the finished model of stage into m (whose net and
// accumulators are built), returning its training seconds, the TracIn
// passes' seconds and whether there was one. A record of another shape
// (parameters, shard rows, passes) is an ErrNotCheckpoint error naming
// the file.
func (c *Dir) LoadModel(stage string, m Model) (float64, []float64, bool, error) {
	if c == nil {
		return 0, nil, false, nil
	}
	file, err := c.read(KindModel, stage)
	if err != nil || file == nil {
		return 0, nil, false, err
	}
	path := c.path(KindModel, stage)
	var r modelRecord
	if err := file.Decode("model", &r); err != nil {
		return 0, nil, false, fmt.Errorf("dain: -resume: %s: %w", path, err)
	}
	params, shard := file.F32["params"], file.F32["shard"]
	wantShard := 0
	if sr := m.Net.ShardRows(); sr != nil {
		wantShard = sr.Len()
	}
	if len(params) != m.Net.Params().Len() || len(shard) != wantShard || len(r.TracInK) != len(m.Accs) || len(r.TracInSeconds) != len(m.Accs) {
		return 0, nil, false, fmt.Errorf("dain: -resume: %s: %w: %d+%d parameters and %d TracIn passes, this model %d+%d and %d", path, ErrNotCheckpoint, len(params), len(shard), len(r.TracInK), m.Net.Params().Len(), wantShard, len(m.Accs))
	}
	m.Net.Backend().Upload(m.Net.Params(), params)
	if wantShard > 0 {
		m.Net.Backend().Upload(m.Net.ShardRows(), shard)
	}
	for i, a := range m.Accs {
		s := file.F32[fmt.Sprintf("tracin_%d", i)]
		if err := a.Restore(tracin.State{K: r.TracInK[i], Run: s, Best: s}); err != nil {
			return 0, nil, false, fmt.Errorf("dain: -resume: %s: %w", path, err)
		}
	}
	*m.Result, *m.RMSE = r.Result, r.RMSE
	return r.Seconds, r.TracInSeconds, true, nil
}
