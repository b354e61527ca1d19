package dain_test

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain"
)

// Tests of -influence tracin-adam and in-run in the pipeline (issue 35);
// the estimators themselves are tested in package tracin.

// variant returns c with the method name's settings.
func variant(t *testing.T, c dain.Config, name string) dain.Config {
	t.Helper()
	v, ok := dain.VariantNamed(name)
	if !ok {
		t.Fatalf("%s is not a variant", name)
	}
	v.Set(&c)
	return c
}

// TestInfluenceEstimatorsShareTheta: TracIn-CP, tracin-adam and in-run
// passes (last and all layers, two last-layer passes sharing Train's one
// validation gradient) riding on one training of Θ give each method the
// new cells it gets when its pass rides alone; and the Adam-aware
// estimators' cells differ from dain's.
func TestInfluenceEstimatorsShareTheta(t *testing.T) {
	x := demoTensor(t, 1500)
	base := ckConfig()
	base.Rank, base.Channels = 2, 2
	all := func(c dain.Config) dain.Config { c.InfluenceLayers = "all"; return c }
	cs := []dain.Config{
		base,
		variant(t, base, "dain-tracin-adam"),
		variant(t, base, "dain-in-run"),
		all(variant(t, base, "dain-tracin-adam")),
		all(variant(t, base, "dain-in-run")),
	}
	const n = 150
	shared, err := dain.NewExperiment(x, cs[0], cpu.New(), cs[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	var cells [][]int32
	for i, c := range cs {
		got, _, err := shared.Augment(context.Background(), c, n)
		if err != nil {
			t.Fatal(err)
		}
		alone, err := dain.NewExperiment(x, c, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := alone.Augment(context.Background(), c, n)
		alone.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Idx, want.Idx) {
			t.Errorf("config %d (%s, %s): the cells differ when the passes share Θ's training", i, c.Influence, c.InfluenceLayers)
		}
		cells = append(cells, got.Idx)
	}
	for i := 1; i < len(cells); i++ {
		if slices.Equal(cells[i], cells[0]) {
			t.Errorf("config %d (%s, %s) draws dain's cells", i, cs[i].Influence, cs[i].InfluenceLayers)
		}
	}
}

// TestInfluenceCheckpointResume: runs with tracin-adam and in-run stopped
// during Θ's training (after an epoch's training, before its passes and
// its save; after a save) and resumed give the uninterrupted run's report
// and cells bit for bit.
func TestInfluenceCheckpointResume(t *testing.T) {
	x := demoTensor(t, 1500)
	for _, v := range []struct {
		influence, layers, opt, stage string
	}{
		{"tracin-adam", "last", "adam", "theta-mlp.tracin-adam-last"},
		{"tracin-adam", "all", "sparse-adam", "theta-mlp.tracin-adam-all"},
		{"in-run", "last", "sparse-adam", "theta-mlp.in-run-last-k2-v100"},
		{"in-run", "all", "adam", "theta-mlp.in-run-all-k2-v100"},
	} {
		t.Run(v.stage+"-"+v.opt, func(t *testing.T) {
			c := ckConfig()
			c.Rank, c.Channels = 2, 2
			c.Influence, c.InfluenceLayers, c.EmbeddingOptimizer = dain.InfluenceKind(v.influence), dain.LayerSet(v.layers), v.opt
			c.InfluenceEvery, c.InfluenceValSample = 2, 100
			want, err := dain.Run(context.Background(), x, c, cpu.New())
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Report.HistoryBefore) < 3 {
				t.Fatalf("Θ trained %d epochs: too few to stop in", len(want.Report.HistoryBefore))
			}
			if v.influence == "in-run" && (want.Report.InfluenceEvery != 2 || want.Report.InfluenceValSample != 100) {
				t.Errorf("report: influence every %d, validation sample %d", want.Report.InfluenceEvery, want.Report.InfluenceValSample)
			}
			resumesAt(t, x, c, want,
				dain.CheckpointPoint{Stage: v.stage, Epoch: 2, Event: "trained"},
				dain.CheckpointPoint{Stage: v.stage, Epoch: 1, Event: "saved"})
		})
	}
}

// TestInRunReport: an in-run run reports its settings (the sample capped
// at the validation set) and the time of its passes; a run of another
// estimator reports none; negative settings are refused.
func TestInRunReport(t *testing.T) {
	x := demoTensor(t, 800)
	c := variant(t, small(), "dain-in-run")
	c.Epochs, c.Rank, c.Channels = 2, 2, 2
	r, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	rep := r.Report
	if rep.Influence != "in-run" || rep.InfluenceEvery != dain.DefaultInfluenceEvery || rep.InfluenceValSample != min(dain.DefaultInfluenceValSample, rep.NVal) {
		t.Errorf("report: influence %q every %d sample %d (validation %d)", rep.Influence, rep.InfluenceEvery, rep.InfluenceValSample, rep.NVal)
	}
	if !(rep.Seconds.Influence > 0) {
		t.Errorf("in-run's seconds: %v", rep.Seconds.Influence)
	}
	for _, bad := range []func(*dain.Config){
		func(c *dain.Config) { c.InfluenceEvery = -1 },
		func(c *dain.Config) { c.InfluenceValSample = -5 },
	} {
		c := small()
		bad(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", reflect.ValueOf(c).FieldByName("InfluenceEvery"))
		}
	}
}
