package dain

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/dainx/dainx/checkpoint/rundir"
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/config"
	"github.com/dainx/dainx/nn"
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

// configFields lists every setting of c (every field but Progress,
// OnEpoch, Keep and MaxMemory, which change what a run reports or whether
// it starts, not what it computes, so a field added to Config is covered
// without a change here), by its Setting.CkName (the flag of `dainx
// augment` that sets it, or else its Go name), and the backend. Values are
// formatted exactly (floats in their shortest round-tripping form).
func configFields(c Config, backend string) []rundir.Field {
	var out []rundir.Field
	v := reflect.ValueOf(c)
	for i := 0; i < v.NumField(); i++ {
		f, x := v.Type().Field(i), v.Field(i)
		if f.Name == "Progress" || f.Name == "OnEpoch" || f.Name == "Keep" || f.Name == "MaxMemory" || !f.IsExported() {
			continue
		}
		name := f.Name
		if s, ok := config.SettingOf(f.Name); ok {
			name = s.CkName()
		}
		if f.Name == "AugWeight" && c.FinalModelName() != FinalAuto {
			// What the weight is for this final model (auto for mlp and
			// 1 compute alike): 1 in every checkpoint before the setting.
			x = reflect.ValueOf(c.AugWeight.Resolve(c.FinalModelName()))
		}
		out = append(out, rundir.Field{Name: name, Value: config.FormatSetting(x)})
	}
	return append(out, rundir.Field{Name: "-backend", Value: backend})
}

// ckRun is what a checkpoint directory is told of a run of cfg on be over
// an input of dims, on ranks processes (0: one), logging with logf.
func ckRun(cfg Config, be compute.Backend, logf func(string, ...any), dims []int, ranks int) rundir.Run {
	what, flags := cfg.Keep.FromSteps14()
	return rundir.Run{Config: configFields(cfg, be.Name()), Device: be.Device(), Ranks: ranks,
		Effective: effective(cfg, dims, ranks), Legacy: ckLegacy, Unkept: what, UnkeptFlags: flags, Logf: logf}
}

// openCheckpoint prepares ck's directory for experiment e on input x
// (rundir.Open): it creates it, removes temporary files a killed run left,
// and, with Resume, checks that every file there belongs to this
// configuration and input; without Resume it refuses a directory that
// holds a checkpoint.
func openCheckpoint(ck *Checkpoint, e *Experiment, x *tensor.COO) (*rundir.Dir, error) {
	return rundir.Open(ck, ckRun(e.cfg, e.be, e.logf, x.Dims, 0), x)
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
	return rundir.OpenDist(ck, ckRun(cfg, be, logf, shard.Dims, cl.Size()), cl, shard, nnz)
}

// ckModel is t as a checkpoint saves and restores it.
func (t *trained) ckModel() rundir.Model {
	return rundir.Model{Net: t.net, Result: &t.res, RMSE: &t.rmse, Accs: t.accs}
}

// ckLegacy returns the value that every run of a dainx that predates
// setting name (its name in rundir.Header.Config) had, and false for a setting
// every checkpoint records: a file without it reads as made with that
// value (not with today's default). Settings' Legacy gives it.
func ckLegacy(name string) (string, bool) {
	if s, ok := config.SettingOfCk(name); ok {
		if v, ok := s.LegacyValue(); ok {
			return config.FormatSetting(reflect.ValueOf(v)), true
		}
	}
	return "", false
}

// effective returns the function that gives the value of setting name
// that a run of cfg on an input of dims over ranks processes (0: one)
// resolves value to (rundir.Run.Effective): an automatic embedding
// optimizer the one it picks for each model on this input ("adam", or
// "mlp X, costco Y" when they differ), a zero value its Setting's Unset
// (the empty split keyed, …), no -layers the default layers of the
// input's order, and -shard-tables off in a run of one process (which
// ignores it), the bayes-fm settings nothing in a run that uses no
// bayes-fm, -graphs nothing (replay changes no bit) and -exchange nothing
// in a run of one process.
func effective(cfg Config, dims []int, ranks int) func(name, value string) string {
	return func(name, value string) string {
		if strings.HasPrefix(name, "-bayes-") && !cfg.UsesBayesFM() {
			return "" // the bayes-fm settings do not matter to this run
		}
		if name == "-fm-rank" && !cfg.UsesFM() {
			return "" // the fm rank does not matter to this run
		}
		if name == "-influence-every" || name == "-influence-val-sample" {
			if cfg.Influence != "in-run" {
				return "" // in-run's settings do not matter to this run
			}
		}
		switch name {
		case "-graphs":
			return "" // replayed steps give the eager steps' bits: either resumes the other
		case "-exchange":
			if ranks == 0 {
				return "" // one process exchanges nothing
			}
		case "-embedding-optimizer":
			if value != "" && value != nn.Auto {
				return value
			}
			auto := cfg
			auto.EmbeddingOptimizer = nn.Auto
			m := auto.EmbeddingOptimizers(dims, nil)
			kinds := slices.Sorted(maps.Keys(m))
			if same := slices.IndexFunc(kinds, func(k string) bool { return m[k] != m[kinds[0]] }) < 0; same && len(kinds) > 0 {
				return m[kinds[0]]
			}
			parts := make([]string, len(kinds))
			for i, k := range kinds {
				parts[i] = k + " " + m[k]
			}
			return strings.Join(parts, ", ")
		case "-layers":
			if value == "" { // the default layers of the input's order
				parts := []string{}
				for _, w := range nn.DefaultLayers(len(dims)) {
					parts = append(parts, strconv.Itoa(w))
				}
				return strings.Join(parts, ",")
			}
		case "ShardTables":
			if ranks == 0 {
				return string(ShardTablesOff)
			}
		}
		if s, ok := config.SettingOfCk(name); ok && s.Unset != nil && value == config.FormatSetting(reflect.Zero(s.Type())) {
			return config.FormatSetting(s.As(s.Unset)) // the zero value stands for Unset
		}
		return value
	}
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
		s += "." + p.passName()
	}
	return s
}
