// Package rundir is the checkpoint directory of a dainx run (dainx
// augment -checkpoint DIR; package dain's RunCheckpointed and
// RunOnCheckpointed): which files it holds and what each records, the
// header every file starts with and the checks of a resumed run against
// it, the manifest that says which kind of run wrote the directory (one
// process or P processes), the directory's lock, and the agreement of the
// processes of a run spread over them on every record. The files are
// containers of package checkpoint. What a setting means (its effective
// value, its value before it existed) is the caller's, passed in Run.
//
// Files in Checkpoint.Dir (names may change between format versions):
//
//	manifest.json       the kind of run that writes the directory (kind.go)
//	.dainx-lock         the lock of the run that holds it (lock.go)
//	<stage>.train.ckpt  the state of an unfinished training stage after its last epoch
//	<stage>.done.ckpt   a finished model Θ or Θc: parameters, result, TracIn scores
//	augmented.ckpt      the new cells and their values, and what the report needs of the steps before
//
// and, for a run over P processes, each process's own such files in
// rank-R-of-P (dist.go).
package rundir

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dainx/dainx/checkpoint"
	"github.com/dainx/dainx/internal/outtx"
	"github.com/dainx/dainx/tensor"
)

// Checkpoint names a run's checkpoint directory and how the run uses it.
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
	Hook func(Point) error
}

// Point is a point of a checkpointed run at which Checkpoint.Hook is
// called.
type Point struct {
	Stage string // theta-mlp.tracin-last, theta-costco, augmented, retrain, …
	Epoch int    // the 1-based epoch; 0 for augmented
	// Event is "trained" (the epoch's steps and validation pass ran,
	// nothing of it is saved), "tracin" (its TracIn passes ran too; only
	// in stages with TracIn) or "saved" (its checkpoint is written).
	Event string
}

// Run is what a checkpoint directory is told of the run that opens it.
type Run struct {
	// Config is every setting that changes what the run computes, as
	// flag = value (the backend's name last), recorded in every file and
	// compared with a saved file's on resume.
	Config []Field
	// Device is the backend's device, in words: a file of another device
	// is resumed with a note.
	Device string
	// Ranks is 0 for a run of one process, or else the number of
	// processes of a run over processes whose own directory
	// (rank-R-of-P) this is.
	Ranks int
	// Effective returns the value that this run resolves setting name's
	// value to (two values that resolve alike are compatible); nil: the
	// value itself.
	Effective func(name, value string) string
	// Legacy returns the value that every dainx before setting name had,
	// and false for a setting every file records: a file without it reads
	// as made with that value. nil: none.
	Legacy func(name string) (string, bool)
	// Unkept lists what the run was asked to keep that only the steps
	// before the new cells compute, which a checkpoint does not keep (the
	// cell scores, …), and UnkeptFlags the flags that ask for it: a run
	// resumed after those steps is refused while it lists any.
	Unkept, UnkeptFlags []string
	// Logf logs a line (the notes of a resumed run); nil: none.
	Logf func(string, ...any)
}

// Dir is the checkpoint directory of a running run (Open). Every method
// does nothing (and finds nothing) on a nil *Dir: a run without a
// checkpoint.
type Dir struct {
	dir     string
	head    Header // this run's; Kind and Stage set per file
	run     Run
	hook    func(Point) error
	pending bool // training states go to the pending file (see path)

	release  func() // the directory's lock (Lock)
	manifest string // the manifest of the run (for a rank, the job's)
	created  bool   // this run made the directory
	finished bool   // the run returned its result (Done)
}

// ErrExists is returned (wrapped) when a run without Resume finds a
// checkpoint in its directory.
var ErrExists = errors.New("the checkpoint directory already holds a checkpoint")

// New returns the directory dir of a run whose files have the header head
// (Kind and Stage set per file), not opened: it takes no lock and checks
// nothing on disk. It is for reading and comparing records, as tests do;
// a run opens its directory with Open.
func New(dir string, head Header, run Run) *Dir {
	if run.Logf == nil {
		run.Logf = func(string, ...any) {}
	}
	return &Dir{dir: dir, head: head, run: run}
}

// Open prepares ck.Dir for run on input x (the whole tensor, or this
// process's share): it creates it, takes its lock (Lock), removes
// temporary files a killed run left, and, with Resume, checks that every
// file there belongs to this configuration and input (an error names the
// first difference); without Resume it refuses a directory that holds a
// checkpoint (ErrExists, saying whether a finished, an interrupted or
// another run wrote it). run.Ranks is 0 for a run of one process, which
// first checks that no other kind of run wrote ck.Dir (ErrKind) and
// records its own kind there; or the number of processes of a run over
// processes whose own directory (rank-R-of-P) ck.Dir is, whose kind
// OpenDist has checked. The Dir must be closed (Close).
func Open(ck *Checkpoint, run Run, x *tensor.COO) (c *Dir, err error) {
	if ck.Dir == "" {
		return nil, fmt.Errorf("dain: checkpoint directory not given")
	}
	logf := run.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	_, statErr := os.Stat(ck.Dir)
	created := errors.Is(statErr, os.ErrNotExist)
	if err := os.MkdirAll(ck.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("dain: checkpoint directory: %w", err)
	}
	// The directory is this run's until it returns (lock.go).
	release, err := Lock(ck.Dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	var have ckKind
	if run.Ranks == 0 {
		var err error
		if have, err = checkpointKind(ck.Dir); err == nil {
			err = checkKind(ck.Dir, have, ckKind{kind: ckSingle})
		}
		if err != nil {
			return nil, err
		}
	}
	c = New(ck.Dir, Header{Dainx: ck.Program, Config: run.Config, Backend: run.Device}, run)
	c.hook, c.release, c.created = ck.Hook, release, created
	if run.Ranks == 0 {
		c.manifest = filepath.Join(ck.Dir, ckManifestName)
	} else {
		c.manifest = filepath.Join(filepath.Dir(ck.Dir), ckManifestName)
	}
	// Temporaries a killed run left (no other run writes here: the lock).
	sweep(ck.Dir)
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
	c.head.Input = Fingerprint(x, ck.Input)
	if len(files) > 0 && !ck.Resume {
		return nil, c.existing(ck.Dir, files)
	}
	if ck.Resume && len(files) == 0 {
		logf("checkpoint: %s holds no checkpoint yet; starting from the beginning", ck.Dir)
	}
	var notes []string
	for _, name := range files {
		f, err := ReadFile(filepath.Join(ck.Dir, name), "header")
		if err != nil {
			return nil, fmt.Errorf("dain: -resume: %w", err)
		}
		if err := c.Compatible(f.Header, filepath.Join(ck.Dir, name)); err != nil {
			return nil, err
		}
		if h := f.Header; h.Dainx != c.head.Dainx || h.Backend != c.head.Backend {
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
	if run.Ranks == 0 && filepath.Base(have.from) != ckManifestName {
		// Recorded once the directory is accepted and before any
		// checkpoint file: a later run of another kind finds it even if
		// this one is killed before its first epoch.
		if err := writeCkManifest(ck.Dir, ckManifest{Kind: ckSingle, Dainx: ck.Program, Input: ck.Input, Cells: x.NNZ()}); err != nil {
			return nil, fmt.Errorf("dain: checkpoint: %w", err)
		}
	}
	return c, nil
}

// sweep removes from the checkpoint directory dir the temporaries of
// killed runs: those of dead processes (outtx.Sweep), and those of a dainx
// that named them .NAME.tmp-N.
func sweep(dir string) {
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
// sentinel kind: ErrExists, ErrInUse, ErrKind.
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
func (c *Dir) finishedRun() bool {
	if c == nil {
		return false
	}
	m, err := readCkManifest(c.manifest)
	return err == nil && m.Finished
}

// existing is the error of a run without Resume on the checkpoint files
// in dir (ErrExists): it says whether they are a finished run's, an
// interrupted run's of this input and flags, or another run's, and what
// to run.
func (c *Dir) existing(dir string, files []string) error {
	afresh := fmt.Sprintf("to start afresh, remove %s or give another -checkpoint directory", dir)
	for _, name := range files {
		f, err := ReadFile(filepath.Join(dir, name), "header")
		if err != nil {
			return kindErrorf(ErrExists, "dain: %s holds %s, which is not a checkpoint this dainx can read (%v); %s", dir, name, err, afresh)
		}
		if diff := c.difference(f.Header, filepath.Join(dir, name)); diff != "" {
			return kindErrorf(ErrExists, "dain: %s holds the checkpoint of another run (%s); %s", dir, diff, afresh)
		}
	}
	if c.finishedRun() {
		return kindErrorf(ErrExists, "dain: %s holds the checkpoint of a finished run of this input and flags; the same command with -resume gives its result again from there; %s", dir, afresh)
	}
	return kindErrorf(ErrExists, "dain: %s holds the checkpoint of an interrupted run of this input and flags (%s); to continue it, run the same command with -resume; %s", dir, strings.Join(files, ", "), afresh)
}

// Done records in the manifest that the run finished (its result is
// whole), for the messages of later runs on the directory. An error is
// the manifest's that could not be written.
func (c *Dir) Done() error {
	if c == nil {
		return nil
	}
	c.finished = true
	if c.run.Ranks != 0 {
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

// Close releases the checkpoint directory's lock. A directory this run
// made and left without a checkpoint file (it failed before its first
// epoch was saved) is removed: a failed command leaves no empty
// checkpoint directory behind.
func (c *Dir) Close() {
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
		if empty && c.run.Ranks == 0 {
			os.Remove(filepath.Join(c.dir, ckManifestName))
		}
	}
	c.release()
	c.release = nil
	if empty {
		os.Remove(c.dir) // fails if another run has taken it since
	}
}

// effective is Run.Effective, or the value itself.
func (c *Dir) effective(name, value string) string {
	if c.run.Effective == nil {
		return value
	}
	return c.run.Effective(name, value)
}

// Compatible returns an error naming the first difference between the
// saved header h (of file path) and this run's, or nil: another input
// (its fingerprint), a setting of another effective value (Run.Effective;
// a setting h lacks by its Run.Legacy value), or a setting this run does
// not have.
func (c *Dir) Compatible(h Header, path string) error {
	if diff := c.difference(h, path); diff != "" {
		return fmt.Errorf("dain: -resume: %s; resume with the same input and flags, or start afresh with another -checkpoint directory", diff)
	}
	return nil
}

// difference names the first difference between the saved header h (of
// file path) and this run's, or returns "".
func (c *Dir) difference(h Header, path string) string {
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
		if !ok && c.run.Legacy != nil {
			if v, ok = c.run.Legacy(f.Name); ok {
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
// written its own (Dist).
func (c *Dir) path(kind, stage string) string {
	if kind == KindTrain && c.pending {
		return filepath.Join(c.dir, stage+".train-pending.ckpt")
	}
	if kind == KindAugmented {
		return filepath.Join(c.dir, "augmented.ckpt")
	}
	return filepath.Join(c.dir, stage+"."+map[string]string{KindTrain: "train", KindModel: "done"}[kind]+".ckpt")
}

// write writes the record of kind for stage atomically, its sections
// written by body.
func (c *Dir) write(kind, stage string, body func(w *checkpoint.Writer)) error {
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
func (c *Dir) read(kind, stage string) (*File, error) {
	path := c.path(kind, stage)
	f, err := ReadFile(path, "")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dain: -resume: %w", err)
	}
	if err := c.Compatible(f.Header, path); err != nil {
		return nil, err
	}
	if f.Header.Kind != kind || f.Header.Stage != stage {
		return nil, fmt.Errorf("dain: -resume: %s holds a %s record of stage %s", path, f.Header.Kind, f.Header.Stage)
	}
	return f, nil
}

// remove deletes the record of kind for stage, if any.
func (c *Dir) remove(kind, stage string) error {
	if err := os.Remove(c.path(kind, stage)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("dain: checkpoint: %w", err)
	}
	return nil
}

// At calls Checkpoint.Hook at the point (stage, epoch, event), returning
// its error.
func (c *Dir) At(stage string, epoch int, event string) error {
	if c == nil || c.hook == nil {
		return nil
	}
	return c.hook(Point{Stage: stage, Epoch: epoch, Event: event})
}
