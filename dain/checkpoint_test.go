package dain_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/tensor"
)

// errKilled stands for a kill: the hook returns it at the chosen point and
// the run stops there, keeping only what it had saved.
var errKilled = errors.New("killed")

// ckConfig is a run with every training stage (Θ with TracIn, CoSTCo, the
// retraining) over a few epochs, with early stopping possible.
func ckConfig() dain.Config {
	c := small()
	c.Epochs, c.Patience = 5, 3
	c.Rank, c.Channels, c.CoSTCoBatch = 4, 4, 128
	return c
}

// withoutTimes returns r's report and cells with every wall time zeroed.
func withoutTimes(r *dain.Result) (dain.Report, *tensor.COO) {
	rep := r.Report
	rep.Seconds = dain.Seconds{}
	for _, h := range []*[]dain.EpochLog{&rep.HistoryBefore, &rep.HistoryAfter} {
		*h = append([]dain.EpochLog(nil), (*h)...)
		for i := range *h {
			(*h)[i].Seconds = 0
		}
	}
	return rep, r.Aug
}

// sameRun fails unless got equals want bit for bit, wall times aside.
func sameRun(t *testing.T, what string, want, got *dain.Result) {
	t.Helper()
	wr, wa := withoutTimes(want)
	gr, ga := withoutTimes(got)
	if !reflect.DeepEqual(wr, gr) {
		t.Errorf("%s: the report differs from the uninterrupted run's:\nwant %+v\ngot  %+v", what, wr, gr)
	}
	if !reflect.DeepEqual(wa, ga) {
		t.Errorf("%s: the augmented cells differ from the uninterrupted run's", what)
	}
}

// killAt runs with checkpoints in dir and stops the run at point p; it
// fails unless the run reached p.
func killAt(t *testing.T, x *tensor.COO, c dain.Config, dir string, resume bool, p dain.CheckpointPoint) {
	t.Helper()
	reached := false
	_, err := dain.RunCheckpointed(context.Background(), x, c, cpu.New(), dain.Checkpoint{Dir: dir, Resume: resume, Input: "demo",
		Hook: func(q dain.CheckpointPoint) error {
			if q == p {
				reached = true
				return errKilled
			}
			return nil
		}})
	if !reached || !errors.Is(err, errKilled) {
		t.Fatalf("kill at %+v: reached %v, error %v", p, reached, err)
	}
}

// TestCheckpointResume: a run stopped at any of several points — after
// Θ's first epoch, during TracIn, during CoSTCo, after the augmentation,
// during and after the retraining — and resumed gives the report and the
// augmented cells of the uninterrupted run, bit for bit; so does a run
// stopped and resumed three times, and one that was checkpointed but never
// stopped.
func TestCheckpointResume(t *testing.T) {
	x := demoTensor(t, 2000)
	c := ckConfig()
	want, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Report.HistoryBefore) < 3 || want.Report.NAug == 0 {
		t.Fatalf("the reference run is too short to test: %d epochs, %d new cells", len(want.Report.HistoryBefore), want.Report.NAug)
	}
	theta := "theta-mlp.tracin-last"
	lastRetrain := len(want.Report.HistoryAfter)
	points := []dain.CheckpointPoint{
		{Stage: theta, Epoch: 1, Event: "saved"},   // after Θ's first epoch
		{Stage: theta, Epoch: 2, Event: "trained"}, // Θ's epoch 2 trained, before its TracIn pass
		{Stage: theta, Epoch: 3, Event: "tracin"},  // during TracIn: its pass ran, not saved
		{Stage: "theta-costco", Epoch: 1, Event: "saved"},
		{Stage: "theta-costco", Epoch: 2, Event: "trained"}, // during CoSTCo
		{Stage: "augmented", Epoch: 0, Event: "saved"},
		{Stage: "retrain", Epoch: 2, Event: "trained"}, // during the retraining
		{Stage: "retrain", Epoch: lastRetrain, Event: "saved"},
	}
	resumesAt(t, x, c, want, points...)
	t.Run("three-kills", func(t *testing.T) {
		dir := t.TempDir()
		killAt(t, x, c, dir, false, points[2])
		killAt(t, x, c, dir, true, points[4])
		killAt(t, x, c, dir, true, points[6])
		got, err := dain.RunCheckpointed(context.Background(), x, c, cpu.New(), dain.Checkpoint{Dir: dir, Resume: true})
		if err != nil {
			t.Fatal(err)
		}
		sameRun(t, "resumed three times", want, got)
	})
	t.Run("never-stopped", func(t *testing.T) {
		dir := t.TempDir()
		got, err := dain.RunCheckpointed(context.Background(), x, c, cpu.New(), dain.Checkpoint{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		sameRun(t, "checkpointed", want, got)
		// Resuming a finished run gives its result again.
		again, err := dain.RunCheckpointed(context.Background(), x, c, cpu.New(), dain.Checkpoint{Dir: dir, Resume: true})
		if err != nil {
			t.Fatal(err)
		}
		sameRun(t, "resumed after the end", want, again)
	})
}

// TestCheckpointBaselines: the baselines and other models resume
// bit-identically too (MLP predictor, entity replacement, CoSTCo as Θ,
// TracIn over all layers), and so does every training stage with
// sparse-adam.
func TestCheckpointBaselines(t *testing.T) {
	x := demoTensor(t, 1500)
	for _, v := range []struct {
		set   func(*dain.Config)
		stage string
	}{
		{func(c *dain.Config) { c.Predictor = "mlp" }, "theta-mlp.tracin-last"},
		{func(c *dain.Config) { c.Method = "entity-replacement" }, "theta-mlp"},
		{func(c *dain.Config) { c.Model = "costco" }, "theta-costco.tracin-last"},
		{func(c *dain.Config) { c.InfluenceLayers = "all" }, "theta-mlp.tracin-all"},
		{func(c *dain.Config) { c.EmbeddingOptimizer = "sparse-adam" }, "theta-mlp.tracin-last"},
		{func(c *dain.Config) { c.EmbeddingOptimizer = "sparse-adam" }, "theta-costco"},
		{func(c *dain.Config) { c.EmbeddingOptimizer = "sparse-adam" }, "retrain"},
		// A final model other than the MLP trains twice in step 5: on
		// train alone (rmse_before, its own stage) and on train ∪ the
		// new cells; neither may resume the other's state.
		{func(c *dain.Config) { c.FinalModel = "fm" }, "final-alone"},
		{func(c *dain.Config) { c.FinalModel = "fm" }, "retrain"},
		{func(c *dain.Config) { c.FinalModel = "hybrid" }, "retrain"},
	} {
		c := ckConfig()
		v.set(&c)
		t.Run(v.stage+"-"+string(c.Method)+"-"+c.Predictor+"-"+c.EmbeddingOptimizer+"-"+c.FinalModel, func(t *testing.T) {
			want, err := dain.Run(context.Background(), x, c, cpu.New())
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			killAt(t, x, c, dir, false, dain.CheckpointPoint{Stage: v.stage, Epoch: 2, Event: "trained"})
			got, err := dain.RunCheckpointed(context.Background(), x, c, cpu.New(), dain.Checkpoint{Dir: dir, Resume: true})
			if err != nil {
				t.Fatal(err)
			}
			sameRun(t, "resumed", want, got)
		})
	}
}

// TestCheckpointRefusals: another configuration or input is refused with
// the difference named; an existing checkpoint is not overwritten without
// Resume; a damaged file is reported; a temporary file a kill left behind
// is ignored.
func TestCheckpointRefusals(t *testing.T) {
	x := demoTensor(t, 1500)
	c := ckConfig()
	dir := t.TempDir()
	killAt(t, x, c, dir, false, dain.CheckpointPoint{Stage: "theta-mlp.tracin-last", Epoch: 2, Event: "saved"})
	ctx, be := context.Background(), cpu.New()

	_, err := dain.RunCheckpointed(ctx, x, c, be, dain.Checkpoint{Dir: dir})
	if !errors.Is(err, dain.ErrCheckpointExists) || !strings.Contains(err.Error(), "-resume") {
		t.Errorf("without Resume: %v", err)
	}
	other := c
	other.LR = 0.002
	_, err = dain.RunCheckpointed(ctx, x, other, be, dain.Checkpoint{Dir: dir, Resume: true})
	if err == nil || !strings.Contains(err.Error(), "-lr 0.001; this run has -lr 0.002") {
		t.Errorf("another -lr: %v", err)
	}
	other = c
	other.Layers = []int{24, 16}
	_, err = dain.RunCheckpointed(ctx, x, other, be, dain.Checkpoint{Dir: dir, Resume: true})
	if err == nil || !strings.Contains(err.Error(), "-layers 24,16,8; this run has -layers 24,16") {
		t.Errorf("other -layers: %v", err)
	}
	y := x.Subset(nil)
	y.Idx, y.Val = append([]int32(nil), x.Idx...), append([]float64(nil), x.Val...)
	y.Val[7] += 0.5
	_, err = dain.RunCheckpointed(ctx, y, c, be, dain.Checkpoint{Dir: dir, Resume: true, Input: "other.tsv"})
	if err == nil || !strings.Contains(err.Error(), "another input") || !strings.Contains(err.Error(), "other.tsv") {
		t.Errorf("another input: %v", err)
	}

	// A temporary file from a kill during a write is removed and ignored.
	tmp := filepath.Join(dir, ".theta-mlp.tracin-last.train.ckpt.tmp-12345")
	if err := os.WriteFile(tmp, []byte("DAINXCKP half"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := dain.Run(ctx, x, c, be)
	if err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(dir, "theta-mlp.tracin-last.train.ckpt")
	good, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dain.RunCheckpointed(ctx, x, c, be, dain.Checkpoint{Dir: dir, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	sameRun(t, "resumed beside a stale temporary file", want, got)
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the temporary file is still there: %v", err)
	}

	// Damaged files are refused, saying so.
	for name, b := range map[string][]byte{
		"truncated": good[:len(good)/2],
		"flipped":   append(append(append([]byte(nil), good[:len(good)/2]...), good[len(good)/2]^1), good[len(good)/2+1:]...),
		"not ours":  []byte("hello"),
	} {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "theta-mlp.tracin-last.train.ckpt"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := dain.RunCheckpointed(ctx, x, c, be, dain.Checkpoint{Dir: d, Resume: true})
		if err == nil || !strings.Contains(err.Error(), "not a whole dainx checkpoint") {
			t.Errorf("%s file: %v", name, err)
		}
	}
}

// TestResumeEmptyDir: Resume with no checkpoint yet starts afresh.
func TestResumeEmptyDir(t *testing.T) {
	x := demoTensor(t, 1500)
	c := ckConfig()
	c.Epochs = 2
	want, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	got, err := dain.RunCheckpointed(context.Background(), x, c, cpu.New(), dain.Checkpoint{Dir: filepath.Join(t.TempDir(), "new"), Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	sameRun(t, "resumed from nothing", want, got)
}

// TestCheckpointKeyed: with the keyed split and orders a run killed during
// each training stage resumes bit-identically (each epoch's order is
// recomputed from the seed, not restored), and the report names the split;
// its part sizes are the legacy split's.
func TestCheckpointKeyed(t *testing.T) {
	x := demoTensor(t, 2000)
	c := ckConfig()
	c.Split = dain.SplitKeyed
	want, err := dain.Run(context.Background(), x, c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	lc := ckConfig()
	lc.Split = dain.SplitLegacy
	legacy, err := dain.Run(context.Background(), x, lc, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	if want.Report.Split != "keyed" || legacy.Report.Split != "legacy" {
		t.Errorf("reports name the splits %q and %q", want.Report.Split, legacy.Report.Split)
	}
	if want.Report.NTrain != legacy.Report.NTrain || want.Report.NVal != legacy.Report.NVal || want.Report.NTest != legacy.Report.NTest {
		t.Errorf("keyed split %d/%d/%d, legacy %d/%d/%d", want.Report.NTrain, want.Report.NVal, want.Report.NTest, legacy.Report.NTrain, legacy.Report.NVal, legacy.Report.NTest)
	}
	if want.Report.RMSEBefore == legacy.Report.RMSEBefore {
		t.Errorf("the keyed and legacy splits gave the same test RMSE %v: the same split?", want.Report.RMSEBefore)
	}
	resumesAt(t, x, c, want,
		dain.CheckpointPoint{Stage: "theta-mlp.tracin-last", Epoch: 2, Event: "trained"},
		dain.CheckpointPoint{Stage: "theta-costco", Epoch: 2, Event: "trained"},
		dain.CheckpointPoint{Stage: "retrain", Epoch: 2, Event: "trained"})
}

// resumesAt kills a checkpointed run of c on x at each point (a subtest
// each) and checks that resuming it gives want, the uninterrupted run.
func resumesAt(t *testing.T, x *tensor.COO, c dain.Config, want *dain.Result, points ...dain.CheckpointPoint) {
	t.Helper()
	for _, p := range points {
		t.Run(fmt.Sprintf("%s-%d-%s", p.Stage, p.Epoch, p.Event), func(t *testing.T) {
			dir := t.TempDir()
			killAt(t, x, c, dir, false, p)
			got, err := dain.RunCheckpointed(context.Background(), x, c, cpu.New(), dain.Checkpoint{Dir: dir, Resume: true, Input: "demo"})
			if err != nil {
				t.Fatal(err)
			}
			sameRun(t, "resumed", want, got)
		})
	}
}
