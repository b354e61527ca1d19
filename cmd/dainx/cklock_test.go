package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// holdCheckpointLock starts a process holding the lock of checkpoint
// directory dir and returns its PID; it ends with the test.
func holdCheckpointLock(t *testing.T, dir string) int {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "DAINX_TEST_HOLD_CHECKPOINT="+dir)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "held" {
		t.Fatalf("the holder: %q", line)
	}
	return cmd.Process.Pid
}

// TestCheckpointOneOwner: `dainx augment -checkpoint DIR` while another
// process holds DIR (a run started at the same moment) is refused at
// once, with or without -resume: exit 1, one line naming the directory
// and the process, no flag it was not given, nothing written.
func TestCheckpointOneOwner(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	pid := holdCheckpointLock(t, ck)
	out := filepath.Join(dir, "aug.tsv")
	for _, extra := range [][]string{nil, {"-resume"}} {
		args := append(append([]string{"augment", "-checkpoint", ck, "-output", out}, ckFlags...), extra...)
		code, _, stderr := runCLI(args...)
		want := fmt.Sprintf("checkpoint directory %s is in use by process %d", ck, pid)
		if code != exitFailure || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, %q; want one line saying %q", extra, code, stderr, want)
		}
		if strings.Contains(stderr, "-seed") || strings.Contains(stderr, "-resume:") {
			t.Errorf("%v: the refusal names a flag: %q", extra, stderr)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused run wrote %s", out)
	}
	if es, _ := os.ReadDir(ck); len(es) != 1 {
		t.Errorf("the refused runs wrote into %s: %v", ck, es)
	}
}

// TestInterruptedKeepsNotSaved: a run with -scores-out stopped by Ctrl-C
// during the retraining (after steps 1–4) says exactly what continues it:
// -resume without -scores-out, which then succeeds; -resume with it is
// refused saying the run was interrupted and the same; a finished run's
// checkpoint is called finished, never interrupted.
func TestInterruptedKeepsNotSaved(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	scores := filepath.Join(dir, "scores.tsv")
	base := append([]string{"augment", "-checkpoint", ck, "-output", filepath.Join(dir, "aug.tsv")}, ckFlags...)
	cmd := dainxProcess(t, []string{"DAINX_TEST_KILL_AT=retrain:1:trained", "DAINX_TEST_SIGNAL=INT"}, append(base, "-scores-out", scores)...)
	err := cmd.Wait()
	msg := cmd.Stdout.(*bytes.Buffer).String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted || !strings.Contains(msg, "-resume but without -scores-out") || !strings.Contains(msg, "remove "+ck) {
		t.Fatalf("interrupted: %v\n%s", err, msg)
	}
	code, _, stderr := runCLI(append(append(base, "-resume"), "-scores-out", scores)...)
	if code != exitFailure || !strings.Contains(stderr, "interrupted") || !strings.Contains(stderr, "-resume but without -scores-out") {
		t.Errorf("resume with -scores-out: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI(append(base, "-resume")...); code != exitOK {
		t.Fatalf("resume without -scores-out: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(append(append(base, "-resume"), "-scores-out", scores)...)
	if code != exitFailure || !strings.Contains(stderr, "finished") || strings.Contains(stderr, "interrupt") {
		t.Errorf("a finished run resumed with -scores-out: exit %d, %q", code, stderr)
	}
	code, _, stderr = runCLI(base...)
	if code != exitFailure || !strings.Contains(stderr, "a finished run") || !strings.Contains(stderr, "remove "+ck) {
		t.Errorf("a finished run without -resume: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(scores); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run wrote %s", scores)
	}
}

// TestDistCheckpointInUse: under MPI rank 0 takes the same lock as one
// process: a job on a checkpoint directory another process holds exits 1
// on every rank, rank 0 naming the holder, and writes nothing there; and a
// one-process run is refused while a job's rank holds its directory.
// It runs with DAINX_TEST_MPI=1.
func TestDistCheckpointInUse(t *testing.T) {
	if os.Getenv("DAINX_TEST_MPI") != "1" {
		t.Skip("DAINX_TEST_MPI=1 runs the MPI tests")
	}
	l := mpiLauncher(t)
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	pid := holdCheckpointLock(t, ck)
	for _, resume := range []bool{false, true} {
		a := append([]string{"augment", "-dist", "mpi", "-input", "testdata/golden/input.tsv"}, distFlags...)
		a = append(a, "-checkpoint", ck, "-output", filepath.Join(dir, "m.tsv"))
		if resume {
			a = append(a, "-resume")
		}
		code, out := mpiRun(t, l, 2, nil, a...)
		if code != 1 || !strings.Contains(out, fmt.Sprintf("checkpoint directory %s is in use by process %d", ck, pid)) {
			t.Errorf("resume %v: exit %d\n%s", resume, code, out)
		}
	}
	if es, _ := os.ReadDir(ck); len(es) != 1 {
		t.Errorf("the refused jobs wrote into %s: %v", ck, es)
	}
}
