package dain

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// This file spreads an Experiment over the processes of a cluster (RunOn,
// dainx augment -dist mpi). Every process holds a share of the observed
// cells (a tensor.Part) and runs the same stages on it: the split keeps each
// process's own cells of each part; every model is trained data parallel
// (nn.TrainConfig.Dist), its embedding table replicated or sharded by row;
// TracIn scores each process's own training cells; entity importance, the
// degree counts and every test or validation error are summed over the
// processes; sampling draws each round's candidates split over the
// processes and judges them by their owners in hash-partitioned cell sets
// (sampling.CellsShared); each process predicts, retrains on and writes its
// own share of the new cells. On one process (cluster.Local, Run) every
// collective is the identity and each stage is the one-process code: a
// single process is a cluster of one. What needs a global view goes
// through the cluster here and in package spread (its arithmetic over the
// processes, and the report of the ranks).

// spreadState is how an Experiment's cells are spread over the processes.
type spreadState struct {
	cl cluster.Cluster
	// counts are the training, validation and test cells over every
	// process (e.Train etc. hold this process's).
	counts [3]int
	// trainFirst is the global number of this process's first training
	// cell (its training cells are consecutive in the global order).
	trainFirst int
	// valFirst is the global number of this process's first validation
	// cell, likewise.
	valFirst int
	// dist, for a run in a job (inJob), gathers the report's DistReport;
	// nil on cluster.Local.
	dist *spread.Recorder
}

// inJob reports whether cl is the processes of a job (an MPI job's ranks,
// a test's goroutines), even of one, rather than cluster.Local, the one
// process outside any. It is all that a run tells from its cluster besides
// its size and rank: a run in a job reports its ranks and their times
// (Report.Dist) and checkpoints each process in a directory of its own
// (rundir.OpenDist); the rest, and every result, is the same.
func inJob(cl cluster.Cluster) bool {
	switch cl.(type) {
	case cluster.Local, *cluster.Local:
		return false
	}
	return true
}

// NewExperimentOn is NewExperiment on this process's shard sh of a tensor
// spread over the processes of cl (each calling it with its own shard and
// the same configurations); NewExperiment is NewExperimentOn on
// cluster.Local. Every stage of the experiment is then collective: the
// processes must call the same methods in the same order. sh is read, not
// kept (another experiment may split it again). It returns an error, on
// every process, for a configuration that does not run with the embedding
// tables sharded as the configuration shards them (config.CheckSpreadOn).
func NewExperimentOn(cl cluster.Cluster, sh *tensor.Part, cfg Config, be compute.Backend, methods ...Config) (*Experiment, error) {
	return newExperimentOn(cl, sh, cfg, be, methods...)
}

// NTrain returns the number of training cells over every process.
func (e *Experiment) NTrain() int { return e.nTrain() }

// GlobalNNZ returns the number of cells of x over every process, each
// holding its share of them (as Augment returns): x.NNZ() on one process.
// It is collective.
func (e *Experiment) GlobalNNZ(x *tensor.COO) int { return e.globalNNZ(x) }

// many reports whether the experiment runs on more than one process.
func (e *Experiment) many() bool { return e.sp.cl.Size() > 1 }

// nTrain returns the number of training cells over every process.
func (e *Experiment) nTrain() int { return e.sp.counts[0] }

// splitOn splits the shard sh of the tensor (step 0): this process's cells
// of each part, the split's fingerprint over every process, the parts'
// global counts and this process's first training cell's global number.
func (e *Experiment) splitOn(sh *tensor.Part) {
	cl := e.sp.cl
	lo, hi := sh.First, sh.First+sh.Cells.NNZ()
	part, trFirst, counts := e.cfg.SplitParts(sh.NNZ, lo, hi)
	e.splitPrint.Add(part, lo)
	cl.SumI64(e.splitPrint[:])
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
	e.Train, e.Val, e.Test = parts[tensor.PartTrain], parts[tensor.PartVal], parts[tensor.PartTest]
	e.sp.counts, e.sp.trainFirst = counts, trFirst
	if cl.Size() > 1 {
		// The global number of this process's first validation cell
		// (in-run's sample is drawn from the global numbering).
		per := make([]int64, cl.Size())
		per[cl.Rank()] = mine[tensor.PartVal]
		cl.SumI64(per)
		for r := 0; r < cl.Rank(); r++ {
			e.sp.valFirst += int(per[r])
		}
	}
}

// trainStats sets the training cells' largest |value| and mean over every
// process.
func (e *Experiment) trainStats() {
	sum := 0.0
	for _, v := range e.Train.Val {
		e.trainMaxAbs = max(e.trainMaxAbs, math.Abs(v))
		sum += v
	}
	if e.many() {
		s := []float64{sum}
		e.sp.cl.SumF64(s)
		sum = s[0]
		for _, m := range e.sp.cl.GatherF64([]float64{e.trainMaxAbs}) {
			e.trainMaxAbs = max(e.trainMaxAbs, m)
		}
	}
	e.trainMean = sum / float64(e.nTrain())
}

// sharding returns how the embedding table of a model of kind is sharded
// over the processes: nil (replicated) on cluster.Local, for the kinds other
// than mlp and costco, and where Config.ShardTables and the table's size
// (Config.ShardPlan) say so; the report names the sharded tables.
func (e *Experiment) sharding(kind string) (*nn.Sharding, error) {
	d := e.sp.dist
	if d == nil || (kind != nn.KindMLP && kind != nn.KindCoSTCo) {
		return nil, nil
	}
	on, _, why, err := e.cfg.ShardPlan(kind, e.x.Dims, e.sp.cl.Size())
	if err != nil || !on {
		return nil, err
	}
	if !slices.Contains(d.Report.ShardedTables, kind) {
		d.Report.ShardedTables = append(d.Report.ShardedTables, kind)
		d.Report.Exchange = "sharded"
		e.logf("dainx: %s's embedding table sharded by row over the ranks (%s)", kind, why)
	}
	return &nn.Sharding{Comm: e.sp.cl}, nil
}

// globalNNZ returns the number of cells of x over every process (x holds
// this process's share).
func (e *Experiment) globalNNZ(x *tensor.COO) int {
	n := []int64{int64(x.NNZ())}
	e.sp.cl.SumI64(n)
	return int(n[0])
}

// spans numbers this process's training cells, then its new cells
// (naug of them), in the global order of train ∪ aug: the training cells
// first, then the new cells in their order over the processes.
func (e *Experiment) spans(naug int) []nn.Span {
	s := []nn.Span{{Global: e.sp.trainFirst, Local: 0, N: e.Train.NNZ()}}
	if naug > 0 {
		s = append(s, nn.Span{Global: e.nTrain() + e.augFirst, Local: e.Train.NNZ(), N: naug})
	}
	return s
}

// fit trains m on this process's cells set (numbered by owned among the
// global cells) with validation set val: nn.Train, data parallel over the
// processes when there are several (or the table is sharded).
func (e *Experiment) fit(ctx context.Context, m *nn.Net, set, val *nn.Set, tc nn.TrainConfig, global int, owned []nn.Span) (nn.Result, error) {
	if e.many() || m.Sharded() {
		exchange := ""
		if !m.Sharded() {
			rows := 0
			for _, d := range e.x.Dims {
				rows += d
			}
			exchange = e.cfg.ExchangeFor(rows, tc.Batch, e.x.Order())
		}
		var comm *time.Duration
		if e.sp.dist != nil {
			comm = &e.sp.dist.Comm
		}
		tc.Dist = &nn.DistConfig{Cluster: e.sp.cl, Global: global, Owned: owned, ValGlobal: e.sp.counts[1], Exchange: exchange, Comm: comm}
	}
	res, err := nn.Train(ctx, m, set, val, tc)
	if err == nil && e.sp.dist != nil {
		e.sp.dist.Report.Steps += len(res.Epochs) * ((global + tc.Batch - 1) / tc.Batch)
	}
	return res, err
}

// evalMSE returns m's mean squared error on the cells of s over every
// process (n of them).
func (e *Experiment) evalMSE(m *nn.Net, s *nn.Set, n int) (float64, error) {
	if !e.many() {
		return m.Evaluate(s)
	}
	sum := []float64{0}
	if s.Len() > 0 || m.Sharded() { // a sharded table: every process takes part
		v, err := m.Evaluate(s)
		if err != nil {
			return 0, err
		}
		if s.Len() > 0 {
			sum[0] = v * float64(s.Len())
		}
	}
	e.sp.cl.SumF64(sum)
	return sum[0] / float64(n), nil
}

// summerF32 and summerF64 return the cluster's sums when the experiment
// runs on several processes, else nil (the one-process code of tracin).
func (e *Experiment) summerF32() func([]float32) {
	if !e.many() {
		return nil
	}
	return e.sp.cl.SumF32
}

func (e *Experiment) summerF64() func([]float64) {
	if !e.many() {
		return nil
	}
	return e.sp.cl.SumF64
}

// agreeErr returns err unchanged in one process; spread over several, it
// returns err (agreed) on the processes that have one, an agreed
// ErrOtherProcess on the others when any has one, and nil when none has,
// so that every process returns at the same point.
func (e *Experiment) agreeErr(err error) error {
	if e.sp.cl.Size() == 1 {
		return err
	}
	return cluster.Agree(e.sp.cl, err, "dain")
}

// agreeKeepOn is spread.AgreeKeep over e's cluster, each process holding
// its share of the candidates cand with their predictions a and b: the n
// of smallest |a − b| over every process, valued by a; it sets e.augFirst
// (cells Rank·n/Size onwards are this process's).
func (e *Experiment) agreeKeepOn(cand []int32, a, b []float64, n int) *tensor.COO {
	out := spread.AgreeKeep(e.sp.cl, e.x.Dims, cand, a, b, n)
	e.augFirst = e.sp.cl.Rank() * n / e.sp.cl.Size()
	return out
}
