package dain_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/cluster/clustertest"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// savedModels records what Keep.Model and Keep.Bayes are handed: each
// role's parameters (a net's) or posterior samples (a bayes-fm's), and on
// which ranks they were handed over.
type savedModels struct {
	mu     sync.Mutex
	params map[string][]float32
	bayes  map[string][]float64 // a bayes-fm's predictions of query's cells
	query  *tensor.COO
	ranks  map[string][]int
}

// keep sets c.Keep to ask for the importance and every model, into s (as
// rank rank), and for the split and the scores if told to. A bayes-fm
// model is recorded by its predictions of s.query's cells.
func (s *savedModels) keep(c *dain.Config, rank int, split, scores bool) {
	s.mu.Lock()
	if s.params == nil {
		s.params, s.bayes, s.ranks = map[string][]float32{}, map[string][]float64{}, map[string][]int{}
	}
	s.mu.Unlock()
	c.Keep = dain.Keep{Split: split, Scores: scores, Importance: true, AllModels: true}
	c.Keep.Model = func(role string, net *nn.Net) error {
		p, err := net.HostParams()
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.params[role], s.ranks[role] = p, append(s.ranks[role], rank)
		return nil
	}
	c.Keep.Bayes = func(role string, m *bayes.Model) error {
		p, err := m.Predict(s.query)
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.bayes[role], s.ranks[role] = p, append(s.ranks[role], rank)
		return nil
	}
}

// untimed returns rep without its wall times (and without Dist), which
// differ from run to run.
func untimed(rep dain.Report) dain.Report {
	rep.Seconds = dain.Seconds{}
	rep.Dist = nil
	rep.HistoryBefore, rep.HistoryAfter = slices.Clone(rep.HistoryBefore), slices.Clone(rep.HistoryAfter)
	for _, h := range [][]dain.EpochLog{rep.HistoryBefore, rep.HistoryAfter} {
		for i := range h {
			h[i].Seconds = 0
		}
	}
	return rep
}

// TestRunOnLocalIsRun: RunOn on cluster.Local is Run, bit for bit, with
// the options RunOn refused before issue 48: no test set (TestFrac 0) and
// every field of Config.Keep (the split, the scores, the importance, Θ,
// the value predictor and Θ′, a net or a bayes-fm); so is RunOn on a job
// of one process (clustertest), but for the report's Dist.
func TestRunOnLocalIsRun(t *testing.T) {
	x := demoTensor(t, 3000)
	for _, final := range []string{dain.FinalMLP, dain.FinalBayesFM} {
		c := small()
		c.TestFrac, c.FinalModel, c.BayesRank, c.BayesSamples = 0, final, 4, 20
		want, local, job := savedModels{query: x}, savedModels{query: x}, savedModels{query: x}
		cw, cl, cj := c, c, c
		want.keep(&cw, 0, true, true)
		local.keep(&cl, 0, true, true)
		job.keep(&cj, 0, true, true)
		w, err := dain.Run(context.Background(), x, cw, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		g, err := dain.RunOn(context.Background(), cluster.Local{}, &tensor.Part{Cells: x, NNZ: x.NNZ()}, cl, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		var j *dain.Result
		clustertest.Run(1, func(r clustertest.Rank) {
			j, err = dain.RunOn(context.Background(), r, &tensor.Part{Cells: x, NNZ: x.NNZ()}, cj, cpu.New())
		})
		if err != nil {
			t.Fatal(err)
		}
		if !w.Report.NoTest || w.Report.NTest != 0 || w.Report.FinalModel != final {
			t.Fatalf("%s: no test set %v, %d test cells, final model %s", final, w.Report.NoTest, w.Report.NTest, w.Report.FinalModel)
		}
		if g.Report.Dist != nil || j.Report.Dist == nil || j.Report.Dist.Ranks != 1 {
			t.Errorf("%s: dist %+v on cluster.Local, %+v on a job of one", final, g.Report.Dist, j.Report.Dist)
		}
		for _, got := range []struct {
			name  string
			res   *dain.Result
			saved *savedModels
		}{{"cluster.Local", g, &local}, {"a job of one process", j, &job}} {
			if !reflect.DeepEqual(untimed(got.res.Report), untimed(w.Report)) {
				t.Errorf("%s, %s: report\n%+v\nRun's\n%+v", final, got.name, untimed(got.res.Report), untimed(w.Report))
			}
			if !reflect.DeepEqual(got.res.Aug, w.Aug) || !reflect.DeepEqual(got.res.Split, w.Split) || !reflect.DeepEqual(got.res.Scores, w.Scores) || !reflect.DeepEqual(got.res.Importance, w.Importance) {
				t.Errorf("%s, %s: the new cells, split, scores or importance differ from Run's", final, got.name)
			}
			if w.Split == nil || w.Scores == nil || w.Importance == nil {
				t.Fatalf("%s: Run kept split %v, scores %v, importance %v", final, w.Split != nil, w.Scores != nil, w.Importance != nil)
			}
			if !reflect.DeepEqual(got.saved.params, want.params) || !reflect.DeepEqual(got.saved.bayes, want.bayes) || !reflect.DeepEqual(got.saved.ranks, want.ranks) {
				t.Errorf("%s, %s: the saved models differ from Run's (roles %v, Run's %v)", final, got.name, got.saved.ranks, want.ranks)
			}
		}
		roles := []string{"predictor", "theta", "theta-prime"}
		var have []string
		for r := range want.ranks {
			have = append(have, r)
		}
		slices.Sort(have)
		if !slices.Equal(have, roles) || (final == dain.FinalBayesFM) != (want.bayes["theta-prime"] != nil) {
			t.Errorf("%s: models handed over: %v (bayes-fm %v)", final, have, want.bayes["theta-prime"] != nil)
		}
	}
}

// TestRunOnRanksKeep: on 2 ranks, with no test set, the entity importance
// is Run's on every rank (within the summation order's rounding), and the
// models are handed over once, on rank 0; the split and the scores, which
// each rank holds its share of, and the models of a sharded table are
// refused on every rank, naming the flag.
func TestRunOnRanksKeep(t *testing.T) {
	x := demoTensor(t, 3000)
	c := small()
	c.TestFrac = 0
	var want savedModels
	cw := c
	want.keep(&cw, 0, false, false)
	w, err := dain.Run(context.Background(), x, cw, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	n := x.NNZ()
	shard := func(r, p int) *tensor.Part {
		lo, hi := r*n/p, (r+1)*n/p
		return &tensor.Part{Cells: x.Subset(seqRows(lo, hi)), First: lo, NNZ: n}
	}
	var saved savedModels
	res := make([]*dain.Result, 2)
	errs := make([]error, 2)
	clustertest.Run(2, func(r clustertest.Rank) {
		cr := c
		saved.keep(&cr, r.Rank(), false, false)
		res[r.Rank()], errs[r.Rank()] = dain.RunOn(context.Background(), r, shard(r.Rank(), 2), cr, cpu.New())
	})
	for r, got := range res {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
		g := got.Report
		if !g.NoTest || g.NTest != 0 || g.SplitFingerprint != w.Report.SplitFingerprint || g.NAug != w.Report.NAug {
			t.Fatalf("rank %d: no test %v, split %s, %d new cells; Run's %s, %d", r, g.NoTest, g.SplitFingerprint, g.NAug, w.Report.SplitFingerprint, w.Report.NAug)
		}
		for _, p := range [][2]float64{{g.RMSEBefore, w.Report.RMSEBefore}, {g.RMSEAfter, w.Report.RMSEAfter}} {
			if math.Abs(p[0]/p[1]-1) > 0.01 {
				t.Errorf("rank %d: RMSE %v, Run's %v", r, p[0], p[1])
			}
		}
		if len(got.Importance) != len(w.Importance) {
			t.Fatalf("rank %d: importance of %d modes", r, len(got.Importance))
		}
		for m := range w.Importance {
			for i, a := range w.Importance[m] {
				if d := math.Abs(got.Importance[m][i] - a); d > 1e-3*math.Max(a, 1e-3) {
					t.Fatalf("rank %d: mode %d entity %d: importance %v, Run's %v", r, m+1, i, got.Importance[m][i], a)
				}
			}
		}
		if got.Split != nil || got.Scores != nil {
			t.Errorf("rank %d: a split or scores not asked for", r)
		}
	}
	for role, ranks := range saved.ranks {
		if !slices.Equal(ranks, []int{0}) || len(saved.params[role]) != len(want.params[role]) {
			t.Errorf("model %s handed over on ranks %v with %d parameters (Run's %d)", role, ranks, len(saved.params[role]), len(want.params[role]))
		}
	}
	if len(saved.ranks) != len(want.ranks) {
		t.Errorf("models handed over: %v, Run's %v", saved.ranks, want.ranks)
	}

	for _, bad := range []struct {
		flag string
		set  func(c *dain.Config)
	}{
		{"-split-out", func(c *dain.Config) { c.Keep.Split = true }},
		{"-scores-out", func(c *dain.Config) { c.Keep.Scores = true }},
		{"-model-out", func(c *dain.Config) {
			c.ShardTables = "on"
			c.Keep.Model = func(string, *nn.Net) error { return nil }
		}},
	} {
		clustertest.Run(2, func(r clustertest.Rank) {
			cr := c
			bad.set(&cr)
			_, errs[r.Rank()] = dain.RunOn(context.Background(), r, shard(r.Rank(), 2), cr, cpu.New())
		})
		for r, err := range errs {
			if err == nil || !errors.Is(err, dain.ErrAgreed) || !strings.Contains(err.Error(), bad.flag) {
				t.Errorf("%s on 2 ranks: rank %d: %v", bad.flag, r, err)
			}
		}
	}
}

// TestRunOnRanksSaveError: a model saver's error on rank 0 ends the run on
// every rank at the same point (ErrAgreed), rank 0 with its own error.
func TestRunOnRanksSaveError(t *testing.T) {
	x := demoTensor(t, 3000)
	c := small()
	c.Epochs = 1
	boom := errors.New("disk full")
	n := x.NNZ()
	errs := make([]error, 2)
	clustertest.Run(2, func(r clustertest.Rank) {
		cr := c
		cr.Keep.Model = func(string, *nn.Net) error { return boom }
		lo, hi := r.Rank()*n/2, (r.Rank()+1)*n/2
		_, errs[r.Rank()] = dain.RunOn(context.Background(), r, &tensor.Part{Cells: x.Subset(seqRows(lo, hi)), First: lo, NNZ: n}, cr, cpu.New())
	})
	if !errors.Is(errs[0], boom) || !errors.Is(errs[0], dain.ErrAgreed) {
		t.Errorf("rank 0: %v", errs[0])
	}
	if !errors.Is(errs[1], dain.ErrOtherProcess) || !errors.Is(errs[1], dain.ErrAgreed) {
		t.Errorf("rank 1: %v", errs[1])
	}
}

func seqRows(lo, hi int) []int {
	out := make([]int, hi-lo)
	for i := range out {
		out[i] = lo + i
	}
	return out
}
