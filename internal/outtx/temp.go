package outtx

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Temporaries. Every file or directory dainx stages beside an output (or
// in a checkpoint directory) is named after the output and its owner:
//
//	.NAME.dainx-tmp-PID-HOST-RANDOM  the new contents, renamed over NAME at the end
//	.NAME.dainx-old-PID-HOST-RANDOM  the replaced NAME, kept until every output is in place
//	.dainx-probe-PID-HOST-RANDOM     a probe that the directory is writable
//
// PID is the owning process, HOST eight hex digits of its host's name (so
// that a directory shared between machines is swept by each machine of its
// own processes only) and RANDOM makes the name unique. A process killed
// (SIGKILL) while it writes leaves its temporaries; the next command that
// writes the same output, or opens the same checkpoint directory, removes
// them (Sweep) once their owner is gone, and never while it runs.

const (
	tmpTag   = ".dainx-tmp-"
	oldTag   = ".dainx-old-"
	probeTag = ".dainx-probe-"
)

// hostCRC and hostTag are this machine's tag in temporaries' names.
var (
	hostCRC = func() uint32 {
		h, _ := os.Hostname()
		return crc32.ChecksumIEEE([]byte(h))
	}()
	hostTag = fmt.Sprintf("%08x", hostCRC)
)

// owner returns the tag of a temporary owned by this process.
func owner() string { return strconv.Itoa(os.Getpid()) + "-" + hostTag }

// TempName returns a new name, in dir, for a temporary that stages the
// output dir/name (a file or directory of that name): the name carries
// this process's PID (see the package's Temporaries). Nothing is created.
func TempName(dir, name string) string {
	return TempNameFor(dir, name, os.Getpid(), hostCRC, rand.Uint64())
}

// Owner returns this process's PID and its machine's tag, for another
// process that names a temporary this one owns (TempNameFor).
func Owner() (pid int, host uint32) { return os.Getpid(), hostCRC }

// TempNameFor is TempName for a temporary owned by process pid of the
// machine tagged host (Owner), made unique by r.
func TempNameFor(dir, name string, pid int, host uint32, r uint64) string {
	return filepath.Join(dir, fmt.Sprintf(".%s%s%d-%08x-%016x", name, tmpTag, pid, host, r))
}

// oldName returns a new name for the file target replaced at Commit.
func oldName(target string) string {
	return filepath.Join(filepath.Dir(target), fmt.Sprintf(".%s%s%s-%016x", filepath.Base(target), oldTag, owner(), rand.Uint64()))
}

// CreateTemp creates a new temporary file in dir for the output dir/name
// (TempName), opened for writing, mode 0600.
func CreateTemp(dir, name string) (*os.File, error) {
	for try := 0; ; try++ {
		p := TempName(dir, name)
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, err
	}
}

// MkdirTemp creates a new temporary directory in dir for the output
// directory dir/name (TempName) and returns its path.
func MkdirTemp(dir, name string) (string, error) {
	for try := 0; ; try++ {
		p := TempName(dir, name)
		err := os.Mkdir(p, 0o700)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return p, err
	}
}

// IsTemp reports whether base (a file name) is a dainx temporary: a staged
// output, a replaced file kept for a rollback, or a probe.
func IsTemp(base string) bool {
	_, _, ok := parseTemp(base)
	return ok
}

// parseTemp splits a temporary's name into what it stages ("" for a
// probe), its kind (tmpTag, oldTag or probeTag) and reports whether it is
// one of this machine's, with pid its owner.
func parseTempOwner(base string) (name, kind string, pid int, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(base, probeTag):
		kind, rest = probeTag, base[len(probeTag):]
	case strings.HasPrefix(base, "."):
		for _, k := range []string{tmpTag, oldTag} {
			if i := strings.LastIndex(base, k); i > 1 {
				name, kind, rest = base[1:i], k, base[i+len(k):]
				break
			}
		}
		if kind == "" {
			return "", "", 0, false
		}
	default:
		return "", "", 0, false
	}
	f := strings.Split(rest, "-")
	if len(f) != 3 || len(f[1]) != 8 || len(f[2]) != 16 {
		return "", "", 0, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return "", "", 0, false
	}
	if f[1] != hostTag {
		return name, kind, 0, true // another machine's: its owner cannot be checked here
	}
	return name, kind, pid, true
}

func parseTemp(base string) (name, kind string, ok bool) {
	name, kind, _, ok = parseTempOwner(base)
	return name, kind, ok
}

// alive reports whether process pid may still run: kill(pid, 0) does not
// fail with ESRCH. A process of another user (EPERM) is alive.
func alive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}

// Stale reports whether base is a dainx temporary whose owner, a process
// of this machine, is gone.
func Stale(base string) bool {
	_, _, pid, ok := parseTempOwner(base)
	return ok && pid > 0 && !alive(pid)
}

// Sweep removes from dir the temporaries of the output dir/name that a
// process killed while writing left: staged contents, probes, and the
// replaced file a Commit kept (put back as dir/name when dir/name is
// missing, since the kill then came between the two renames). A
// temporary whose owner still runs (another command writing the same
// output) is left alone. With name "", every stale temporary in dir is
// removed. Errors are ignored: a temporary that cannot be removed now is
// removed by a later command.
func Sweep(dir, name string) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, de := range es {
		n, kind, pid, ok := parseTempOwner(de.Name())
		if !ok || pid == 0 || (name != "" && kind != probeTag && n != name) || alive(pid) {
			continue
		}
		p := filepath.Join(dir, de.Name())
		if kind == oldTag {
			restore(p, filepath.Join(dir, n))
		}
		os.RemoveAll(p)
	}
}

// restore puts back what the kept replaced file (or directory of replaced
// files) old held where target lacks it.
func restore(old, target string) {
	st, err := os.Lstat(old)
	if err != nil {
		return
	}
	if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
		os.Rename(old, target) // the whole file or directory was set aside
		return
	}
	if !st.IsDir() {
		return
	}
	es, err := os.ReadDir(old)
	if err != nil {
		return
	}
	if st, err := os.Stat(target); err != nil || !st.IsDir() {
		return
	}
	for _, de := range es {
		t := filepath.Join(target, de.Name())
		if _, err := os.Lstat(t); errors.Is(err, fs.ErrNotExist) {
			os.Rename(filepath.Join(old, de.Name()), t)
		}
	}
}

// Named returns err with the temporary tmp that stages path replaced by
// path in it (an *os.PathError or *os.LinkError on tmp becomes an
// *os.PathError on path, and tmp in any other message becomes path), so
// that no error names a temporary; nil stays nil.
func Named(err error, tmp, path string) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe) && pe.Path == tmp:
		return &fs.PathError{Op: pe.Op, Path: path, Err: pe.Err}
	case errors.As(err, &le) && le.Old == tmp:
		return &fs.PathError{Op: le.Op, Path: path, Err: le.Err}
	case strings.Contains(err.Error(), tmp):
		return errors.New(strings.ReplaceAll(err.Error(), tmp, path))
	}
	return err
}
