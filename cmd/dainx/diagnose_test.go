package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvalDiagnose: eval -diagnose writes diagnose.json and diagnose.md
// for the methods given, and trains no evaluation.
func TestEvalDiagnose(t *testing.T) {
	out := filepath.Join(t.TempDir(), "diag")
	args := append([]string{"eval", "-diagnose", "-methods", "dain,degree,random-costco", "-ratios", "0,0.3", "-out", out}, goldenFlags...)
	code, stdout, stderr := runCLI(args...)
	if code != exitOK || !strings.Contains(stdout, "diagnose.json") {
		t.Fatalf("exit %d: %q %q", code, stdout, stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "diagnose.md"))
	if err != nil || !strings.Contains(string(md), "| degree |") || !strings.Contains(string(md), "ratio 0.3") {
		t.Errorf("diagnose.md: %v\n%s", err, md)
	}
	if _, err := os.Stat(filepath.Join(out, "runs.json")); err == nil {
		t.Error("-diagnose wrote runs.json")
	}
}
