//go:build linux

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestEvalOutFullDisk: `dainx eval -out DIR` on a full disk exits 1 with
// one line naming a file of DIR (never a temporary) and leaves no DIR
// behind when it made it. It needs a small tmpfs (root); skipped where
// one cannot be mounted.
func TestEvalOutFullDisk(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "t.tsv", 600)
	disk := filepath.Join(dir, "disk")
	os.Mkdir(disk, 0o755)
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=4k"); err != nil {
		t.Skipf("no tmpfs: %v", err)
	}
	defer syscall.Unmount(disk, 0)
	out := filepath.Join(disk, "eval")
	args := append([]string{"eval", "-input", in, "-methods", "random-mlp", "-ratios", "0.2", "-repeats", "1",
		"-rank", "4", "-channels", "4", "-out", out}, tiny...)
	code, _, stderr := runCLI(args...)
	t.Log(strings.TrimSpace(stderr))
	if code != exitFailure || !strings.Contains(stderr, out) || !strings.Contains(stderr, "no space left on device") || strings.Contains(stderr, "dainx-tmp") {
		t.Errorf("exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		es, _ := os.ReadDir(out)
		t.Errorf("the failed command left %s: %v", out, es)
	}
	if es, _ := os.ReadDir(disk); len(es) != 0 {
		t.Errorf("left %v", es)
	}
}

// TestFileInsideModelOut: -importance-out inside the -model-out directory,
// among the names it fills, is refused naming the file, whether the
// directory exists or not.
func TestFileInsideModelOut(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "x.tsv", 600)
	for _, made := range []bool{false, true} {
		m := filepath.Join(dir, "m")
		if made {
			os.Mkdir(m, 0o755)
		}
		imp := filepath.Join(m, "model.json")
		code, _, stderr := runCLI(append([]string{"augment", "-input", in, "-backend", "cpu", "-output", filepath.Join(dir, "a.tsv"), "-model-out", m, "-importance-out", imp}, tiny...)...)
		if code != exitFailure || !strings.Contains(stderr, "cannot write "+imp+": it is the file model.json of the output directory "+m) {
			t.Errorf("directory made %v: exit %d, %q", made, code, stderr)
		}
	}
}
