package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dainx/dainx/internal/outtx"
)

// A checkpoint directory has one owner: the run that writes it holds a
// lock on the file ckLockName in it (flock, exclusive) from the moment it
// opens the directory until it returns. A second run on the same directory,
// with or without -resume, is refused at once, naming the process that
// holds it. The lock file holds the owner's PID and host; it is removed
// when the lock is released (a run killed leaves it, unlocked: the kernel
// drops a dead process's locks, and the next run takes it over). Under
// MPI, rank 0 holds the lock of the checkpoint directory and every rank
// that of its own rank-R-of-P directory.

// ckLockName is the lock file of a checkpoint directory.
const ckLockName = ".dainx-lock"

// ErrInUse is returned (wrapped) when another process holds the lock of
// the checkpoint directory.
var ErrInUse = errors.New("the checkpoint directory is in use")

// ckLock is a checkpoint directory's lock held by this process.
type ckLock struct {
	path string // the lock file
	f    *os.File
	n    int // holders in this process
}

// ckLocks are the locks this process holds, by the lock file's absolute
// path: a process that holds a directory's lock may take it again (the
// command, then the run it starts), and releases it with the last holder.
var ckLocks = struct {
	sync.Mutex
	m map[string]*ckLock
}{m: map[string]*ckLock{}}

// Lock takes the lock of the checkpoint directory dir (which must exist)
// for this process, and returns the function that releases it (safe to
// call more than once). If another process holds it, the error (ErrInUse)
// says "checkpoint directory DIR is in use by process N"; a lock file that
// cannot be created is an error naming dir. A process may take a lock it
// holds again; each take needs its release. A file system without locks
// (flock fails other than by contention) leaves the directory unlocked.
func Lock(dir string) (release func(), err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("dain: checkpoint directory %s: %w", dir, err)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	path := filepath.Join(abs, ckLockName)
	ckLocks.Lock()
	defer ckLocks.Unlock()
	l := ckLocks.m[path]
	if l == nil {
		f, err := takeLock(dir, path)
		if err != nil {
			return nil, err
		}
		l = &ckLock{path: path, f: f}
		ckLocks.m[path] = l
	}
	l.n++
	var once sync.Once
	return func() { once.Do(func() { releaseLock(l) }) }, nil
}

// releaseLock drops one holder of l, and the lock with the last.
func releaseLock(l *ckLock) {
	ckLocks.Lock()
	defer ckLocks.Unlock()
	if l.n--; l.n > 0 {
		return
	}
	delete(ckLocks.m, l.path)
	if l.f != nil {
		os.Remove(l.path) // while locked: a process waiting on it retries (takeLock)
		l.f.Close()
	}
}

// takeLock locks the file path (creating it) in the directory the user
// named dir, and writes this process's PID and host into it.
func takeLock(dir, path string) (*os.File, error) {
	for try := 0; ; try++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("dain: checkpoint directory %s: cannot create its lock: %w", dir, outtx.Bare(err))
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			owner := lockOwner(f)
			f.Close()
			return nil, kindErrorf(ErrInUse, "dain: checkpoint directory %s is in use by %s, which holds its lock (%s); wait until it ends, or give another -checkpoint directory", dir, owner, filepath.Join(dir, ckLockName))
		}
		if err != nil {
			// No locks here (some network file systems): unlocked.
			f.Close()
			return nil, nil
		}
		// The file may have been removed by its last owner between our
		// open and our lock: then lock the new one.
		st, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(st, now) {
			f.Close()
			if try < 100 {
				continue
			}
			return nil, fmt.Errorf("dain: checkpoint directory %s: its lock file keeps changing", dir)
		}
		host, _ := os.Hostname()
		f.Truncate(0)
		f.WriteAt([]byte(fmt.Sprintf("%d %s\n", os.Getpid(), host)), 0)
		return f, nil
	}
}

// lockOwner says which process holds the lock file f: "process N" (with
// "on host H" when not this one), read from the file, which its owner
// writes right after taking the lock.
func lockOwner(f *os.File) string {
	for wait := 0; wait < 20; wait++ {
		b := make([]byte, 256)
		n, _ := f.ReadAt(b, 0)
		fields := strings.Fields(string(b[:n]))
		if len(fields) >= 1 {
			if pid, err := strconv.Atoi(fields[0]); err == nil && pid > 0 {
				host, _ := os.Hostname()
				if len(fields) >= 2 && fields[1] != host {
					return fmt.Sprintf("process %d on host %s", pid, fields[1])
				}
				return fmt.Sprintf("process %d", pid)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "another process"
}
