package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPreset (issue 37): -preset accurate sets the Bayesian FM as final
// model and value predictor unless their flags are given, the report
// records the preset, an unknown preset and -model-out with bayes-fm are
// bad command lines (exit 2), and eval takes -preset too.
func TestPreset(t *testing.T) {
	base := append([]string{"augment", "-input", "testdata/golden/input.tsv", "-backend", "cpu", "-bayes-samples", "20"}, tiny...)
	for _, c := range []struct {
		args                     []string
		final, predictor, preset string
	}{
		{nil, "mlp", "costco", "paper"},
		{[]string{"-preset", "accurate"}, "bayes-fm", "ensemble", "accurate"}, // auto: bayes-fm validates better on the golden input; the candidates' ensemble values the cells
		{[]string{"-preset", "accurate", "-predictor", "costco"}, "bayes-fm", "costco", "accurate"},
		{[]string{"-preset", "accurate", "-final-model", "mlp"}, "mlp", "costco", "accurate"}, // the predictor follows the final model
		{[]string{"-preset", "accurate", "-final-model", "bayes-fm"}, "bayes-fm", "bayes-fm", "accurate"},
	} {
		code, stdout, stderr := runCLI(append(base, c.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr)
		}
		var rep struct {
			Final     string `json:"final_model"`
			Predictor string `json:"predictor"`
			Preset    string `json:"preset"`
		}
		json.Unmarshal([]byte(stdout), &rep)
		if rep.Final != c.final || rep.Predictor != c.predictor || rep.Preset != c.preset {
			t.Errorf("%v: final %q, predictor %q, preset %q; want %q, %q, %q", c.args, rep.Final, rep.Predictor, rep.Preset, c.final, c.predictor, c.preset)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-preset", "fast"}, `-preset "fast": want paper or accurate`},
		{[]string{"-final-model", "xgboost"}, `final model "xgboost"`},
	} {
		if code, _, stderr := runCLI(append(base, c.args...)...); code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d (%s), want %d and %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
	code, _, stderr := runCLI("eval", "-input", "testdata/golden/input.tsv", "-out", t.TempDir(), "-preset", "nope", "-quiet")
	if code != exitUsage || !strings.Contains(stderr, `-preset "nope"`) {
		t.Errorf("eval -preset nope: exit %d, %s", code, stderr)
	}
}
