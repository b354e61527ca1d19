package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/internal/outtx"
)

// Issue 31, class 1: every command's outputs are one transaction. These
// tests run the commands as a user would and look at the files after.

// snapshot returns every file under dir (relative path → contents),
// hidden temporaries included.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			m[rel] = "symlink → " + l
		case d.IsDir():
			m[rel+"/"] = ""
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sameTree fails unless dir holds exactly what before did.
func sameTree(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := snapshot(t, dir)
	for k, v := range before {
		if w, ok := after[k]; !ok {
			t.Errorf("%s is gone", k)
		} else if w != v {
			t.Errorf("%s changed (%d bytes, was %d)", k, len(w), len(v))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s was left behind", k)
		}
	}
}

// wantFailure checks a failed command: exit 1 (not 2, not a trace) and a
// message naming each of want.
func wantFailure(t *testing.T, code int, stderr string, want ...string) {
	t.Helper()
	if code != exitFailure {
		t.Fatalf("exit %d, want %d: %s", code, exitFailure, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("message %q does not say %q", stderr, w)
		}
	}
	if strings.Contains(stderr, "goroutine ") {
		t.Errorf("message holds a stack trace: %s", stderr)
	}
}

// savedModel makes a -model-out directory with every file of a run
// (model, theta, predictor) in dir/name, and returns it.
func savedModel(t *testing.T, dir, name string) string {
	t.Helper()
	m := filepath.Join(dir, name)
	code, _, stderr := runCLI(append([]string{"augment", "-input", "testdata/golden/input.tsv", "-backend", "cpu", "-model-out", m, "-model-out-all"}, tiny...)...)
	if code != 0 {
		t.Fatalf("augment -model-out: exit %d: %s", code, stderr)
	}
	return m
}

// TestOutputIsInput: an output that is one of the command's inputs (by
// name, through a symlink or a hard link, or a file of the model read) is
// refused before any work, with exit 1 and the path named, and every file
// stays byte for byte.
func TestOutputIsInput(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "x.tsv", 600)
	m := savedModel(t, dir, "m")
	os.Symlink("x.tsv", filepath.Join(dir, "link.tsv"))
	os.Link(in, filepath.Join(dir, "hard.tsv"))
	cells := filepath.Join(dir, "cells.tsv")
	os.WriteFile(cells, []byte("0\t0\t0\n1\t1\t1\n"), 0o644)
	before := snapshot(t, dir)
	aug := func(extra ...string) []string {
		return append(append([]string{"augment", "-input", in, "-backend", "cpu"}, tiny...), extra...)
	}
	for _, c := range []struct {
		name string
		args []string
		path string // the path the message must name
	}{
		{"augment -output", aug("-output", in), in},
		{"augment -output symlink", aug("-output", filepath.Join(dir, "link.tsv")), filepath.Join(dir, "link.tsv")},
		{"augment -output hard link", aug("-output", filepath.Join(dir, "hard.tsv")), filepath.Join(dir, "hard.tsv")},
		{"augment -scores-out", aug("-scores-out", in), in},
		{"augment -importance-out", aug("-importance-out", in), in},
		{"augment -report", aug("-report", in), in},
		{"augment -output = -report", aug("-output", filepath.Join(dir, "a.tsv"), "-report", filepath.Join(dir, "a.tsv")), filepath.Join(dir, "a.tsv")},
		{"predict -output cells", []string{"predict", "-model", m, "-cells", cells, "-output", cells}, cells},
		{"predict -output model file", []string{"predict", "-model", m, "-cells", cells, "-output", filepath.Join(m, "model.safetensors")}, filepath.Join(m, "model.safetensors")},
		{"predict -report model json", []string{"predict", "-model", filepath.Join(m, "model.json"), "-cells", cells, "-report", filepath.Join(m, "model.json")}, filepath.Join(m, "model.json")},
		{"convert -output", []string{"convert", "-input", in, "-output", in}, in},
		{"eval -out", []string{"eval", "-input", in, "-out", in, "-methods", "dain", "-ratios", "0.1", "-repeats", "1", "-backend", "cpu", "-quiet"}, in},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(c.args...)
			wantFailure(t, code, stderr, "cannot write "+c.path)
			sameTree(t, dir, before)
		})
	}
	// -split-out into a directory that holds the input's name.
	s := filepath.Join(dir, "s")
	os.Mkdir(s, 0o755)
	os.WriteFile(filepath.Join(s, "train.tsv"), []byte("0\t0\t0\t1\n1\t1\t1\t2\n2\t2\t2\t3\n3\t0\t1\t1\n"), 0o644)
	before = snapshot(t, dir)
	code, _, stderr := runCLI(append([]string{"augment", "-input", filepath.Join(s, "train.tsv"), "-split-out", s, "-backend", "cpu"}, tiny...)...)
	wantFailure(t, code, stderr, "cannot write "+s, "holds the input")
	sameTree(t, dir, before)
}

// TestSymlinkOutput: an -output that is a symlink stays one, and its target
// gets the new cells.
func TestSymlinkOutput(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "x.tsv", 600)
	target := filepath.Join(dir, "real.tsv")
	os.WriteFile(target, []byte("old\n"), 0o644)
	link := filepath.Join(dir, "aug.tsv")
	os.Symlink("real.tsv", link)
	code, _, stderr := runCLI(append([]string{"augment", "-input", in, "-output", link, "-backend", "cpu"}, tiny...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("-output %s is no longer a symlink", link)
	}
	if b, _ := os.ReadFile(target); bytes.Equal(b, []byte("old\n")) || len(b) == 0 {
		t.Fatalf("the symlink's target kept its old contents")
	}
}

// TestUnwritableOutputEarly: an output that cannot be written is refused
// before the run's work, so nothing else of the run is written.
func TestUnwritableOutputEarly(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "x.tsv", 600)
	// Root may write anywhere a permission bit forbids; a directory inside
	// a regular file cannot be written by anyone.
	bad := filepath.Join(in, "scores.tsv")
	before := snapshot(t, dir)
	code, _, stderr := runCLI(append([]string{"augment", "-input", in, "-backend", "cpu",
		"-model-out", filepath.Join(dir, "m"), "-split-out", filepath.Join(dir, "s"), "-output", filepath.Join(dir, "aug.tsv"),
		"-scores-out", bad}, tiny...)...)
	wantFailure(t, code, stderr, "cannot write "+bad)
	sameTree(t, dir, before)

	// A directory that exists but cannot be written: read-only for a user,
	// /sys for root (where the permission bits do not stop it).
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o555)
	if os.Geteuid() == 0 {
		if f, err := os.Create("/sys/.dainx-probe"); err == nil {
			f.Close()
			os.Remove(f.Name())
			t.Skip("no unwritable directory for root here")
		}
		ro = "/sys"
	}
	bad = filepath.Join(ro, "report.json")
	before = snapshot(t, dir)
	code, _, stderr = runCLI(append([]string{"augment", "-input", in, "-backend", "cpu",
		"-model-out", filepath.Join(dir, "m"), "-output", filepath.Join(dir, "aug.tsv"), "-report", bad}, tiny...)...)
	wantFailure(t, code, stderr, "cannot write "+bad, "not writable")
	sameTree(t, dir, before)
}

// TestLateFailureLeavesNothing: when the last rename of a run fails (any
// output: the scores, the report, the model directory), the run's other
// outputs are taken back: new ones removed, older ones restored byte for
// byte, no temporary left.
func TestLateFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "x.tsv", 600)
	out := func(n string) string { return filepath.Join(dir, n) }
	args := append([]string{"augment", "-input", in, "-backend", "cpu",
		"-model-out", out("m"), "-model-out-all", "-split-out", out("s"), "-output", out("aug.tsv"),
		"-scores-out", out("scores.tsv"), "-importance-out", out("imp.tsv"), "-report", out("report.json")}, tiny...)
	for _, failAt := range []string{"report.json", "scores.tsv", "m"} {
		for _, older := range []bool{false, true} {
			name := failAt
			if older {
				name += "-over-older"
			}
			t.Run(name, func(t *testing.T) {
				os.RemoveAll(out("m"))
				os.RemoveAll(out("s"))
				for _, f := range []string{"aug.tsv", "scores.tsv", "imp.tsv", "report.json"} {
					os.Remove(out(f))
				}
				if older {
					code, _, stderr := runCLI(append(slices.Clone(args), "-seed", "7")...)
					if code != 0 {
						t.Fatalf("older run: exit %d: %s", code, stderr)
					}
				}
				before := snapshot(t, dir)
				outtx.SetCommitHook(func(p string) error {
					if filepath.Base(p) == failAt {
						return errors.New("injected failure")
					}
					return nil
				})
				defer outtx.SetCommitHook(nil)
				code, stdout, stderr := runCLI(args...)
				wantFailure(t, code, stderr, "cannot write "+out(failAt), "injected failure")
				if stdout != "" {
					t.Errorf("a failed run printed its report")
				}
				sameTree(t, dir, before)
			})
		}
	}
}

// TestModelOutReplacesOlderRun: -model-out into the directory of an older
// -model-out-all run ends holding this run's files only (no predictor.*
// of the older run beside the new theta.*), and the user's other files.
func TestModelOutReplacesOlderRun(t *testing.T) {
	dir := t.TempDir()
	m := savedModel(t, dir, "m")
	os.WriteFile(filepath.Join(m, "notes.txt"), []byte("mine"), 0o644)
	old := snapshot(t, m)
	if _, ok := old["predictor.json"]; !ok {
		t.Fatalf("the older run saved no predictor: %v", old)
	}
	code, stdout, stderr := runCLI(append([]string{"augment", "-input", "testdata/golden/input.tsv", "-backend", "cpu", "-model-out", m, "-model-out-all", "-method", "random-mlp", "-seed", "5"}, tiny...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := snapshot(t, m)
	var names []string
	for k := range got {
		names = append(names, k)
	}
	slices.Sort(names)
	if want := []string{"./", "model.json", "model.safetensors", "notes.txt", "theta.json", "theta.safetensors"}; !slices.Equal(names, want) {
		t.Fatalf("-model-out holds %v, want %v", names, want)
	}
	if got["model.json"] == old["model.json"] {
		t.Errorf("model.json is the older run's")
	}
	var rep dain.Report
	json.Unmarshal([]byte(stdout), &rep)
	if !slices.Equal(rep.Outputs, []string{m}) {
		t.Errorf("report outputs %q, want [%s]", rep.Outputs, m)
	}
}

// TestReportNamesOutputs: the report, on standard output and in -report,
// names every output as given.
func TestReportNamesOutputs(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "x.tsv", 600)
	o, r, s := filepath.Join(dir, "aug.tsv.gz"), filepath.Join(dir, "r.json"), filepath.Join(dir, "split")
	code, stdout, stderr := runCLI(append([]string{"augment", "-input", in, "-backend", "cpu", "-output", o, "-report", r, "-split-out", s}, tiny...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(r)
	if err != nil || string(b) != stdout {
		t.Fatalf("-report differs from standard output (%v)", err)
	}
	var rep dain.Report
	json.Unmarshal(b, &rep)
	if want := []string{o, s, r}; !slices.Equal(rep.Outputs, want) {
		t.Fatalf("outputs %q, want %q", rep.Outputs, want)
	}
}

// TestPanicIsExit1: a panic inside a command (a bug) is exit 1 with a
// one-line message, not exit 2 with a runtime trace, and the run's staged
// outputs are removed.
func TestPanicIsExit1(t *testing.T) {
	dir := t.TempDir()
	in := writeTSV(t, dir, "x.tsv", 600)
	checkpointHook = func(dain.CheckpointPoint) error { panic("injected bug") }
	defer func() { checkpointHook = nil }()
	before := snapshot(t, dir)
	code, _, stderr := runCLI(append([]string{"augment", "-input", in, "-backend", "cpu", "-checkpoint", filepath.Join(dir, "ck"), "-output", filepath.Join(dir, "aug.tsv")}, tiny...)...)
	wantFailure(t, code, stderr, "internal error: injected bug")
	// Only the checkpoint directory may be new.
	after := snapshot(t, dir)
	for k := range after {
		if _, ok := before[k]; !ok && !strings.HasPrefix(k, "ck") {
			t.Errorf("%s was left behind", k)
		}
	}
}
