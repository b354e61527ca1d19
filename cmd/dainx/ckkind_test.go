package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDistCheckpointKind: a checkpoint directory is resumed only by the kind
// of run that wrote it. One process refuses a directory that MPI ranks
// wrote (by its manifest, or by its rank-K-of-P directories alone), naming
// the mpiexec command; and with DAINX_TEST_MPI=1 an MPI run refuses a
// one-process checkpoint and one of another number of ranks, every job
// exiting 1 with the reason on its output, with or without -resume.
func TestDistCheckpointKind(t *testing.T) {
	dir := t.TempDir()
	args := append([]string{"augment", "-input", "testdata/golden/input.tsv"}, ckFlags...)
	args = append(args, "-epochs", "2")

	// An MPI checkpoint of 2 ranks, as RunDistCheckpointed lays it out.
	mpiCk := filepath.Join(dir, "mpi")
	for _, d := range []string{"rank-0-of-2", "rank-1-of-2"} {
		if err := os.MkdirAll(filepath.Join(mpiCk, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	manifest := filepath.Join(mpiCk, "manifest.json")
	if err := os.WriteFile(manifest, []byte(`{"dainx": "0.7.0", "ranks": 2, "input": "input.tsv", "cells": 1000}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{"manifest", "layout"} {
		for _, resume := range []bool{true, false} {
			a := append(append([]string(nil), args...), "-checkpoint", mpiCk, "-output", filepath.Join(dir, "o.tsv"))
			if resume {
				a = append(a, "-resume")
			}
			code, _, stderr := runCLI(a...)
			if code != 1 || !strings.Contains(stderr, "was written by an MPI run of 2 ranks") || !strings.Contains(stderr, "mpiexec -n 2 dainx augment -dist mpi -checkpoint "+mpiCk+" -resume") {
				t.Errorf("one process on an MPI checkpoint (%s, resume %v): exit %d: %s", what, resume, code, stderr)
			}
			if _, err := os.Stat(filepath.Join(mpiCk, "theta-mlp.tracin-last.train.ckpt")); err == nil {
				t.Fatalf("one process wrote its checkpoint beside the ranks'")
			}
		}
		os.Remove(manifest)
	}

	// One process records its kind before anything else.
	one := filepath.Join(dir, "one")
	if code, _, stderr := runCLI(append(args, "-checkpoint", one, "-output", filepath.Join(dir, "one.tsv"))...); code != 0 {
		t.Fatalf("checkpointed run: exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(one, "manifest.json")); err != nil || !strings.Contains(string(b), `"kind": "single"`) {
		t.Fatalf("one process's manifest: %s, %v", b, err)
	}
	if os.Getenv("DAINX_TEST_MPI") != "1" {
		return
	}
	l := mpiLauncher(t)
	margs := append([]string{"augment", "-dist", "mpi", "-input", "testdata/golden/input.tsv"}, distFlags...)
	for _, resume := range []bool{true, false} {
		a := append(append([]string(nil), margs...), "-checkpoint", one, "-output", filepath.Join(dir, "m.tsv"))
		if resume {
			a = append(a, "-resume")
		}
		code, out := mpiRun(t, l, 2, nil, a...)
		if code != 1 || !strings.Contains(out, "rank 0 of 2") || !strings.Contains(out, "was written by one process") || !strings.Contains(out, "without mpiexec and -dist") {
			t.Errorf("-n 2 on a one-process checkpoint (resume %v): exit %d\n%s", resume, code, out)
		}
		if _, err := os.Stat(filepath.Join(one, "rank-0-of-2")); err == nil {
			t.Fatalf("the ranks wrote their checkpoints beside one process's")
		}
	}
	// Another number of ranks, and a new run into an MPI checkpoint.
	for _, c := range []struct {
		n      int
		resume bool
		want   string
	}{{3, true, "written by an MPI run of 2 ranks"}, {3, false, "written by an MPI run of 2 ranks"}, {2, false, "an interrupted run (an MPI run of 2 ranks); to continue it, run the same command with -resume"}} {
		a := append(append([]string(nil), margs...), "-checkpoint", mpiCk, "-output", filepath.Join(dir, "m.tsv"))
		if c.resume {
			a = append(a, "-resume")
		}
		code, out := mpiRun(t, l, c.n, nil, a...)
		if code != 1 || !strings.Contains(out, "rank 0 of") || !strings.Contains(out, c.want) {
			t.Errorf("-n %d (resume %v) on a checkpoint of 2 ranks: exit %d\n%s", c.n, c.resume, code, out)
		}
	}
}
