package config

import (
	"strings"
	"testing"

	"github.com/dainx/dainx/checkpoint/rundir"
	"github.com/dainx/dainx/tensor"
)

// TestCheckpointEffective: settings compare by what they resolve to (no
// -layers: the default layers; auto: the optimiser picked on the input;
// -shard-tables in one process: off), and a setting a file lacks by the
// value the dainx before it used.
func TestCheckpointEffective(t *testing.T) {
	x := &tensor.COO{Dims: []int{12, 10, 8}}
	cfg := DefaultConfig()
	in := rundir.Fingerprint(x, "x")
	dir := func(cfg Config) *rundir.Dir {
		return rundir.New("D", rundir.Header{Config: cfg.CkFields("cpu"), Input: in}, rundir.Run{Effective: cfg.CkEffective(x.Dims, 0), Legacy: CkLegacy})
	}
	c := dir(cfg)
	eff := cfg.CkEffective(x.Dims, 0)
	head := rundir.Header{Config: cfg.CkFields("cpu"), Input: in}
	for _, e := range [][3]string{
		{"-layers", "", "150,1024,1024,128"},
		{"-embedding-optimizer", "auto", "adam"},
		{"-embedding-optimizer", "sparse-adam", "sparse-adam"},
		{"ShardTables", "on", "off"},
		{"-split", "", "keyed"},
	} {
		if got := eff(e[0], e[1]); got != e[2] {
			t.Errorf("%s %q resolves to %q, want %q", e[0], e[1], got, e[2])
		}
	}
	old := head
	old.Config = nil
	for _, f := range head.Config {
		switch f.Name {
		case "-embedding-optimizer", "-split", "ShardTables":
		case "-layers":
			old.Config = append(old.Config, rundir.Field{Name: f.Name, Value: "150,1024,1024,128"})
		default:
			old.Config = append(old.Config, f)
		}
	}
	if err := c.Compatible(old, "D/f.ckpt"); err == nil || !strings.Contains(err.Error(), "made with -split legacy (not recorded") {
		t.Errorf("a file from before -split against -split keyed: %v", err)
	}
	cfg.Split = SplitLegacy
	c = dir(cfg)
	if err := c.Compatible(old, "D/f.ckpt"); err != nil {
		t.Errorf("a file from before -embedding-optimizer, -split and -shard-tables against their old values: %v", err)
	}
	old.Config = append(old.Config, rundir.Field{Name: "-future", Value: "1"})
	if err := c.Compatible(old, "D/f.ckpt"); err == nil || !strings.Contains(err.Error(), "records a setting this dainx does not have, -future 1") {
		t.Errorf("a file with an unknown setting: %v", err)
	}
}
