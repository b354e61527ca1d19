package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dainx/dainx/tensor"
)

// A checkpoint directory knows the kind of run that wrote it: one process
// (Open) or P processes of an MPI job (OpenDist), each only resumable by
// a run of the same kind. The kind is recorded in
// Checkpoint.Dir/manifest.json, written before any other file of the
// checkpoint:
//
//	{"kind": "single", "dainx": …, "input": …, "cells": …}
//	{"kind": "mpi", "ranks": P, "dainx": …, "input": …, "cells": …}
//
// A manifest without "kind" (written before kinds were recorded, by runs
// over processes only) is an MPI one. A directory without a manifest is
// recognised by its layout: rank-K-of-P subdirectories mean an MPI run of
// P processes, checkpoint files at its top one process.

// ckManifest is the manifest of a checkpoint directory.
type ckManifest struct {
	Kind  string `json:"kind"`
	Dainx string `json:"dainx"`
	Ranks int    `json:"ranks,omitempty"`
	Input string `json:"input"`
	Cells int    `json:"cells"`
	// Finished is set once a run on the directory returned its result.
	Finished bool `json:"finished,omitempty"`
}

// The kinds of ckManifest.Kind.
const (
	ckSingle = "single"
	ckMPI    = "mpi"
)

// Limits on a manifest read from disk: its size in bytes and its number of
// processes.
const (
	maxManifestBytes = 1 << 16
	maxManifestRanks = 1 << 20
)

// ckManifestName is the manifest's file in Checkpoint.Dir.
const ckManifestName = "manifest.json"

// ckKind is what wrote a checkpoint directory: kind "" (nothing yet),
// ckSingle or ckMPI with ranks processes; from names where it was read.
type ckKind struct {
	kind  string
	ranks int
	from  string
}

func (k ckKind) String() string {
	if k.kind == ckMPI {
		return fmt.Sprintf("an MPI run of %d ranks", k.ranks)
	}
	return "one process (no -dist)"
}

// rankDir matches a process's subdirectory, rank-K-of-P.
var rankDir = regexp.MustCompile(`^rank-([0-9]+)-of-([0-9]+)$`)

// readCkManifest reads and checks the manifest at path: at most
// maxManifestBytes bytes of JSON, a known kind, and for an MPI one 1 to
// maxManifestRanks processes. Errors name the file and the field; a
// missing file is an os.ErrNotExist error.
func readCkManifest(path string) (ckManifest, error) {
	var m ckManifest
	f, err := os.Open(path)
	if err != nil {
		return m, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxManifestBytes {
		return m, fmt.Errorf("%s: %w: more than %d bytes", path, ErrNotCheckpoint, maxManifestBytes)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w: %v", path, ErrNotCheckpoint, err)
	}
	if m.Kind == "" { // before kinds were recorded: only runs over processes wrote one
		m.Kind = ckMPI
	}
	switch {
	case m.Kind != ckSingle && m.Kind != ckMPI:
		return m, fmt.Errorf("%s: %w: kind %q: want %s or %s", path, ErrNotCheckpoint, m.Kind, ckSingle, ckMPI)
	case m.Kind == ckMPI && (m.Ranks < 1 || m.Ranks > maxManifestRanks):
		return m, fmt.Errorf("%s: %w: ranks %d: want 1 to %d", path, ErrNotCheckpoint, m.Ranks, maxManifestRanks)
	case m.Kind == ckSingle && m.Ranks != 0:
		return m, fmt.Errorf("%s: %w: ranks %d in a manifest of kind %s", path, ErrNotCheckpoint, m.Ranks, ckSingle)
	case m.Cells < 0:
		return m, fmt.Errorf("%s: %w: cells %d", path, ErrNotCheckpoint, m.Cells)
	}
	return m, nil
}

// checkpointKind returns what wrote the checkpoint in dir: its manifest's
// kind, or else what its layout shows (rank-K-of-P subdirectories: MPI of
// P processes; checkpoint files: one process). A directory holding both,
// or rank directories of different P, is an error.
func checkpointKind(dir string) (ckKind, error) {
	manifest := filepath.Join(dir, ckManifestName)
	m, err := readCkManifest(manifest)
	switch {
	case err == nil:
		return ckKind{m.Kind, m.Ranks, manifest}, nil
	case !errors.Is(err, os.ErrNotExist):
		return ckKind{}, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return ckKind{}, nil
	}
	if err != nil {
		return ckKind{}, fmt.Errorf("dain: checkpoint directory: %w", err)
	}
	var ranks []int
	var files []string
	for _, de := range entries {
		if s := rankDir.FindStringSubmatch(de.Name()); s != nil && de.IsDir() {
			p, err := strconv.Atoi(s[2])
			if err != nil || p < 1 || p > maxManifestRanks {
				return ckKind{}, fmt.Errorf("dain: checkpoint directory %s: %s: %w: want 1 to %d ranks", dir, de.Name(), ErrNotCheckpoint, maxManifestRanks)
			}
			if !slices.Contains(ranks, p) {
				ranks = append(ranks, p)
			}
		} else if strings.HasSuffix(de.Name(), ".ckpt") {
			files = append(files, de.Name())
		}
	}
	switch {
	case len(ranks) > 1 || len(ranks) == 1 && len(files) > 0:
		return ckKind{}, fmt.Errorf("dain: checkpoint directory %s mixes the checkpoints of several runs (rank directories of %v processes, files %s); give a new -checkpoint directory", dir, ranks, strings.Join(files, ", "))
	case len(ranks) == 1:
		return ckKind{ckMPI, ranks[0], dir + "/rank-*-of-" + strconv.Itoa(ranks[0])}, nil
	case len(files) > 0:
		return ckKind{ckSingle, 0, dir + "/*.ckpt"}, nil
	}
	return ckKind{}, nil
}

// ErrKind is returned (wrapped) when a checkpoint directory was
// written by another kind of run: one process against an MPI job, or MPI
// jobs of different sizes.
var ErrKind = errors.New("the checkpoint was written by another kind of run")

// checkKind returns nil when the checkpoint in dir, of kind have, may be
// continued or written by this run (want): nothing there yet, or the same
// kind and number of processes. Otherwise it says what wrote it and what
// to run instead.
func checkKind(dir string, have, want ckKind) error {
	if have.kind == "" || have.kind == want.kind && have.ranks == want.ranks {
		return nil
	}
	var instead string
	switch {
	case have.kind == ckSingle:
		instead = "resume it in one process, dainx augment -checkpoint " + dir + " -resume without mpiexec and -dist"
	default:
		instead = fmt.Sprintf("resume it with mpiexec -n %d dainx augment -dist mpi -checkpoint %s -resume", have.ranks, dir)
	}
	return kindErrorf(ErrKind, "dain: checkpoint %s was written by %s (%s); this run is %s; %s (with the same flags), or give a new -checkpoint directory", dir, have, have.from, want, instead)
}

// writeCkManifest writes m as dir's manifest, atomically.
func writeCkManifest(dir string, m ckManifest) error {
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return tensor.AtomicWrite(filepath.Join(dir, ckManifestName), func(w io.Writer) error { _, err := w.Write(append(js, '\n')); return err })
}
