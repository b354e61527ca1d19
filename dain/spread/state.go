package spread

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/dain/config"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// State is how an experiment's cells (package dain's Experiment) are
// spread over the processes of Cl. Its methods are collective unless they
// say otherwise.
type State struct {
	Cl cluster.Cluster
	// Counts are the training, validation and test cells over every
	// process (the experiment's Train etc. hold this process's).
	Counts [3]int
	// TrainFirst is the global number of this process's first training
	// cell (its training cells are consecutive in the global order).
	TrainFirst int
	// ValFirst is the global number of this process's first validation
	// cell, likewise.
	ValFirst int
	// Dist, for a run in a job (package dain's inJob), gathers the
	// report's Report; nil on cluster.Local.
	Dist *Recorder
}

// Many reports whether the cells are spread over more than one process
// (not collective).
func (s *State) Many() bool { return s.Cl.Size() > 1 }

// NTrain returns the number of training cells over every process (not
// collective).
func (s *State) NTrain() int { return s.Counts[0] }

// SplitOn splits the shard sh of the tensor (step 0) under cfg's split:
// it returns this process's cells of each part (train, validation, test),
// adds the split's fingerprint over every process to print, and sets the
// parts' global counts and this process's first training and validation
// cells' global numbers.
func (s *State) SplitOn(sh *tensor.Part, cfg config.Config, print *SplitPrint) (train, val, test *tensor.COO) {
	cl := s.Cl
	lo, hi := sh.First, sh.First+sh.Cells.NNZ()
	part, trFirst, counts := cfg.SplitParts(sh.NNZ, lo, hi)
	print.Add(part, lo)
	cl.SumI64(print[:])
	var mine [3]int64
	for _, p := range part {
		mine[p]++
	}
	if trFirst < 0 {
		per := make([]int64, cl.Size())
		per[cl.Rank()] = mine[tensor.PartTrain]
		cl.SumI64(per)
		trFirst = 0
		for r := 0; r < cl.Rank(); r++ {
			trFirst += int(per[r])
		}
	}
	// One byte per cell beside the shard, and each part allocated at its
	// size: the split holds the shard and its parts, nothing more.
	parts := sh.Cells.Partition(part, 3)
	train, val, test = parts[tensor.PartTrain], parts[tensor.PartVal], parts[tensor.PartTest]
	s.Counts, s.TrainFirst = counts, trFirst
	if cl.Size() > 1 {
		// The global number of this process's first validation cell
		// (in-run's sample is drawn from the global numbering).
		per := make([]int64, cl.Size())
		per[cl.Rank()] = mine[tensor.PartVal]
		cl.SumI64(per)
		for r := 0; r < cl.Rank(); r++ {
			s.ValFirst += int(per[r])
		}
	}
	return train, val, test
}

// TrainStats returns the largest |value| and the mean of the training
// cells (train, this process's) over every process.
func (s *State) TrainStats(train *tensor.COO) (maxAbs, mean float64) {
	sum := 0.0
	for _, v := range train.Val {
		maxAbs = max(maxAbs, math.Abs(v))
		sum += v
	}
	if s.Many() {
		t := []float64{sum}
		s.Cl.SumF64(t)
		sum = t[0]
		for _, m := range s.Cl.GatherF64([]float64{maxAbs}) {
			maxAbs = max(maxAbs, m)
		}
	}
	return maxAbs, sum / float64(s.NTrain())
}

// Sharding returns how the embedding table of a model of kind over dims is
// sharded over the processes under cfg: nil (replicated) on cluster.Local
// (no Dist), for the kinds other than mlp and costco, and where
// Config.ShardTables and the table's size (Config.ShardPlan) say so; the
// report names the sharded tables, and logf the first sharding of each.
// An error is ShardPlan's (not collective).
func (s *State) Sharding(cfg config.Config, dims []int, kind string, logf func(string, ...any)) (*nn.Sharding, error) {
	d := s.Dist
	if d == nil || (kind != nn.KindMLP && kind != nn.KindCoSTCo) {
		return nil, nil
	}
	on, _, why, err := cfg.ShardPlan(kind, dims, s.Cl.Size())
	if err != nil || !on {
		return nil, err
	}
	if !slices.Contains(d.Report.ShardedTables, kind) {
		d.Report.ShardedTables = append(d.Report.ShardedTables, kind)
		d.Report.Exchange = "sharded"
		logf("dainx: %s's embedding table sharded by row over the ranks (%s)", kind, why)
	}
	return &nn.Sharding{Comm: s.Cl}, nil
}

// GlobalNNZ returns the number of cells of x over every process (x holds
// this process's share).
func (s *State) GlobalNNZ(x *tensor.COO) int {
	n := []int64{int64(x.NNZ())}
	s.Cl.SumI64(n)
	return int(n[0])
}

// Spans numbers this process's ntrain training cells, then its new cells
// (naug of them, the first of which is augFirst among every process's),
// in the global order of train ∪ aug: the training cells first, then the
// new cells in their order over the processes (not collective).
func (s *State) Spans(ntrain, naug, augFirst int) []nn.Span {
	out := []nn.Span{{Global: s.TrainFirst, Local: 0, N: ntrain}}
	if naug > 0 {
		out = append(out, nn.Span{Global: s.NTrain() + augFirst, Local: ntrain, N: naug})
	}
	return out
}

// Fit trains m on this process's cells set (numbered by owned among the
// global cells, global of them) with validation set val: nn.Train, data
// parallel over the processes when there are several (or the table is
// sharded), the embedding gradients exchanged as cfg says for a tensor of
// dims. An error is nn.Train's.
func (s *State) Fit(ctx context.Context, cfg config.Config, dims []int, m *nn.Net, set, val *nn.Set, tc nn.TrainConfig, global int, owned []nn.Span) (nn.Result, error) {
	if s.Many() || m.Sharded() {
		exchange := ""
		if !m.Sharded() {
			rows := 0
			for _, d := range dims {
				rows += d
			}
			exchange = cfg.ExchangeFor(rows, tc.Batch, len(dims))
		}
		var comm *time.Duration
		if s.Dist != nil {
			comm = &s.Dist.Comm
		}
		tc.Dist = &nn.DistConfig{Cluster: s.Cl, Global: global, Owned: owned, ValGlobal: s.Counts[1], Exchange: exchange, Comm: comm}
	}
	res, err := nn.Train(ctx, m, set, val, tc)
	if err == nil && s.Dist != nil {
		s.Dist.Report.Steps += len(res.Epochs) * ((global + tc.Batch - 1) / tc.Batch)
	}
	return res, err
}

// EvalMSE returns m's mean squared error on the cells of set over every
// process (n of them). An error is m.Evaluate's.
func (s *State) EvalMSE(m *nn.Net, set *nn.Set, n int) (float64, error) {
	if !s.Many() {
		return m.Evaluate(set)
	}
	sum := []float64{0}
	if set.Len() > 0 || m.Sharded() { // a sharded table: every process takes part
		v, err := m.Evaluate(set)
		if err != nil {
			return 0, err
		}
		if set.Len() > 0 {
			sum[0] = v * float64(set.Len())
		}
	}
	s.Cl.SumF64(sum)
	return sum[0] / float64(n), nil
}

// SummerF32 and SummerF64 return the cluster's sums when the cells are
// spread over several processes, else nil (the one-process code of
// tracin).
func (s *State) SummerF32() func([]float32) {
	if !s.Many() {
		return nil
	}
	return s.Cl.SumF32
}

func (s *State) SummerF64() func([]float64) {
	if !s.Many() {
		return nil
	}
	return s.Cl.SumF64
}

// AgreeErr returns err unchanged in one process; spread over several, it
// returns err (cluster.Agree) on the processes that have one, an agreed
// cluster.ErrOtherProcess on the others when any has one, and nil when
// none has, so that every process returns at the same point.
func (s *State) AgreeErr(err error) error { return agreeErr(s.Cl, err) }

// ShareOn returns the share of the K×order cells (this process's of
// cells spread over the processes) whose index in mode n is marked in in,
// over every process; 0 for no cells.
func (s *State) ShareOn(cells []int32, order, n int, in []bool) float64 {
	k := len(cells) / order
	hit := 0
	for c := 0; c < k; c++ {
		if in[cells[c*order+n]] {
			hit++
		}
	}
	if s.Many() {
		t := []int64{int64(hit), int64(k)}
		s.Cl.SumI64(t)
		hit, k = int(t[0]), int(t[1])
	}
	if k == 0 {
		return 0
	}
	return float64(hit) / float64(k)
}
