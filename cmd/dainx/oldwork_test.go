package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oldFlags are the flags testdata/old was made with (its README).
var oldFlags = []string{"-input", "testdata/old/input.tsv", "-epochs", "2", "-layers", "24,16,8", "-rank", "4", "-channels", "4", "-backend", "cpu", "-quiet"}

// TestOldWorkResumes: an evaluation directory and an augment checkpoint
// made by a dainx from before -embedding-optimizer and -split (whose
// defaults have changed since) resume. The evaluation goes on with default
// flags, taking the settings it was made with (dense Adam, the legacy
// split), keeps its finished repeat and adds the second; the checkpoint
// reads its missing settings as the values that dainx used: without
// -split legacy it is refused naming that flag, with it the run finishes
// with the new cells the old run made.
func TestOldWorkResumes(t *testing.T) {
	t.Run("eval", func(t *testing.T) {
		dir := copyDir(t, "testdata/old/eval")
		before, err := os.ReadFile(filepath.Join(dir, "runs.json"))
		if err != nil {
			t.Fatal(err)
		}
		args := append([]string{"eval", "-out", dir, "-methods", "dain,random-costco", "-ratios", "0,0.5", "-repeats", "2", "-resume"}, oldFlags...)
		code, _, stderr := runCLI(args...)
		if code != 0 {
			t.Fatalf("eval -resume of an old evaluation: exit %d: %s", code, stderr)
		}
		for _, want := range []string{"-split legacy", "-embedding-optimizer adam"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr does not say that the resumed evaluation takes %s: %s", want, stderr)
			}
		}
		type runs struct {
			Config struct {
				Repeats int             `json:"repeats"`
				Base    json.RawMessage `json:"base"`
			} `json:"config"`
			Runs []map[string]any `json:"runs"`
		}
		var old, got runs
		after, err := os.ReadFile(filepath.Join(dir, "runs.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(before, &old); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(after, &got); err != nil {
			t.Fatal(err)
		}
		if got.Config.Repeats != 2 || len(got.Runs) != 2*len(old.Runs) {
			t.Fatalf("%d repeats, %d runs after the resume; want 2 and %d", got.Config.Repeats, len(got.Runs), 2*len(old.Runs))
		}
		for i, r := range old.Runs {
			if r["test_rmse"] != got.Runs[i]["test_rmse"] || r["seed"] != got.Runs[i]["seed"] {
				t.Errorf("finished run %d changed: %v, now %v", i, r, got.Runs[i])
			}
		}
		var base map[string]any
		json.Unmarshal(got.Config.Base, &base)
		if base["split"] != "legacy" || base["embedding_optimizer"] != "adam" {
			t.Errorf("the resumed evaluation records split %v, embedding optimizer %v; want legacy and adam", base["split"], base["embedding_optimizer"])
		}
	})
	t.Run("augment", func(t *testing.T) {
		ck := copyDir(t, "testdata/old/checkpoint")
		out := filepath.Join(t.TempDir(), "aug.tsv")
		// A refused run leaves the directory as it was: no manifest.
		code, _, stderr := runCLI(append([]string{"augment", "-checkpoint", ck, "-output", out}, oldFlags...)...)
		if _, err := os.Stat(filepath.Join(ck, "manifest.json")); code != 1 || !strings.Contains(stderr, "holds the checkpoint of another run") || !strings.Contains(stderr, "made with -split legacy") || err == nil {
			t.Errorf("a new run into the old checkpoint: exit %d: %s; manifest written: %v", code, stderr, err == nil)
		}
		args := append([]string{"augment", "-checkpoint", ck, "-resume", "-output", out}, oldFlags...)
		code, _, stderr = runCLI(args...)
		if code != 1 || !strings.Contains(stderr, "made with -split legacy (not recorded") || !strings.Contains(stderr, "this run has -split keyed") {
			t.Errorf("resume with today's default split: exit %d: %s; want 1 and a message naming -split legacy", code, stderr)
		}
		code, _, stderr = runCLI(append(args, "-split", "legacy")...)
		if code != 0 {
			t.Fatalf("resume with -split legacy: exit %d: %s", code, stderr)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile("testdata/old/aug.tsv")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("the resumed run wrote other new cells than the old run")
		}
	})
}
