package dain_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain"
)

// replayBackend is the CPU backend with a compute.Capturer whose graphs
// run the captured function again at each launch, as a CUDA graph replays
// what it recorded (nn's test helper of the same name): the graph path of
// nn.Train on the CPU. It names a GEMM tuning, as the CUDA backend does.
type replayBackend struct {
	compute.Backend
	captures int
}

func (r *replayBackend) Capture(f func()) (compute.Graph, error) {
	r.captures++
	return replayGraph(f), nil
}

func (r *replayBackend) GemmTune() string { return "model" }

type replayGraph func()

func (g replayGraph) Launch() { g() }
func (replayGraph) Free()     {}

// TestGraphsSetting: Config.Graphs reaches every training's
// nn.TrainConfig.Eager: on (and "", the default) replays the steps as
// graphs, off captures none, and both give the same report and cells bit
// for bit but for the report's "graphs", which records the setting; the
// backend's GEMM tuning is in the report too. A Graphs or Exchange that is
// not one of theirs is refused by Validate.
func TestGraphsSetting(t *testing.T) {
	x := demoTensor(t, 1500)
	runs := map[dain.Graphs]*dain.Result{}
	for _, g := range []dain.Graphs{"", dain.GraphsOn, dain.GraphsOff} {
		c := small()
		c.Epochs = 2
		c.Graphs = g
		be := &replayBackend{Backend: cpu.New()}
		r, err := dain.Run(context.Background(), x, c, be)
		if err != nil {
			t.Fatalf("graphs %q: %v", g, err)
		}
		if off := g == dain.GraphsOff; off != (be.captures == 0) {
			t.Errorf("graphs %q: %d graphs captured", g, be.captures)
		}
		want := map[dain.Graphs]string{"": "on", dain.GraphsOn: "on", dain.GraphsOff: "off"}[g]
		if r.Report.Graphs != want || r.Report.GemmTune != "model" {
			t.Errorf("graphs %q: the report says graphs %q, gemm_tune %q; want %s and model", g, r.Report.Graphs, r.Report.GemmTune, want)
		}
		runs[g] = r
	}
	off := *runs[dain.GraphsOff]
	off.Report.Graphs = "on"
	sameRun(t, "graphs off against on", runs[dain.GraphsOn], &off)
	sameRun(t, "graphs \"\" against on", runs[dain.GraphsOn], runs[""])

	// The CPU backend names no GEMM tuning: the report leaves it out.
	r, err := dain.Run(context.Background(), x, small(), cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(r.Report)
	if strings.Contains(string(js), "gemm_tune") || !strings.Contains(string(js), `"graphs":"on"`) {
		t.Errorf("the CPU run's report: %s", js)
	}

	for _, c := range []struct {
		set  func(*dain.Config)
		want string
	}{
		{func(c *dain.Config) { c.Graphs = "maybe" }, `graphs "maybe": want on or off`},
		{func(c *dain.Config) { c.Exchange = "ring" }, `exchange "ring": want auto, dense or sparse`},
	} {
		cfg := small()
		c.set(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate: %v, want %q", err, c.want)
		}
	}
	var g dain.Graphs
	var e dain.Exchange
	if g.Set("off") != nil || g != dain.GraphsOff || g.Set("yes") == nil || e.Set("sparse") != nil || e != dain.ExchangeSparse || e.Set("") == nil {
		t.Errorf("Set: graphs %q, exchange %q", g, e)
	}
}

// TestCheckpointGraphs: a run checkpointed with graphs on resumes with
// graphs off (replay changes no bit) and with another exchange (one
// process exchanges nothing), to the uninterrupted run's result.
func TestCheckpointGraphs(t *testing.T) {
	x := demoTensor(t, 1500)
	c := ckConfig()
	want, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	killAt(t, x, c, dir, false, dain.CheckpointPoint{Stage: "theta-mlp.tracin-last", Epoch: 2, Event: "saved"})
	other := c
	other.Graphs, other.Exchange = dain.GraphsOff, dain.ExchangeDense
	got, err := dain.RunCheckpointed(context.Background(), x, other, cpu.New(), dain.Checkpoint{Dir: dir, Resume: true, Input: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Report.Graphs != "off" {
		t.Errorf("the resumed run's report says graphs %q, want off", got.Report.Graphs)
	}
	got.Report.Graphs = want.Report.Graphs
	sameRun(t, "resumed with -graphs off and -exchange dense", want, got)
}
