package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dainx/dainx/dain"
)

// TestMain lets the test binary act as dainx for the kill tests: with
// DAINX_TEST_AS_DAINX=1 it runs the command line given, and with
// DAINX_TEST_KILL_AT=stage:epoch:event it kills itself with SIGKILL at that
// point of a checkpointed run (with SIGINT if DAINX_TEST_SIGNAL=INT, and
// goes on).
func TestMain(m *testing.M) {
	if dir := os.Getenv("DAINX_TEST_HOLD_CHECKPOINT"); dir != "" {
		// Hold dir's checkpoint lock until standard input closes.
		release, err := dain.LockCheckpoint(dir)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("held")
		io.Copy(io.Discard, os.Stdin)
		release()
		os.Exit(0)
	}
	if os.Getenv("DAINX_TEST_AS_DAINX") != "1" {
		os.Exit(m.Run())
	}
	if at := os.Getenv("DAINX_TEST_KILL_AT"); at != "" {
		f := strings.Split(at, ":")
		epoch, _ := strconv.Atoi(f[1])
		p := dain.CheckpointPoint{Stage: f[0], Epoch: epoch, Event: f[2]}
		checkpointHook = func(q dain.CheckpointPoint) error {
			switch {
			case q != p:
			case os.Getenv("DAINX_TEST_SIGNAL") == "INT":
				syscall.Kill(os.Getpid(), syscall.SIGINT)
				time.Sleep(100 * time.Millisecond) // delivered
			default:
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				time.Sleep(time.Minute) // the signal is on its way
			}
			return nil
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// ckFlags make a run with every training stage in well under a second.
var ckFlags = []string{"-input", "testdata/golden/input.tsv", "-backend", "cpu", "-quiet", "-seed", "3",
	"-layers", "24,16,8", "-epochs", "4", "-patience", "3", "-batch", "128", "-rank", "4", "-channels", "4", "-ratio", "0.4"}

// dainxProcess starts the test binary as dainx with args and env.
func dainxProcess(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "DAINX_TEST_AS_DAINX=1"), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// killedBySIGKILL reports whether err is the exit of a process SIGKILL
// ended.
func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// augmentOutputs runs `dainx augment` in this process with args and returns
// its report (wall times and device dropped) and its augmented cells.
func augmentOutputs(t *testing.T, dir string, args ...string) ([]byte, []byte) {
	t.Helper()
	out := filepath.Join(dir, "aug.tsv")
	code, stdout, stderr := runCLI(append(append([]string{"augment", "-output", out}, ckFlags...), args...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cells, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return canonical(t, []byte(stdout), "seconds", "device", "outputs"), cells
}

// TestKillAndResume: `dainx augment -checkpoint DIR` killed by SIGKILL after
// Θ's first epoch, during TracIn, during CoSTCo and during the retraining,
// then run again with -resume, writes the report and the augmented cells of
// an uninterrupted run, bit for bit (wall times aside). So does a run
// killed at a moment chosen by the clock.
func TestKillAndResume(t *testing.T) {
	skipUnlessGoldenMachine(t) // the same GEMM path in the child and here
	wantReport, wantCells := augmentOutputs(t, t.TempDir())
	points := []string{
		"theta-mlp.tracin-last:1:saved",   // after Θ's first epoch
		"theta-mlp.tracin-last:2:tracin",  // during TracIn: its pass of epoch 2 ran, unsaved
		"theta-costco:2:trained",          // during CoSTCo
		"retrain:2:trained",               // during the retraining
		"retrain:1:saved",                 // between two retraining epochs
		"augmented:0:saved",               // between the augmentation and the retraining
		"theta-mlp.tracin-last:3:trained", // Θ's last epochs
	}
	for _, at := range points {
		t.Run(strings.ReplaceAll(at, ":", "-"), func(t *testing.T) {
			dir := t.TempDir()
			ck := filepath.Join(dir, "ck")
			out := filepath.Join(dir, "aug.tsv")
			cmd := dainxProcess(t, []string{"DAINX_TEST_KILL_AT=" + at}, append([]string{"augment", "-output", out, "-checkpoint", ck}, ckFlags...)...)
			if err := cmd.Wait(); !killedBySIGKILL(err) {
				t.Fatalf("the run did not die of SIGKILL at %s: %v\n%s", at, err, cmd.Stdout)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a killed run left its output: %v", err)
			}
			report, cells := augmentOutputs(t, dir, "-checkpoint", ck, "-resume")
			if !bytes.Equal(report, wantReport) {
				t.Errorf("the resumed report differs:\n%s", firstDiff(string(wantReport), string(report)))
			}
			if !bytes.Equal(cells, wantCells) {
				t.Errorf("the resumed run's augmented cells differ")
			}
		})
	}
	t.Run("by-the-clock", func(t *testing.T) {
		for _, delay := range []time.Duration{30 * time.Millisecond, 120 * time.Millisecond} {
			dir := t.TempDir()
			ck := filepath.Join(dir, "ck")
			cmd := dainxProcess(t, nil, append([]string{"augment", "-checkpoint", ck}, ckFlags...)...)
			time.Sleep(delay)
			cmd.Process.Signal(syscall.SIGKILL)
			err := cmd.Wait()
			files, _ := filepath.Glob(filepath.Join(ck, "*"))
			for i := range files {
				files[i] = filepath.Base(files[i])
			}
			t.Logf("killed after %v (killed: %v); the checkpoint holds %v", delay, killedBySIGKILL(err), files)
			report, cells := augmentOutputs(t, dir, "-checkpoint", ck, "-resume")
			if !bytes.Equal(report, wantReport) || !bytes.Equal(cells, wantCells) {
				t.Errorf("killed after %v: the resumed run differs:\n%s", delay, firstDiff(string(wantReport), string(report)))
			}
		}
	})
}

// TestCheckpointFlags: -resume needs -checkpoint; a checkpoint is not
// overwritten without -resume; another flag or input is refused, named;
// an interrupted checkpointed run says how to continue.
func TestCheckpointFlags(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	if code, _, stderr := runCLI(append([]string{"augment", "-resume"}, ckFlags...)...); code != exitUsage || !strings.Contains(stderr, "-resume needs -checkpoint") {
		t.Errorf("-resume alone: exit %d, %q", code, stderr)
	}
	killed := errors.New("stopped")
	checkpointHook = func(p dain.CheckpointPoint) error {
		if p.Stage == "theta-costco" && p.Epoch == 1 && p.Event == "saved" {
			return killed
		}
		return nil
	}
	code, _, stderr := runCLI(append([]string{"augment", "-checkpoint", ck}, ckFlags...)...)
	checkpointHook = nil
	if code != exitFailure || !strings.Contains(stderr, "stopped") {
		t.Fatalf("stopped run: exit %d, %q", code, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-checkpoint", ck}, "an interrupted run of this input and flags"},
		{[]string{"-checkpoint", ck, "-resume", "-lr", "0.01"}, "was made with -lr 0.001; this run has -lr 0.01"},
		{[]string{"-checkpoint", ck, "-resume", "-costco-lr", "0.01"}, "-costco-lr"},
		{[]string{"-checkpoint", ck, "-resume", "-seed", "4"}, "-seed 3; this run has -seed 4"},
		{[]string{"-checkpoint", ck, "-resume", "-method", "random"}, "-method dain; this run has -method random"},
		{[]string{"-checkpoint", ck, "-resume", "-input", writeTSV(t, dir, "other.tsv", 1500)}, "was made from another input, testdata/golden/input.tsv"},
	} {
		code, _, stderr := runCLI(append(append([]string{"augment"}, ckFlags...), c.args...)...)
		if code != exitFailure || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, stderr, c.want)
		}
	}
	// The same flags continue it.
	if code, _, stderr := runCLI(append([]string{"augment", "-checkpoint", ck, "-resume"}, ckFlags...)...); code != exitOK {
		t.Errorf("resume: exit %d, %s", code, stderr)
	}
}

// TestInterruptedCheckpointedRun: Ctrl-C during a checkpointed run exits
// 130 and says that -resume continues it; -resume then does.
func TestInterruptedCheckpointedRun(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	cmd := dainxProcess(t, []string{"DAINX_TEST_KILL_AT=theta-costco:1:trained", "DAINX_TEST_SIGNAL=INT"}, append([]string{"augment", "-checkpoint", ck}, ckFlags...)...)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted || !strings.Contains(cmd.Stdout.(*bytes.Buffer).String(), "the same command with -resume continues the run") {
		t.Fatalf("interrupted: %v\n%s", err, cmd.Stdout)
	}
	if code, _, stderr := runCLI(append([]string{"augment", "-checkpoint", ck, "-resume"}, ckFlags...)...); code != exitOK {
		t.Errorf("resume: exit %d, %s", code, stderr)
	}
}

// TestHelpListsCheckpointFlags: augment -h explains -checkpoint and -resume.
func TestHelpListsCheckpointFlags(t *testing.T) {
	_, _, stderr := runCLI("augment", "-h")
	for _, f := range []string{"-checkpoint", "-resume"} {
		if !strings.Contains(stderr, f) {
			t.Errorf("augment -h does not mention %s", f)
		}
	}
}
