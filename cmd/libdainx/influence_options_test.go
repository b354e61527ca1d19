package main

import (
	"flag"
	"testing"

	"github.com/dainx/dainx/cmd/internal/cli"
)

// TestInfluenceOptions: the in-run and tracin-adam settings reach the
// configuration as options (the C API's JSON, Python's keywords), like
// every flag of dainx augment.
func TestInfluenceOptions(t *testing.T) {
	fs := flag.NewFlagSet("dainx augment", flag.ContinueOnError)
	a := cli.NewAugment(fs)
	if err := setOptions(fs, `{"influence":"in-run","influence-layers":"all","influence-every":4,"influence-val-sample":"256","method":"dain-tracin-adam"}`, augmentSkip); err != nil {
		t.Fatal(err)
	}
	c := a.Config
	if c.Influence != "in-run" || c.InfluenceLayers != "all" || c.InfluenceEvery != 4 || c.InfluenceValSample != 256 || a.Method != "dain-tracin-adam" {
		t.Errorf("options not applied: influence %q layers %q every %d sample %d method %q", c.Influence, c.InfluenceLayers, c.InfluenceEvery, c.InfluenceValSample, a.Method)
	}
}
