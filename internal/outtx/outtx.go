// Package outtx makes the outputs of one command a single transaction:
// they are all written or none is, none of them is one of the command's
// inputs, and every error names the path the user gave.
//
// A command builds a Tx before any long work: it names its inputs (Input,
// InputDir) and its outputs (File, Dir). Each output path is resolved
// (symlinks followed, so a symlink keeps pointing at the new contents), and
// refused if it is the same file as an input or another output, lies inside
// a directory output where that directory's files go, or cannot be written
// (a probe file is created and removed in its directory). After the work,
// File.Write and Dir.Path stage each output beside its target (a hidden
// temporary file or directory in the same directory, so that the final
// rename is atomic); Commit then moves them all into place, keeping the
// files they replace until every rename succeeded. If any step fails,
// Commit puts the replaced files back and removes what this run created;
// Abort (deferred by the caller) removes whatever was staged. Only an
// output that is not a regular file (a device, a pipe: /dev/stdout, also
// into a pipe, a named pipe) is written directly, at Write, through the
// path given: no transaction is possible for it, and its directory is not
// probed.
//
// Temporaries carry the output's name and the owning process
// (.NAME.dainx-tmp-PID-HOST-RANDOM, temp.go); registering an output first
// removes those of it that a killed command left (Sweep), never those of
// a process that still runs.
//
// A directory output (a model directory, a split directory) ends holding
// exactly this run's files of the names it owns: files of those names that
// this run did not write are removed with the old run's, and files of other
// names are left alone.
package outtx

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Tx is the set of inputs and outputs of one command. The zero value is not
// usable; call New. A Tx is not safe for concurrent use.
type Tx struct {
	inputs []input
	outs   []*entry
	done   bool
	err    error // an input found to clash with an output registered before it
}

type input struct {
	user, target string
	info         os.FileInfo // nil when the path does not exist (yet)
	dir          bool
}

type entry struct {
	user   string // the path the user gave
	target string // absolute, symlinks resolved
	info   os.FileInfo
	dir    bool
	owns   func(name string) bool // a directory's own file names
	last   bool                   // committed after every other output

	special bool   // an existing non-regular file: written in place
	staged  string // the temporary beside target, once written
	mode    os.FileMode

	// Commit's record, for the rollback.
	backup  string   // the replaced file (or directory's files) kept until the end
	moved   []string // for a directory output that existed: names moved in
	created bool     // target did not exist before Commit
}

// New returns an empty transaction.
func New() *Tx { return &Tx{} }

// Input records path, a file the command reads, so that no output may be
// it. A path that does not exist is recorded by name only (the command's
// own read reports it). An empty path is ignored.
func (t *Tx) Input(path string) error {
	return t.addInput(path, false)
}

// InputDir records every file in the directory path (not recursively) as
// an input: a saved model's directory, whose files no output may replace.
func (t *Tx) InputDir(path string) error {
	return t.addInput(path, true)
}

func (t *Tx) addInput(path string, dir bool) error {
	if path == "" {
		return nil
	}
	target, err := resolve(path)
	if err != nil {
		target = path
		if errors.Is(err, errLoop) {
			err = fmt.Errorf("cannot read %s: %v", path, err)
			if t.err == nil {
				t.err = err
			}
			return err
		}
	}
	in := input{user: path, target: target, dir: dir}
	if st, err := os.Stat(target); err == nil {
		in.info = st
		if st.IsDir() {
			in.dir = true
		}
	}
	t.inputs = append(t.inputs, in)
	// Outputs registered before this input are checked against it too.
	for _, e := range t.outs {
		if why := e.clashesWithInput(in); why != "" {
			err := fmt.Errorf("cannot write %s: %s", e.user, why)
			if t.err == nil {
				t.err = err
			}
			return err
		}
	}
	return nil
}

// File registers path as an output file and checks it (see the package
// doc). Errors say "cannot write PATH: why", with PATH as given. An empty
// path returns a nil *File, whose Write does nothing.
func (t *Tx) File(path string) (*File, error) {
	return t.file(path, false)
}

// Report registers path as the command's report: an output file that
// Commit moves into place after every other output, so that a report on
// disk always describes outputs that are there.
func (t *Tx) Report(path string) (*File, error) {
	return t.file(path, true)
}

func (t *Tx) file(path string, last bool) (*File, error) {
	if path == "" {
		return nil, nil
	}
	e, err := t.add(path, false, nil)
	if err != nil {
		return nil, err
	}
	e.last = last
	return &File{tx: t, e: e}, nil
}

// Dir registers path as an output directory whose files are the names owns
// accepts (nil: every name). The directory may exist (holding an older
// run's files, replaced at Commit, and other files, kept) or not (its
// parent must exist).
func (t *Tx) Dir(path string, owns func(name string) bool) (*Dir, error) {
	if path == "" {
		return nil, nil
	}
	if owns == nil {
		owns = func(string) bool { return true }
	}
	e, err := t.add(path, true, owns)
	if err != nil {
		return nil, err
	}
	return &Dir{tx: t, e: e}, nil
}

// Paths returns the outputs' paths as the user gave them, in the order
// they were registered.
func (t *Tx) Paths() []string {
	var ps []string
	for _, e := range t.outs {
		ps = append(ps, e.user)
	}
	return ps
}

func (t *Tx) add(path string, dir bool, owns func(string) bool) (*entry, error) {
	if t.err != nil {
		return nil, t.err
	}
	fail := func(format string, args ...any) (*entry, error) {
		return nil, fmt.Errorf("cannot write %s: "+format, append([]any{path}, args...)...)
	}
	// A device or a pipe (/dev/stdout, /dev/stderr, /dev/null, a named
	// pipe) is written in place, through the path as given: no temporary
	// can replace it, and its directory (/proc/PID/fd for a pipe behind
	// /dev/stdout) need not be writable.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		if dir {
			return fail("it exists and is not a directory")
		}
		e := &entry{user: path, target: path, info: st, special: true}
		if err := t.checkClashes(e); err != nil {
			return nil, err
		}
		t.outs = append(t.outs, e)
		return e, nil
	}
	target, err := resolve(path)
	if err != nil {
		return fail("%v", Bare(err))
	}
	e := &entry{user: path, target: target, dir: dir, owns: owns, mode: 0o644}
	parent := filepath.Dir(target)
	if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		if err := t.checkClashes(e); err != nil {
			return nil, err // inside a directory output yet to be made
		}
		why := "does not exist"
		if err == nil || errors.Is(err, syscall.ENOTDIR) {
			why = "is not a directory"
		}
		if lst, lerr := os.Lstat(path); lerr == nil && lst.Mode()&os.ModeSymlink != 0 {
			link, _ := os.Readlink(path)
			if link != target {
				link += " (" + target + ")"
			}
			return fail("it is a symbolic link to %s, whose directory %s %s", link, parent, why)
		}
		return fail("directory %s %s", filepath.Dir(filepath.Clean(path)), why)
	}
	if st, err := os.Stat(target); err == nil {
		e.info = st
		switch {
		case dir && !st.IsDir():
			return fail("it exists and is not a directory")
		case !dir && st.IsDir():
			return fail("it is a directory")
		case !dir && !st.Mode().IsRegular():
			e.special = true
		case !dir:
			e.mode = st.Mode().Perm()
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail("%v", Bare(err))
	}
	if err := t.checkClashes(e); err != nil {
		return nil, err
	}
	if !e.special {
		// What a killed command left of this output goes first (its
		// probes too, below).
		Sweep(parent, filepath.Base(target))
		probeDir := parent
		if dir && e.info != nil {
			probeDir = target
			Sweep(target, probeTag)
		}
		if err := probe(probeDir); err != nil {
			return fail("%v", err)
		}
		if dir && e.info != nil {
			// The parent holds the staged directory and the old files.
			if err := probe(parent); err != nil {
				return fail("%v", err)
			}
		}
	}
	t.outs = append(t.outs, e)
	return e, nil
}

// checkClashes returns the error of output e against the inputs and the
// outputs registered so far, or nil.
func (t *Tx) checkClashes(e *entry) error {
	for _, in := range t.inputs {
		if why := e.clashesWithInput(in); why != "" {
			return fmt.Errorf("cannot write %s: %s", e.user, why)
		}
	}
	for _, o := range t.outs {
		if why := e.clashesWithOutput(o); why != "" {
			return fmt.Errorf("cannot write %s: %s", e.user, why)
		}
	}
	return nil
}

// clashesWithInput says why e may not be written given input in, or "".
// An output the same file as the input is refused, whatever its name
// (through a symbolic link or a hard link); so is a directory output
// holding, among the files of its names, one that is the input.
func (e *entry) clashesWithInput(in input) string {
	if e.special && e.info.Mode()&os.ModeCharDevice != 0 {
		return "" // a terminal, /dev/null: writing it reads no input away
	}
	same := func(info os.FileInfo, target string) bool {
		if e.info != nil && info != nil {
			return os.SameFile(e.info, info)
		}
		return target == e.target
	}
	if !e.dir {
		if in.dir {
			if in.info != nil && same(in.info, in.target) {
				return fmt.Sprintf("it is the input directory %s", in.user)
			}
			if filepath.Dir(e.target) == in.target || (in.info != nil && sameDir(filepath.Dir(e.target), in.info)) {
				if fileIn(in.target, filepath.Base(e.target)) {
					return fmt.Sprintf("it is a file of the input %s, which this command reads", in.user)
				}
			}
			if e.info != nil {
				if name := linkIn(in.target, e.info); name != "" {
					return fmt.Sprintf("it is %s of the input %s under another name (a hard link), which this command reads", filepath.Join(in.user, name), in.user)
				}
			}
			return ""
		}
		if same(in.info, in.target) {
			if e.info != nil && in.info != nil && e.target != in.target && !isLinkTo(e.user, in.target) {
				return fmt.Sprintf("it is the input %s under another name (a hard link), which this command reads", in.user)
			}
			return fmt.Sprintf("it is the input %s, which this command reads", in.user)
		}
		return ""
	}
	// A directory output: the input must not be the directory, nor one of
	// the files of the names it owns.
	if in.info != nil && e.info != nil && os.SameFile(in.info, e.info) || in.target == e.target {
		return fmt.Sprintf("it is the input %s, which this command reads", in.user)
	}
	if !in.dir && filepath.Dir(in.target) == e.target && e.owns(filepath.Base(in.target)) {
		return fmt.Sprintf("it holds the input %s, which this command would replace", in.user)
	}
	if in.dir && strings.HasPrefix(e.target+string(filepath.Separator), in.target+string(filepath.Separator)) {
		return fmt.Sprintf("it lies inside the input %s", in.user)
	}
	if e.info != nil && in.info != nil {
		// A file of the directory's names that is the input (or a file of
		// the input directory) under another name.
		es, _ := os.ReadDir(e.target)
		for _, de := range es {
			if !e.owns(de.Name()) || !de.Type().IsRegular() {
				continue
			}
			st, err := os.Stat(filepath.Join(e.target, de.Name()))
			if err != nil {
				continue
			}
			switch {
			case !in.dir && os.SameFile(st, in.info):
				return fmt.Sprintf("its file %s is the input %s under another name (a hard link), which this command would replace", de.Name(), in.user)
			case in.dir:
				if name := linkIn(in.target, st); name != "" {
					return fmt.Sprintf("its file %s is %s of the input %s under another name (a hard link), which this command would replace", de.Name(), filepath.Join(in.user, name), in.user)
				}
			}
		}
	}
	return ""
}

// linkIn returns the name of the regular file in dir that is info's file,
// or "".
func linkIn(dir string, info os.FileInfo) string {
	es, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, de := range es {
		if !de.Type().IsRegular() {
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, de.Name())); err == nil && os.SameFile(st, info) {
			return de.Name()
		}
	}
	return ""
}

// isLinkTo reports whether path reaches target through symbolic links.
func isLinkTo(path, target string) bool {
	r, err := resolve(path)
	return err == nil && r == target
}

// InsideDir returns the error of registering the output file path beside
// the output directory dir whose files are the names owns accepts (nil:
// every name), when dir fills path; else nil. A command that registers
// its files before its directories calls it first, so that a file inside
// a directory yet to be made is named as such rather than as a missing
// directory.
func InsideDir(path, dir string, owns func(string) bool) error {
	if path == "" || dir == "" {
		return nil
	}
	f, err1 := resolve(path)
	d, err2 := resolve(dir)
	if err1 != nil || err2 != nil || filepath.Dir(f) != d || owns != nil && !owns(filepath.Base(f)) {
		return nil
	}
	return fmt.Errorf("cannot write %s: it is the file %s of the output directory %s, which this command fills", path, filepath.Base(f), dir)
}

// clashesWithOutput says why e may not be written beside output o, or "".
func (e *entry) clashesWithOutput(o *entry) string {
	if e.special && e.info.Mode()&os.ModeCharDevice != 0 || o.special && o.info.Mode()&os.ModeCharDevice != 0 {
		return "" // two outputs on a terminal or /dev/null
	}
	if e.target == o.target || (e.info != nil && o.info != nil && os.SameFile(e.info, o.info)) {
		return fmt.Sprintf("it is also the output %s", o.user)
	}
	inside := func(file, dir *entry) bool {
		return !file.dir && dir.dir && filepath.Dir(file.target) == dir.target && dir.owns(filepath.Base(file.target))
	}
	switch {
	case inside(e, o):
		return fmt.Sprintf("it is the file %s of the output directory %s, which this command fills", filepath.Base(e.target), o.user)
	case inside(o, e):
		return fmt.Sprintf("the output %s is its file %s, which this command fills", o.user, filepath.Base(o.target))
	}
	if e.dir && o.dir {
		a, b := e.target+string(filepath.Separator), o.target+string(filepath.Separator)
		if strings.HasPrefix(a, b) || strings.HasPrefix(b, a) {
			return fmt.Sprintf("it nests with the output directory %s", o.user)
		}
	}
	return ""
}

func sameDir(path string, info os.FileInfo) bool {
	st, err := os.Stat(path)
	return err == nil && os.SameFile(st, info)
}

func fileIn(dir, name string) bool {
	st, err := os.Stat(filepath.Join(dir, name))
	return err == nil && st.Mode().IsRegular()
}

// probe creates and removes a file in dir.
func probe(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%s%s-%016x", probeTag, owner(), rand.Uint64())), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("directory %s is not writable (%v)", dir, Bare(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// errLoop is resolve's error for a path whose symbolic links never end.
var errLoop = errors.New("too many levels of symbolic links")

// resolve returns path made absolute with every symlink followed, also a
// final symlink whose target does not exist yet (up to 40 links).
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	for hops := 0; ; hops++ {
		if hops > 40 {
			return "", errLoop
		}
		dir, base := filepath.Split(abs)
		rdir, err := filepath.EvalSymlinks(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return abs, nil // the caller reports the missing directory
			}
			if errors.Is(err, syscall.ELOOP) || strings.Contains(err.Error(), "too many links") {
				return "", errLoop
			}
			return "", err
		}
		abs = filepath.Join(rdir, base)
		st, err := os.Lstat(abs)
		if err != nil || st.Mode()&os.ModeSymlink == 0 {
			return abs, nil
		}
		link, err := os.Readlink(abs)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(rdir, link)
		}
		abs = filepath.Clean(link)
	}
}

// Bare returns err without the path of an *os.PathError or *os.LinkError
// (a temporary's name means nothing to the user).
func Bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// File is an output file of a Tx.
type File struct {
	tx *Tx
	e  *entry
}

// Path returns the path as the user gave it ("" for a nil File).
func (f *File) Path() string {
	if f == nil {
		return ""
	}
	return f.e.user
}

// Write stages the file's contents: fill writes them to a temporary file
// beside the target (or, for a device or pipe, to the target itself),
// which Commit renames into place. A second Write replaces the first. On a
// nil File it does nothing. Errors name the user's path.
func (f *File) Write(fill func(w io.Writer) error) error {
	if f == nil {
		return nil
	}
	e := f.e
	fail := func(err error) error { return fmt.Errorf("cannot write %s: %w", e.user, Bare(err)) }
	if e.special {
		w, err := os.OpenFile(e.target, os.O_WRONLY, 0)
		if err != nil {
			return fail(err)
		}
		if err := fill(w); err != nil {
			w.Close()
			return fail(err)
		}
		if err := w.Close(); err != nil {
			return fail(err)
		}
		return nil
	}
	if e.staged != "" {
		os.Remove(e.staged)
		e.staged = ""
	}
	tmp, err := CreateTemp(filepath.Dir(e.target), filepath.Base(e.target))
	if err != nil {
		return fail(err)
	}
	err = fill(tmp)
	if err == nil {
		err = tmp.Chmod(e.mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fail(err)
	}
	e.staged = tmp.Name()
	return nil
}

// Target returns the file Commit writes: the user's path made absolute,
// symlinks followed ("" for a nil File). Callers that stage the file
// themselves (Adopt) write beside it.
func (f *File) Target() string {
	if f == nil {
		return ""
	}
	return f.e.target
}

// Adopt takes tmp, a file the caller wrote in the target's directory (such
// as tensor.StageFileParallel's), as this output's staged contents:
// Commit renames it into place and Abort removes it. An empty tmp (the
// output was written in place) adopts nothing. It is an error if tmp is
// in another directory (a rename would not be atomic).
func (f *File) Adopt(tmp string) error {
	if f == nil || tmp == "" {
		return nil
	}
	e := f.e
	if filepath.Dir(tmp) != filepath.Dir(e.target) {
		os.Remove(tmp)
		return fmt.Errorf("cannot write %s: its staged file %s is not in %s", e.user, tmp, filepath.Dir(e.target))
	}
	if e.staged != "" {
		os.Remove(e.staged)
	}
	e.staged = tmp
	return nil
}

// Dir is an output directory of a Tx.
type Dir struct {
	tx *Tx
	e  *entry
}

// Path returns the directory where the command writes this output's files
// now: a temporary directory beside the target, made on the first call,
// which Commit moves into place. Errors name the user's path.
func (d *Dir) Path() (string, error) {
	e := d.e
	if e.staged != "" {
		return e.staged, nil
	}
	tmp, err := MkdirTemp(filepath.Dir(e.target), filepath.Base(e.target))
	if err != nil {
		return "", fmt.Errorf("cannot write %s: %w", e.user, Bare(err))
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("cannot write %s: %w", e.user, Bare(err))
	}
	e.staged = tmp
	return tmp, nil
}

// UserPath returns the directory as the user gave it.
func (d *Dir) UserPath() string { return d.e.user }

// Abort removes every staged output that Commit has not moved into place.
// It is safe to call more than once and after Commit (then it does
// nothing), so callers defer it.
func (t *Tx) Abort() {
	if t.done {
		return
	}
	for _, e := range t.outs {
		if e.staged != "" {
			os.RemoveAll(e.staged)
			e.staged = ""
		}
	}
}

// Commit moves every staged output into place: the files first, in the
// order they were registered, the Report last. An output never staged is
// left as it was. If a rename fails, the outputs already moved are taken
// back (replaced files restored, new ones removed), every temporary is
// removed and the error names the user's path. Commit may be called once.
func (t *Tx) Commit() (err error) {
	if t.done {
		return errors.New("outtx: Commit called twice")
	}
	if t.err != nil {
		t.Abort()
		return t.err
	}
	var order []*entry
	for _, e := range t.outs {
		if !e.last {
			order = append(order, e)
		}
	}
	for _, e := range t.outs {
		if e.last {
			order = append(order, e)
		}
	}
	var moved []*entry
	defer func() {
		if err != nil {
			for i := len(moved) - 1; i >= 0; i-- {
				moved[i].undo()
			}
			t.Abort()
		}
		t.done = true
		for _, e := range moved {
			if err == nil {
				e.drop()
			}
		}
	}()
	for _, e := range order {
		if e.staged == "" || e.special {
			continue
		}
		var merr error
		if commitHook != nil {
			merr = commitHook(e.user)
		}
		if merr != nil {
		} else if e.dir {
			merr = e.commitDir()
		} else {
			merr = e.commitFile()
		}
		if merr != nil {
			e.undo() // a directory may be half moved
			return fmt.Errorf("cannot write %s: %w", e.user, Bare(merr))
		}
		moved = append(moved, e)
	}
	return nil
}

// commitFile renames the staged file over the target, keeping the old one
// (as a hard link, or renamed aside where links fail) until the end.
func (e *entry) commitFile() error {
	if _, err := os.Lstat(e.target); err == nil {
		bk := backupName(e.target)
		if err := os.Link(e.target, bk); err != nil {
			if err := os.Rename(e.target, bk); err != nil {
				return err
			}
		}
		e.backup = bk
	} else {
		e.created = true
	}
	if err := os.Rename(e.staged, e.target); err != nil {
		e.created = false
		if e.backup != "" {
			os.Rename(e.backup, e.target)
			e.backup = ""
		}
		return err
	}
	e.staged = ""
	SyncDir(filepath.Dir(e.target))
	return nil
}

// commitDir moves the staged directory into place: whole when the target
// does not exist, else file by file, the old files of the owned names
// moved into a backup directory first.
func (e *entry) commitDir() error {
	if _, err := os.Lstat(e.target); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(e.staged, e.target); err != nil {
			return err
		}
		e.staged, e.created = "", true
		SyncDir(filepath.Dir(e.target))
		return nil
	}
	old, err := os.ReadDir(e.target)
	if err != nil {
		return err
	}
	bk := oldName(e.target)
	if err := os.Mkdir(bk, 0o700); err != nil {
		return err
	}
	e.backup = bk
	for _, de := range old {
		if !e.owns(de.Name()) || de.IsDir() {
			continue
		}
		if err := os.Rename(filepath.Join(e.target, de.Name()), filepath.Join(bk, de.Name())); err != nil {
			return err
		}
	}
	news, err := os.ReadDir(e.staged)
	if err != nil {
		return err
	}
	for _, de := range news {
		if err := os.Rename(filepath.Join(e.staged, de.Name()), filepath.Join(e.target, de.Name())); err != nil {
			return err
		}
		e.moved = append(e.moved, de.Name())
	}
	os.Remove(e.staged)
	e.staged = ""
	SyncDir(e.target)
	return nil
}

// undo takes back a committed output.
func (e *entry) undo() {
	switch {
	case e.dir && e.created:
		os.RemoveAll(e.target)
	case e.dir:
		for _, n := range e.moved {
			os.Remove(filepath.Join(e.target, n))
		}
		if e.backup != "" {
			if olds, err := os.ReadDir(e.backup); err == nil {
				for _, de := range olds {
					os.Rename(filepath.Join(e.backup, de.Name()), filepath.Join(e.target, de.Name()))
				}
			}
			os.RemoveAll(e.backup)
		}
	case e.created:
		os.Remove(e.target)
	case e.backup != "":
		os.Rename(e.backup, e.target)
	}
	e.backup, e.moved = "", nil
}

// drop removes what a successful Commit kept for the rollback.
func (e *entry) drop() {
	if e.backup != "" {
		os.RemoveAll(e.backup)
		e.backup = ""
	}
}

// commitHook, when set, runs before each output is moved into place; an
// error from it fails the Commit there (SetCommitHook).
var commitHook func(userPath string) error

// SetCommitHook makes every later Commit call hook(path) before it moves
// the output the user named path into place, and fail there if hook
// returns an error; nil removes the hook. It exists for tests that check
// what a failure late in a command leaves behind; it is not safe for
// concurrent use.
func SetCommitHook(hook func(userPath string) error) { commitHook = hook }

// backupName returns an unused name beside target for the file it replaces.
func backupName(target string) string { return oldName(target) }

// SyncDir makes the renames in dir durable where the OS supports it
// (fsync of the directory); failures are ignored, since the renames
// themselves already succeeded.
func SyncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}
