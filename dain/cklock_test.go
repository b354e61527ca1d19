package dain_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/internal/outtx"
)

// TestHelperHoldCheckpoint is not a test: run as a child process with
// DAINX_TEST_HOLD=DIR, it takes DIR's checkpoint lock, says "held" and
// waits for its standard input to close.
func TestHelperHoldCheckpoint(t *testing.T) {
	dir := os.Getenv("DAINX_TEST_HOLD")
	if dir == "" {
		t.Skip("a helper process")
	}
	release, err := dain.LockCheckpoint(dir)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer release()
	fmt.Println("held")
	bufio.NewReader(os.Stdin).ReadString('\n')
}

// holdCheckpoint starts a process holding dir's lock and returns its PID
// and the function that ends it.
func holdCheckpoint(t *testing.T, dir string) (int, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldCheckpoint$")
	cmd.Env = append(os.Environ(), "DAINX_TEST_HOLD="+dir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the helper did not take the lock: %q", line)
	}
	stop := func() { in.Close(); cmd.Wait() }
	t.Cleanup(stop)
	return cmd.Process.Pid, stop
}

// TestCheckpointInUse: a checkpoint directory has one owner. A run on a
// directory whose lock another process holds is refused at once, with or
// without Resume, naming that process, and leaves the directory as it
// was; once the owner is gone the run goes on. Under MPI rank 0 takes the
// same lock (TestDistCheckpointInUse in cmd/dainx).
func TestCheckpointInUse(t *testing.T) {
	x := demoTensor(t, 1500)
	c := ckConfig()
	c.Epochs = 2
	dir := t.TempDir()
	pid, stop := holdCheckpoint(t, dir)
	for _, resume := range []bool{false, true} {
		_, err := dain.RunCheckpointed(context.Background(), x, c, cpu.New(), dain.Checkpoint{Dir: dir, Resume: resume})
		if !errors.Is(err, dain.ErrCheckpointInUse) || !strings.Contains(err.Error(), fmt.Sprintf("checkpoint directory %s is in use by process %d", dir, pid)) {
			t.Fatalf("resume %v: %v", resume, err)
		}
		t.Logf("resume %v: %v", resume, err)
		if strings.Contains(err.Error(), "-seed") {
			t.Errorf("the refusal names a flag: %v", err)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 || es[0].Name() != ".dainx-lock" {
		t.Errorf("the refused runs changed the directory: %v", es)
	}
	stop()
	if _, err := dain.RunCheckpointed(context.Background(), x, c, cpu.New(), dain.Checkpoint{Dir: dir}); err != nil {
		t.Fatalf("after the owner ended: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".dainx-lock")); !os.IsNotExist(err) {
		t.Errorf("the lock file outlives the run: %v", err)
	}
	// In one process the lock is taken again (the command, then its run).
	r1, err := dain.LockCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dain.RunCheckpointed(context.Background(), x, c, cpu.New(), dain.Checkpoint{Dir: dir, Resume: true}); err != nil {
		t.Fatalf("under this process's own lock: %v", err)
	}
	r1()
}

// TestCheckpointStates: the refusals of a directory holding a checkpoint
// say whether it is a finished run's, an interrupted run's or another
// run's, and exactly what to run.
func TestCheckpointStates(t *testing.T) {
	x := demoTensor(t, 1500)
	c := ckConfig()
	c.Epochs = 2
	ctx, be := context.Background(), cpu.New()
	scores := c
	scores.Keep.Scores = true

	// Finished.
	fin := t.TempDir()
	if _, err := dain.RunCheckpointed(ctx, x, c, be, dain.Checkpoint{Dir: fin}); err != nil {
		t.Fatal(err)
	}
	_, err := dain.RunCheckpointed(ctx, x, c, be, dain.Checkpoint{Dir: fin})
	if !errors.Is(err, dain.ErrCheckpointExists) || !strings.Contains(err.Error(), "a finished run") || !strings.Contains(err.Error(), "remove "+fin) {
		t.Errorf("finished, no resume: %v", err)
	}
	t.Logf("finished, no resume: %v", err)
	_, err = dain.RunCheckpointed(ctx, x, scores, be, dain.Checkpoint{Dir: fin, Resume: true})
	if err == nil || !strings.Contains(err.Error(), "finished") || strings.Contains(err.Error(), "interrupt") || !strings.Contains(err.Error(), "without -scores-out") {
		t.Errorf("finished, resume with scores: %v", err)
	}
	t.Logf("finished, resume with scores: %v", err)

	// Interrupted during the retraining.
	intr := t.TempDir()
	killAt(t, x, c, intr, false, dain.CheckpointPoint{Stage: "retrain", Epoch: 1, Event: "saved"})
	_, err = dain.RunCheckpointed(ctx, x, c, be, dain.Checkpoint{Dir: intr})
	if !errors.Is(err, dain.ErrCheckpointExists) || !strings.Contains(err.Error(), "an interrupted run") || !strings.Contains(err.Error(), "with -resume") {
		t.Errorf("interrupted, no resume: %v", err)
	}
	t.Logf("interrupted, no resume: %v", err)
	_, err = dain.RunCheckpointed(ctx, x, scores, be, dain.Checkpoint{Dir: intr, Resume: true})
	if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "-resume but without -scores-out") || !strings.Contains(err.Error(), "remove "+intr) {
		t.Errorf("interrupted, resume with scores: %v", err)
	}
	t.Logf("interrupted, resume with scores: %v", err)

	// Another run's (other flags): neither -resume nor "interrupted".
	other := c
	other.Seed++
	_, err = dain.RunCheckpointed(ctx, x, other, be, dain.Checkpoint{Dir: intr})
	if !errors.Is(err, dain.ErrCheckpointExists) || !strings.Contains(err.Error(), "another run") || !strings.Contains(err.Error(), "-seed") {
		t.Errorf("another run's: %v", err)
	}
	t.Logf("another run's: %v", err)
}

// TestCheckpointStaleTemporaries: the temporaries of a killed run in a
// checkpoint directory (their owner is gone) are removed by the next run;
// one whose owner still runs is not.
func TestCheckpointStaleTemporaries(t *testing.T) {
	x := demoTensor(t, 1500)
	c := ckConfig()
	c.Epochs = 2
	dir := t.TempDir()
	killAt(t, x, c, dir, false, dain.CheckpointPoint{Stage: "theta-mlp.tracin-last", Epoch: 1, Event: "saved"})
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	_, host := outtx.Owner()
	stale := []string{
		outtx.TempNameFor(dir, "manifest.json", dead.Process.Pid, host, 1),
		outtx.TempNameFor(dir, "theta-mlp.tracin-last.train.ckpt", dead.Process.Pid, host, 2),
	}
	live := outtx.TempNameFor(dir, "theta-mlp.tracin-last.train.ckpt", os.Getppid(), host, 3)
	for _, p := range append(stale, live) {
		if err := os.WriteFile(p, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dain.RunCheckpointed(context.Background(), x, c, cpu.New(), dain.Checkpoint{Dir: dir, Resume: true}); err != nil {
		t.Fatal(err)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s (owner %d, gone) is still there", filepath.Base(p), dead.Process.Pid)
		}
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("%s (owner %s, running) was removed: %v", filepath.Base(live), strconv.Itoa(os.Getppid()), err)
	}
}

// TestCheckpointDirOfFailedRun: a run that made its checkpoint directory
// and failed before saving anything in it leaves no directory behind; one
// that saved an epoch keeps it, to resume.
func TestCheckpointDirOfFailedRun(t *testing.T) {
	x := demoTensor(t, 1500)
	c := ckConfig()
	c.Epochs = 2
	dir := filepath.Join(t.TempDir(), "ck")
	failed := errors.New("failed")
	_, err := dain.RunCheckpointed(context.Background(), x, c, cpu.New(), dain.Checkpoint{Dir: dir,
		Hook: func(p dain.CheckpointPoint) error { return failed }})
	if !errors.Is(err, failed) {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		es, _ := os.ReadDir(dir)
		t.Fatalf("the failed run left %s: %v", dir, es)
	}
	killAt(t, x, c, dir, false, dain.CheckpointPoint{Stage: "theta-mlp.tracin-last", Epoch: 1, Event: "saved"})
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		t.Fatalf("the run that saved an epoch lost its checkpoint: %v", err)
	}
}
