package dain

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/dainx/dainx/checkpoint"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/internal/outtx"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tracin"
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
type Checkpoint struct {
	Dir string
	// Resume continues the run saved in Dir. Without it, a Dir that
	// already holds a checkpoint is refused (nothing is overwritten); with
	// it, an empty or missing Dir starts the run from the beginning.
	Resume bool
	// Input names the input in messages (a file name).
	Input string
	// Program is the version of the program writing, recorded in every
	// file's header.
	Program string
	// Hook, if not nil, is called at fixed points of the run; an error it
	// returns stops the run there with that error, as a kill would. It is
	// for tests that interrupt a run at a given point.
	Hook func(CheckpointPoint) error
}

// CheckpointPoint is a point of a checkpointed run at which
// Checkpoint.Hook is called.
type CheckpointPoint struct {
	Stage string // theta-mlp.tracin-last, theta-costco, augmented, retrain, …
	Epoch int    // the 1-based epoch; 0 for augmented
	// Event is "trained" (the epoch's steps and validation pass ran,
	// nothing of it is saved), "tracin" (its TracIn passes ran too; only
	// in stages with TracIn) or "saved" (its checkpoint is written).
	Event string
}

// ckFile kinds.
const (
	kindTrain     = "train"
	kindModel     = "model"
	kindAugmented = "augmented"
)

// ckHeader is the first section of every checkpoint file.
type ckHeader struct {
	Dainx   string    // the program's version
	Kind    string    // kindTrain, kindModel or kindAugmented
	Stage   string    // the stage it belongs to
	Config  []ckField // the configuration, as flag = value
	Input   ckInput
	Backend string // the backend's device, in words (a difference is reported, not refused)
}

type ckField struct{ Name, Value string }

// ckInput is the fingerprint of an input tensor.
type ckInput struct {
	Name   string
	Cells  int
	Dims   []int
	SHA256 string // of the dims, the indices (int32) and the values (float64 bits), little endian
}

func (in ckInput) String() string {
	return fmt.Sprintf("%s (%d cells, dims %v, SHA-256 %.16s…)", in.Name, in.Cells, in.Dims, in.SHA256)
}

// fingerprint returns x's ckInput.
func fingerprint(x *tensor.COO, name string) ckInput {
	h := sha256.New()
	buf := make([]byte, 0, 1<<16)
	flush := func(force bool) {
		if force || len(buf) > cap(buf)-8 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(x.Dims)))
	for _, d := range x.Dims {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(d))
	}
	for _, i := range x.Idx {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(i))
		flush(false)
	}
	for _, v := range x.Val {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
		flush(false)
	}
	flush(true)
	return ckInput{Name: name, Cells: x.NNZ(), Dims: append([]int(nil), x.Dims...), SHA256: hex.EncodeToString(h.Sum(nil))}
}

// configFields lists every setting of c (every field but Progress, OnEpoch,
// Keep and MaxMemory, which change what a run reports or whether it
// starts, not what it computes, so a
// field added to Config is covered without a change here), by its
// Setting.CkName (the flag of `dainx augment` that sets it, or else its
// Go name), and the backend.
// Values are formatted exactly (floats in their shortest round-tripping
// form).
func configFields(c Config, backend string) []ckField {
	var out []ckField
	v := reflect.ValueOf(c)
	for i := 0; i < v.NumField(); i++ {
		f, x := v.Type().Field(i), v.Field(i)
		if f.Name == "Progress" || f.Name == "OnEpoch" || f.Name == "Keep" || f.Name == "MaxMemory" || !f.IsExported() {
			continue
		}
		name := f.Name
		if s, ok := settingOf(f.Name); ok {
			name = s.CkName()
		}
		if f.Name == "AugWeight" && c.finalModel() != FinalAuto {
			// What the weight is for this final model (auto for mlp and
			// 1 compute alike): 1 in every checkpoint before the setting.
			x = reflect.ValueOf(c.AugWeight.Resolve(c.finalModel()))
		}
		out = append(out, ckField{name, formatSetting(x)})
	}
	return append(out, ckField{"-backend", backend})
}

// checkpointer is the checkpoint directory of a running experiment.
type checkpointer struct {
	dir     string
	head    ckHeader // this run's; Kind and Stage set per file
	cfg     Config   // this run's configuration
	ranks   int      // the processes of the run (0 or 1: one)
	hook    func(CheckpointPoint) error
	pending bool // training states go to the pending file (see path)

	release  func() // the directory's lock (LockCheckpoint)
	manifest string // the manifest of the run (for a rank, the job's)
	created  bool   // this run made the directory
	finished bool   // the run returned its result (done)
}

// ErrCheckpointExists is returned (wrapped) when a run without Resume
// finds a checkpoint in its directory.
var ErrCheckpointExists = errors.New("the checkpoint directory already holds a checkpoint")

// openCheckpoint prepares ck's directory for experiment e on input x:
// it creates it, removes temporary files a killed run left, and, with
// Resume, checks that every file there belongs to this configuration and
// input; without Resume it refuses a directory that holds a checkpoint.
func openCheckpoint(ck *Checkpoint, e *Experiment, x *tensor.COO) (*checkpointer, error) {
	return openCheckpointFor(ck, e.cfg, e.be, e.logf, x, 0)
}

// openCheckpointFor is openCheckpoint for a run of configuration cfg on
// be, logging with logf. ranks is 0 for a run of one process, which first
// checks that no other kind of run wrote ck.Dir (checkKind) and records
// its own kind there; or the number of processes of a run over processes
// whose own directory (rank-R-of-P) ck.Dir is, whose kind
// openDistCheckpoint has checked.
func openCheckpointFor(ck *Checkpoint, cfg Config, be compute.Backend, logf func(string, ...any), x *tensor.COO, ranks int) (c *checkpointer, err error) {
	if ck.Dir == "" {
		return nil, fmt.Errorf("dain: checkpoint directory not given")
	}
	_, statErr := os.Stat(ck.Dir)
	created := errors.Is(statErr, os.ErrNotExist)
	if err := os.MkdirAll(ck.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("dain: checkpoint directory: %w", err)
	}
	// The directory is this run's until it returns (cklock.go).
	release, err := LockCheckpoint(ck.Dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	var have ckKind
	if ranks == 0 {
		var err error
		if have, err = checkpointKind(ck.Dir); err == nil {
			err = checkKind(ck.Dir, have, ckKind{kind: ckSingle})
		}
		if err != nil {
			return nil, err
		}
	}
	c = &checkpointer{dir: ck.Dir, hook: ck.Hook, cfg: cfg, ranks: ranks, release: release, created: created, head: ckHeader{
		Dainx: ck.Program, Config: configFields(cfg, be.Name()), Backend: be.Device()}}
	if ranks == 0 {
		c.manifest = filepath.Join(ck.Dir, ckManifestName)
	} else {
		c.manifest = filepath.Join(filepath.Dir(ck.Dir), ckManifestName)
	}
	// Temporaries a killed run left (no other run writes here: the lock).
	sweepCheckpoint(ck.Dir)
	entries, err := os.ReadDir(ck.Dir)
	if err != nil {
		return nil, fmt.Errorf("dain: checkpoint directory: %w", err)
	}
	var files []string
	for _, de := range entries {
		if name := de.Name(); strings.HasSuffix(name, ".ckpt") {
			files = append(files, name)
		}
	}
	c.head.Input = fingerprint(x, ck.Input)
	if len(files) > 0 && !ck.Resume {
		return nil, c.existing(ck.Dir, files)
	}
	if ck.Resume && len(files) == 0 {
		logf("checkpoint: %s holds no checkpoint yet; starting from the beginning", ck.Dir)
	}
	var notes []string
	for _, name := range files {
		f, err := readCkFile(filepath.Join(ck.Dir, name), "header")
		if err != nil {
			return nil, fmt.Errorf("dain: -resume: %w", err)
		}
		if err := c.compatible(f.header, filepath.Join(ck.Dir, name)); err != nil {
			return nil, err
		}
		if h := f.header; h.Dainx != c.head.Dainx || h.Backend != c.head.Backend {
			notes = append(notes, fmt.Sprintf("checkpoint: %s was written by dainx %s on %s; this is dainx %s on %s (resumed all the same; the result may differ from an uninterrupted run's)", name, h.Dainx, h.Backend, c.head.Dainx, c.head.Backend))
		}
	}
	for _, n := range notes {
		logf("%s", n)
	}
	if len(files) > 0 {
		if c.finishedRun() {
			logf("checkpoint: %s holds a finished run (%s); taking its results from there", ck.Dir, strings.Join(files, ", "))
		} else {
			logf("checkpoint: resuming from %s (%s)", ck.Dir, strings.Join(files, ", "))
		}
	}
	if ranks == 0 && filepath.Base(have.from) != ckManifestName {
		// Recorded once the directory is accepted and before any
		// checkpoint file: a later run of another kind finds it even if
		// this one is killed before its first epoch.
		if err := writeCkManifest(ck.Dir, ckManifest{Kind: ckSingle, Dainx: ck.Program, Input: ck.Input, Cells: x.NNZ()}); err != nil {
			return nil, fmt.Errorf("dain: checkpoint: %w", err)
		}
	}
	return c, nil
}

// sweepCheckpoint removes from the checkpoint directory dir the
// temporaries of killed runs: those of dead processes (outtx.Sweep), and
// those of a dainx that named them .NAME.tmp-N.
func sweepCheckpoint(dir string) {
	outtx.Sweep(dir, "")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, de := range entries {
		name := de.Name()
		if strings.HasPrefix(name, ".") && (strings.Contains(name, ".ckpt.tmp-") || strings.HasPrefix(name, "."+ckManifestName+".tmp-")) {
			os.Remove(filepath.Join(dir, name))
		}
	}
}

// kindError is an error with its own message that is (errors.Is) the
// sentinel kind: ErrCheckpointExists, ErrCheckpointInUse,
// ErrCheckpointKind.
type kindError struct {
	msg  string
	kind error
}

func (e kindError) Error() string        { return e.msg }
func (e kindError) Is(target error) bool { return target == e.kind }

func kindErrorf(kind error, format string, args ...any) error {
	return kindError{fmt.Sprintf(format, args...), kind}
}

// finishedRun reports whether the run that wrote c's checkpoint finished
// (its manifest says so).
func (c *checkpointer) finishedRun() bool {
	if c == nil {
		return false
	}
	m, err := readCkManifest(c.manifest)
	return err == nil && m.Finished
}

// existing is the error of a run without Resume on the checkpoint files
// in dir (ErrCheckpointExists): it says whether they are a finished run's,
// an interrupted run's of this input and flags, or another run's, and what
// to run.
func (c *checkpointer) existing(dir string, files []string) error {
	afresh := fmt.Sprintf("to start afresh, remove %s or give another -checkpoint directory", dir)
	for _, name := range files {
		f, err := readCkFile(filepath.Join(dir, name), "header")
		if err != nil {
			return kindErrorf(ErrCheckpointExists, "dain: %s holds %s, which is not a checkpoint this dainx can read (%v); %s", dir, name, err, afresh)
		}
		if diff := c.difference(f.header, filepath.Join(dir, name)); diff != "" {
			return kindErrorf(ErrCheckpointExists, "dain: %s holds the checkpoint of another run (%s); %s", dir, diff, afresh)
		}
	}
	if c.finishedRun() {
		return kindErrorf(ErrCheckpointExists, "dain: %s holds the checkpoint of a finished run of this input and flags; the same command with -resume gives its result again from there; %s", dir, afresh)
	}
	return kindErrorf(ErrCheckpointExists, "dain: %s holds the checkpoint of an interrupted run of this input and flags (%s); to continue it, run the same command with -resume; %s", dir, strings.Join(files, ", "), afresh)
}

// done records in the manifest that the run finished (its result is
// whole), for the messages of later runs on the directory.
func (c *checkpointer) done() error {
	if c == nil {
		return nil
	}
	c.finished = true
	if c.ranks != 0 {
		return nil
	}
	return markFinished(c.manifest)
}

// markFinished sets Finished in the manifest at path.
func markFinished(path string) error {
	m, err := readCkManifest(path)
	if err != nil || m.Finished {
		return nil // no manifest to mark: the messages say "interrupted"
	}
	m.Finished = true
	if err := writeCkManifest(filepath.Dir(path), m); err != nil {
		return fmt.Errorf("dain: checkpoint: %w", err)
	}
	return nil
}

// close releases the checkpoint directory's lock. A directory this run
// made and left without a checkpoint file (it failed before its first
// epoch was saved) is removed: a failed command leaves no empty
// checkpoint directory behind.
func (c *checkpointer) close() {
	if c == nil || c.release == nil {
		return
	}
	empty := false
	if c.created && !c.finished {
		empty = true
		es, _ := os.ReadDir(c.dir)
		for _, de := range es {
			if n := de.Name(); n != ckManifestName && n != ckLockName {
				empty = false
			}
		}
		if empty && c.ranks == 0 {
			os.Remove(filepath.Join(c.dir, ckManifestName))
		}
	}
	c.release()
	c.release = nil
	if empty {
		os.Remove(c.dir) // fails if another run has taken it since
	}
}

// ckLegacy returns the value that every run of a dainx that predates
// setting name (its name in ckHeader.Config) had, and false for a setting
// every checkpoint records: a file without it reads as made with that
// value (not with today's default). Settings' Legacy gives it.
func ckLegacy(name string) (string, bool) {
	if s, ok := settingOfCk(name); ok {
		if v, ok := s.LegacyValue(); ok {
			return formatSetting(reflect.ValueOf(v)), true
		}
	}
	return "", false
}

// settingOfCk returns the entry of Settings named name in a checkpoint's
// header.
func settingOfCk(name string) (Setting, bool) {
	for _, s := range Settings() {
		if s.CkName() == name {
			return s, true
		}
	}
	return Setting{}, false
}

// settingOf returns the entry of Settings of Config's field field.
func settingOf(field string) (Setting, bool) {
	for _, s := range Settings() {
		if s.Field == field {
			return s, true
		}
	}
	return Setting{}, false
}

// effective returns the value of setting name that a run resolves value
// to: an automatic embedding optimizer the one it picks for each model
// on this input ("adam", or "mlp X, costco Y" when they differ), a zero
// value its Setting's Unset (the empty split keyed, …), no -layers the
// default layers of the input's order, and
// -shard-tables off in a run of one process (which ignores it), the
// bayes-fm settings nothing in a run that uses no bayes-fm, -graphs
// nothing (replay changes no bit) and -exchange nothing in a run of one
// process.
func (c *checkpointer) effective(name, value string) string {
	if strings.HasPrefix(name, "-bayes-") && !c.cfg.UsesBayesFM() {
		return "" // the bayes-fm settings do not matter to this run
	}
	if name == "-fm-rank" && !c.cfg.UsesFM() {
		return "" // the fm rank does not matter to this run
	}
	if name == "-influence-every" || name == "-influence-val-sample" {
		if c.cfg.Influence != "in-run" {
			return "" // in-run's settings do not matter to this run
		}
	}
	switch name {
	case "-graphs":
		return "" // replayed steps give the eager steps' bits: either resumes the other
	case "-exchange":
		if c.ranks == 0 {
			return "" // one process exchanges nothing
		}
	case "-embedding-optimizer":
		if value != "" && value != nn.Auto {
			return value
		}
		cfg := c.cfg
		cfg.EmbeddingOptimizer = nn.Auto
		m := cfg.EmbeddingOptimizers(c.head.Input.Dims, nil)
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
			for _, w := range nn.DefaultLayers(len(c.head.Input.Dims)) {
				parts = append(parts, strconv.Itoa(w))
			}
			return strings.Join(parts, ",")
		}
	case "ShardTables":
		if c.ranks == 0 {
			return string(ShardTablesOff)
		}
	}
	if s, ok := settingOfCk(name); ok && s.Unset != nil && value == formatSetting(reflect.Zero(s.Type())) {
		return formatSetting(s.as(s.Unset)) // the zero value stands for Unset
	}
	return value
}

// compatible returns an error naming the first difference between the
// saved header h (of file path) and this run's (difference), or nil.
func (c *checkpointer) compatible(h ckHeader, path string) error {
	if diff := c.difference(h, path); diff != "" {
		return fmt.Errorf("dain: -resume: %s; resume with the same input and flags, or start afresh with another -checkpoint directory", diff)
	}
	return nil
}

// difference names the first difference between the saved header h (of
// file path) and this run's, or returns "". Settings are compared by
// their effective values, and a setting h lacks by its ckLegacy value.
func (c *checkpointer) difference(h ckHeader, path string) string {
	if h.Input.SHA256 != c.head.Input.SHA256 || h.Input.Cells != c.head.Input.Cells || !slices.Equal(h.Input.Dims, c.head.Input.Dims) {
		return fmt.Sprintf("the checkpoint in %s was made from another input, %v; this run reads %v", c.dir, h.Input, c.head.Input)
	}
	saved := map[string]string{}
	for _, f := range h.Config {
		saved[f.Name] = f.Value
	}
	have := map[string]bool{}
	for _, f := range c.head.Config {
		have[f.Name] = true
		v, ok := saved[f.Name]
		note := ""
		if !ok {
			if v, ok = ckLegacy(f.Name); ok {
				note = fmt.Sprintf(" (not recorded: dainx %s predates the setting and always ran so)", h.Dainx)
			}
		}
		if !ok || c.effective(f.Name, v) != c.effective(f.Name, f.Value) {
			if !ok {
				v = "(not recorded)"
			}
			return fmt.Sprintf("the checkpoint in %s was made with %s %s%s; this run has %s %s", c.dir, f.Name, v, note, f.Name, f.Value)
		}
	}
	for _, f := range h.Config {
		if !have[f.Name] {
			return fmt.Sprintf("%s records a setting this dainx does not have, %s %s (written by dainx %s)", path, f.Name, f.Value, h.Dainx)
		}
	}
	return ""
}

// path returns the file of a stage's record of kind. With pending set
// (a run over processes saving an epoch), a training state goes to the
// stage's pending file, which replaces the record once every process has
// written its own (distCheckpoint).
func (c *checkpointer) path(kind, stage string) string {
	if kind == kindTrain && c.pending {
		return filepath.Join(c.dir, stage+".train-pending.ckpt")
	}
	if kind == kindAugmented {
		return filepath.Join(c.dir, "augmented.ckpt")
	}
	return filepath.Join(c.dir, stage+"."+map[string]string{kindTrain: "train", kindModel: "done"}[kind]+".ckpt")
}

// write writes the record of kind for stage atomically, its sections
// written by body.
func (c *checkpointer) write(kind, stage string, body func(w *ckWriter)) error {
	h := c.head
	h.Kind, h.Stage = kind, stage
	err := tensor.AtomicWrite(c.path(kind, stage), func(f io.Writer) error {
		w := checkpoint.NewWriter(f)
		w.Gob("header", h)
		body(w)
		return w.Close()
	})
	if err != nil {
		return fmt.Errorf("dain: writing the checkpoint: %w", err)
	}
	return nil
}

// read returns the record of kind for stage, nil if there is none.
func (c *checkpointer) read(kind, stage string) (*ckFile, error) {
	path := c.path(kind, stage)
	f, err := readCkFile(path, "")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dain: -resume: %w", err)
	}
	if err := c.compatible(f.header, path); err != nil {
		return nil, err
	}
	if f.header.Kind != kind || f.header.Stage != stage {
		return nil, fmt.Errorf("dain: -resume: %s holds a %s record of stage %s", path, f.header.Kind, f.header.Stage)
	}
	return f, nil
}

// remove deletes the record of kind for stage, if any.
func (c *checkpointer) remove(kind, stage string) error {
	if err := os.Remove(c.path(kind, stage)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("dain: checkpoint: %w", err)
	}
	return nil
}

// at calls the hook at point p.
func (c *checkpointer) at(stage string, epoch int, event string) error {
	if c == nil || c.hook == nil {
		return nil
	}
	return c.hook(CheckpointPoint{Stage: stage, Epoch: epoch, Event: event})
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
	c       *checkpointer
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
	file, err := f.c.read(kindTrain, f.stage)
	if err != nil {
		return err
	}
	if file != nil {
		var r trainRecord
		if err := file.decode("train", &r); err != nil {
			return fmt.Errorf("dain: -resume: %s: %w", f.c.path(kindTrain, f.stage), err)
		}
		bad := func(what string) error {
			return fmt.Errorf("dain: -resume: %s: %w: %s", f.c.path(kindTrain, f.stage), errNotCheckpoint, what)
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
		err = f.c.write(kindTrain, f.stage, func(w *ckWriter) {
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
		return f.c.at(f.stage, st.Epoch, "saved")
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

// saveModel records the finished model t of stage (its TracIn passes'
// scores and wall times included) and drops the stage's training state.
// fit is fitting.resume of stage (see stageCheckpoint).
func (c *checkpointer) fit(tc *nn.TrainConfig, stage, label string, shuffle *rand.PCG, accs []tracin.Accumulator, secs []float64, logf func(string, ...any), since func() float64) (float64, error) {
	f := &fitting{c: c, stage: stage, label: label, shuffle: shuffle, accs: accs, secs: secs}
	err := f.resume(tc, logf, since)
	return f.prior, err
}

func (c *checkpointer) saveModel(stage string, t *trained, seconds float64, tracinSecs []float64) error {
	if c == nil {
		return nil
	}
	if err := c.writeModel(stage, t, seconds, tracinSecs); err != nil {
		return err
	}
	return c.remove(kindTrain, stage)
}

// writeModel is saveModel without dropping the training state.
func (c *checkpointer) writeModel(stage string, t *trained, seconds float64, tracinSecs []float64) error {
	params := make([]float32, t.net.Params().Len())
	if err := t.net.Backend().Download(params, t.net.Params()); err != nil {
		return fmt.Errorf("dain: checkpoint: %w", err)
	}
	var shard []float32 // this process's rows of a sharded table
	if sr := t.net.ShardRows(); sr != nil {
		shard = make([]float32, sr.Len())
		if err := t.net.Backend().Download(shard, sr); err != nil {
			return fmt.Errorf("dain: checkpoint: %w", err)
		}
	}
	r := modelRecord{Result: t.res, RMSE: t.rmse, Seconds: seconds, TracInSeconds: tracinSecs, TracInK: make([]int, len(t.accs))}
	states := make([]tracin.State, len(t.accs))
	for i, a := range t.accs {
		var err error
		if states[i], err = a.State(); err != nil {
			return err
		}
		r.TracInK[i] = states[i].K
	}
	return c.write(kindModel, stage, func(w *ckWriter) {
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

// loadModel restores the finished model of stage into t (whose net, sets
// and accumulators are built), returning its training seconds, the TracIn
// passes' seconds and whether there was one.
func (c *checkpointer) loadModel(stage string, t *trained) (float64, []float64, bool, error) {
	if c == nil {
		return 0, nil, false, nil
	}
	file, err := c.read(kindModel, stage)
	if err != nil || file == nil {
		return 0, nil, false, err
	}
	path := c.path(kindModel, stage)
	var r modelRecord
	if err := file.decode("model", &r); err != nil {
		return 0, nil, false, fmt.Errorf("dain: -resume: %s: %w", path, err)
	}
	params, shard := file.F32["params"], file.F32["shard"]
	wantShard := 0
	if sr := t.net.ShardRows(); sr != nil {
		wantShard = sr.Len()
	}
	if len(params) != t.net.Params().Len() || len(shard) != wantShard || len(r.TracInK) != len(t.accs) || len(r.TracInSeconds) != len(t.accs) {
		return 0, nil, false, fmt.Errorf("dain: -resume: %s: %w: %d+%d parameters and %d TracIn passes, this model %d+%d and %d", path, errNotCheckpoint, len(params), len(shard), len(r.TracInK), t.net.Params().Len(), wantShard, len(t.accs))
	}
	t.net.Backend().Upload(t.net.Params(), params)
	if wantShard > 0 {
		t.net.Backend().Upload(t.net.ShardRows(), shard)
	}
	for i, a := range t.accs {
		s := file.F32[fmt.Sprintf("tracin_%d", i)]
		if err := a.Restore(tracin.State{K: r.TracInK[i], Run: s, Best: s}); err != nil {
			return 0, nil, false, fmt.Errorf("dain: -resume: %s: %w", path, err)
		}
	}
	t.res, t.rmse = r.Result, r.RMSE
	return r.Seconds, r.TracInSeconds, true, nil
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

func (c *checkpointer) saveAugmented(r augRecord, aug *tensor.COO) error {
	if c == nil {
		return nil
	}
	if err := c.write(kindAugmented, "", func(w *ckWriter) {
		w.Gob("augmented", r)
		w.I32("idx", aug.Idx)
		w.F64("val", aug.Val)
	}); err != nil {
		return err
	}
	return c.at("augmented", 0, "saved")
}

// loadAugmented returns the augmented record, nil if there is none.
func (c *checkpointer) loadAugmented() (*augRecord, *tensor.COO, error) {
	if c == nil {
		return nil, nil, nil
	}
	file, err := c.read(kindAugmented, "")
	if err != nil || file == nil {
		return nil, nil, err
	}
	if err := c.keepsNotSaved(); err != nil {
		return nil, nil, err
	}
	var r augRecord
	path := c.path(kindAugmented, "")
	if err := file.decode("augmented", &r); err != nil {
		return nil, nil, fmt.Errorf("dain: -resume: %s: %w", path, err)
	}
	aug := &tensor.COO{Dims: r.Dims, Idx: file.I32["idx"], Val: file.F64["val"]}
	if err := checkAugmented(&r, aug, c.head.Input.Dims); err != nil {
		return nil, nil, fmt.Errorf("dain: -resume: %s: %w: %v", path, errNotCheckpoint, err)
	}
	if r.NAug == 0 {
		aug.Idx, aug.Val = nil, nil // as Augment makes no cells
	}
	return &r, aug, nil
}

// fromSteps14 returns what k asks for that only steps 1–4 compute, which
// a checkpoint does not keep (the cell scores, the entity importance, the
// models Θ and Θ_p), and the flags of dainx augment that ask for each.
func (k Keep) fromSteps14() (what, flags []string) {
	if k.Scores {
		what, flags = append(what, "the cell scores"), append(flags, "-scores-out")
	}
	if k.Importance {
		what, flags = append(what, "the entity importance"), append(flags, "-importance-out")
	}
	if k.Model != nil && k.AllModels {
		what, flags = append(what, "the models Θ and Θ_p"), append(flags, "-model-out-all")
	}
	return what, flags
}

// Steps14Flags returns the flags of dainx augment (-scores-out,
// -importance-out, -model-out-all) by which k asks for what only steps 1–4
// compute: a run resumed after them cannot give it.
func (k Keep) Steps14Flags() []string {
	_, flags := k.fromSteps14()
	return flags
}

// keepsNotSaved returns, for a run that resumes after steps 1–4 (their
// record is in the checkpoint), the error that what the run was asked to
// keep of them (Config.Keep: the cell scores, the entity importance, the
// models Θ and Θ_p) is not in the checkpoint, saying whether the run
// there finished or was interrupted and exactly what to run; nil if it
// was asked for none of them.
func (c *checkpointer) keepsNotSaved() error {
	what, flags := c.cfg.Keep.fromSteps14()
	if len(what) == 0 {
		return nil
	}
	dir := c.dir
	if c.ranks != 0 {
		dir = filepath.Dir(dir)
	}
	state := "was interrupted after steps 1–4"
	resume := "to finish that run, run the same command with -resume but without " + strings.Join(flags, ", ")
	if c.finishedRun() {
		state = "finished"
		resume = "to have that run's result again, run the same command with -resume but without " + strings.Join(flags, ", ")
	}
	return fmt.Errorf("dain: -resume: the run in %s %s, and its checkpoint does not keep %s (%s), which steps 1–4 compute; %s; to have them, remove %s (or give another -checkpoint directory) and run the same command without -resume", dir, state, strings.Join(what, ", "), strings.Join(flags, ", "), resume, dir)
}

// checkAugmented reports what in the augmented record r and its cells aug
// (read from a file) cannot be a run's on an input of the given dims: a
// negative count, a total below this process's count, dims other than the
// input's, indices and values that are not NAug cells, an index outside
// its mode, a value that is not finite, or cells that tensor.COO.Validate
// refuses (a value too large, a cell twice). The field is named.
func checkAugmented(r *augRecord, aug *tensor.COO, dims []int) error {
	switch {
	case r.NAug < 0 || r.Total < 0 || r.Total > 0 && r.Total < r.NAug:
		return fmt.Errorf("n_aug %d and total %d cells", r.NAug, r.Total)
	case !slices.Equal(r.Dims, dims):
		return fmt.Errorf("dims %v; the input's are %v", r.Dims, dims)
	case len(aug.Val) != r.NAug || len(aug.Idx) != len(aug.Val)*len(dims):
		return fmt.Errorf("%d indices and %d values for %d cells of %d modes", len(aug.Idx), len(aug.Val), r.NAug, len(dims))
	}
	for i, x := range aug.Idx {
		if m := i % len(dims); x < 0 || int(x) >= dims[m] {
			return fmt.Errorf("idx: cell %d's index %d of mode %d is outside 0…%d", i/len(dims), x, m, dims[m]-1)
		}
	}
	for i, v := range aug.Val {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("val: cell %d's value %v is not finite", i, v)
		}
	}
	if len(aug.Val) > 0 {
		if err := aug.Validate(); err != nil { // magnitudes, repeated cells
			return fmt.Errorf("idx, val: %w", err)
		}
	}
	return nil
}

// stageName is the checkpoint name of training model kind with passes.
func stageName(kind string, passes []TracIn) string {
	s := "theta-" + kind
	for _, p := range passes {
		s += "." + p.passName()
	}
	return s
}
