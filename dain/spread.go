package dain

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/sampling"
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
// through the cluster here, in one place.

// spread is how an Experiment's cells are spread over the processes.
type spread struct {
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
	dist *distRun
}

// inJob reports whether cl is the processes of a job (an MPI job's ranks,
// a test's goroutines), even of one, rather than cluster.Local, the one
// process outside any. It is all that a run tells from its cluster besides
// its size and rank: a run in a job reports its ranks and their times
// (Report.Dist) and checkpoints each process in a directory of its own
// (distCheckpoint); the rest, and every result, is the same.
func inJob(cl cluster.Cluster) bool {
	switch cl.(type) {
	case cluster.Local, *cluster.Local:
		return false
	}
	return true
}

// distRun is the report of a run spread over processes in the making.
type distRun struct {
	rep  DistReport
	comm time.Duration // in the training steps' exchanges (StepComm)
	// Each stage's wall time, MPI time and peak RSS so far on this
	// process (mark), for PerRank.
	wall, commSecs, peak []float64
	lastWall             time.Time
	lastComm             float64
}

// NewExperimentOn is NewExperiment on this process's shard sh of a tensor
// spread over the processes of cl (each calling it with its own shard and
// the same configurations); NewExperiment is NewExperimentOn on
// cluster.Local. Every stage of the experiment is then collective: the
// processes must call the same methods in the same order. sh is read, not
// kept (another experiment may split it again). It returns an error, on
// every process, for a configuration that does not run with the embedding
// tables sharded as the configuration shards them (checkSpreadOn).
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
	part, trFirst, counts := e.cfg.splitParts(sh.NNZ, lo, hi)
	e.splitPrint.add(part, lo)
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

// shards returns the number of processes over which the MLP's embedding
// table is sharded on size processes (1: replicated).
func (c *Config) shards(dims []int, size int) int {
	if on, _, _, _ := c.shardPlan(nn.KindMLP, dims, size); on {
		return size
	}
	return 1
}

// sharding returns how the embedding table of a model of kind is sharded
// over the processes: nil (replicated) on cluster.Local, for the kinds other
// than mlp and costco, and where Config.ShardTables and the table's size
// (shardPlan) say so; the report names the sharded tables.
func (e *Experiment) sharding(kind string) (*nn.Sharding, error) {
	d := e.sp.dist
	if d == nil || (kind != nn.KindMLP && kind != nn.KindCoSTCo) {
		return nil, nil
	}
	on, _, why, err := e.cfg.shardPlan(kind, e.x.Dims, e.sp.cl.Size())
	if err != nil || !on {
		return nil, err
	}
	if !slices.Contains(d.rep.ShardedTables, kind) {
		d.rep.ShardedTables = append(d.rep.ShardedTables, kind)
		d.rep.Exchange = "sharded"
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
			exchange = e.cfg.exchange(rows, tc.Batch, e.x.Order())
		}
		var comm *time.Duration
		if e.sp.dist != nil {
			comm = &e.sp.dist.comm
		}
		tc.Dist = &nn.DistConfig{Cluster: e.sp.cl, Global: global, Owned: owned, ValGlobal: e.sp.counts[1], Exchange: exchange, Comm: comm}
	}
	res, err := nn.Train(ctx, m, set, val, tc)
	if err == nil && e.sp.dist != nil {
		e.sp.dist.rep.Steps += len(res.Epochs) * ((global + tc.Batch - 1) / tc.Batch)
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

// sumModes sums each mode's entity weights over the processes, in place.
func (e *Experiment) sumModes(w [][]float64) {
	e.overModes(w, e.sp.cl.SumF64)
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

// maxModes replaces each mode's entity weights by their maximum over the
// processes.
func (e *Experiment) maxModes(w [][]float64) {
	e.overModes(w, func(flat []float64) {
		all := e.sp.cl.GatherF64(flat)
		for r := 0; r < e.sp.cl.Size(); r++ {
			for i, v := range all[r*len(flat) : (r+1)*len(flat)] {
				flat[i] = max(flat[i], v)
			}
		}
	})
}

// overModes applies reduce, a collective over the processes, to every
// mode's weights concatenated, in place; nothing on one process.
func (e *Experiment) overModes(w [][]float64, reduce func(flat []float64)) {
	if !e.many() {
		return
	}
	var flat []float64
	for _, m := range w {
		flat = append(flat, m...)
	}
	reduce(flat)
	for _, m := range w {
		n := copy(m, flat)
		flat = flat[n:]
	}
}

// exchangeRound is the most observed cells a process sends its owners in
// one round of sampleShared's exchange: the round's buffers, not the
// whole share, are what the exchange adds to a process's memory.
var exchangeRound = 1 << 20

// sampleShared is sample over several processes: this process's share of
// the n new cells (Rank·n/Size onwards, e.augFirst), drawn with the
// observed cells (train ∪ validation) partitioned by owner. The observed
// cells travel to their owners in rounds of at most exchangeRound cells a
// process.
func (e *Experiment) sampleShared(dev *sampling.Tables, key uint64, n int) ([]int32, sampling.Stats, error) {
	support := []int64{0}
	owned := e.ownedObserved(func(c []int32) {
		if dev.Reachable(c) {
			support[0]++
		}
	})
	cl := e.sp.cl
	cl.SumI64(support)
	cells, first, s, err := dev.CellsShared(owned, int(support[0]), n, sampling.Options{Key: key}, cl)
	e.augFirst = first
	return cells, s, err
}

// checkSpreadOn reports why one of cfgs cannot run with the MLP's
// embedding table sharded over shards processes, or nil.
func checkSpreadOn(cfgs []Config, shards int) error {
	if shards == 1 {
		return nil
	}
	for _, c := range cfgs {
		switch {
		case c.Influence == "in-run":
			return fmt.Errorf("dain: -influence in-run observes every training step, which it does with the embedding tables replicated, not sharded (-shard-tables): run it with -shard-tables off")
		case c.InfluenceLayers == "all" && c.Influence != "representer":
			return fmt.Errorf("dain: -influence-layers all differentiates the embedding table, which is sharded here (-shard-tables): run it with the tables replicated (-shard-tables off)")
		case c.Method == "entity-replacement":
			return fmt.Errorf("dain: -method entity-replacement finds near entities in the whole embedding table, which is sharded here (-shard-tables): run it with the tables replicated (-shard-tables off)")
		}
	}
	return nil
}

// mark ends a stage of DistReport.PerRank on this process.
func (d *distRun) mark(cl cluster.Cluster) {
	if d == nil {
		return
	}
	now, c := time.Now(), cl.CommSeconds()
	d.peak = append(d.peak, peakRSSMiB())
	d.wall, d.commSecs = append(d.wall, now.Sub(d.lastWall).Seconds()), append(d.commSecs, c-d.lastComm)
	d.lastWall, d.lastComm = now, c
}

// replicas returns an error unless the model replicas m of every process
// agree (the data-parallel training keeps them equal).
func replicas(cl cluster.Cluster, m *nn.Net) error {
	sum, err := m.ParamsChecksum()
	if err != nil {
		return err
	}
	gathered := cl.GatherF64([]float64{float64(sum >> 32), float64(sum & 0xffffffff)})
	for i := 2; i < len(gathered); i += 2 {
		if gathered[i] != gathered[0] || gathered[i+1] != gathered[1] {
			return fmt.Errorf("dain: the model replicas differ across ranks after training (rank %d's parameters differ from rank 0's); the MPI library's reductions gave ranks different sums", i/2)
		}
	}
	return nil
}

// finish completes the report's DistReport with every process's times.
func (d *distRun) finish(cl cluster.Cluster, logf func(string, ...any)) *DistReport {
	dr := &d.rep
	mine := make([]float64, 0, 3*len(distStages)+1)
	for i := range distStages {
		mine = append(mine, d.wall[i]-d.commSecs[i], d.commSecs[i], d.peak[i])
	}
	mine = append(mine, peakRSSMiB())
	all := cl.GatherF64(mine)
	var sumCompute, most float64
	for r := 0; r < cl.Size(); r++ {
		rs := RankSeconds{Rank: r, Compute: map[string]float64{}, Wait: map[string]float64{}, PeakRSSAfter: map[string]float64{}}
		compute := 0.0
		for i, st := range distStages {
			v := all[r*len(mine)+3*i:]
			rs.Compute[st], rs.Wait[st], rs.PeakRSSAfter[st] = max(v[0], 0), v[1], v[2]
			compute += max(v[0], 0)
		}
		rs.PeakRSSMiB = all[r*len(mine)+len(mine)-1]
		dr.PerRank = append(dr.PerRank, rs)
		sumCompute += compute
		if r == 0 || compute > most {
			dr.Slowest, most = r, compute
		}
	}
	if sumCompute > 0 {
		dr.SlowestBy = most / (sumCompute / float64(cl.Size()))
	}
	dr.CommSeconds = cl.CommSeconds()
	if dr.Steps > 0 {
		dr.StepComm = 1000 * d.comm.Seconds() / float64(dr.Steps)
	}
	logf("slowest rank %d: %.2f× the mean computation (%.1fs); the others wait for it in MPI", dr.Slowest, dr.SlowestBy, most)
	logf("%.1fs communicating, %.2f ms per training step", dr.CommSeconds, dr.StepComm)
	return dr
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

// sumCounts returns n summed over the processes, and how many of them
// had flag set.
func (e *Experiment) sumCounts(n int, flag bool) []int64 {
	v := []int64{int64(n), 0}
	if flag {
		v[1] = 1
	}
	e.sp.cl.SumI64(v)
	return v
}

// pickShare returns the process whose share of a total holds u: the first
// p with cum[p] > u, cum being the processes' cumulative shares (u below
// the last, so that a process with no share is never picked).
func pickShare(cum []float64, u float64) int {
	p, _ := slices.BinarySearchFunc(cum, u, func(c, u float64) int {
		if c <= u {
			return -1
		}
		return 1
	})
	return min(p, len(cum)-1)
}

// toOwners sends each record of stride int32s in recs, whose cell (order
// indices) starts at offset at, to the process that owns the cell
// (sampling.Owner) and returns the records this process owns, from every
// process in process order, each process's in the order it sent them. In
// one process it returns recs.
func toOwners(cl cluster.Cluster, recs []int32, stride, at, order int) []int32 {
	size := cl.Size()
	if size == 1 {
		return recs
	}
	counts := make([]int32, size)
	for j := 0; j < len(recs); j += stride {
		counts[sampling.Owner(recs[j+at:j+at+order], size)] += int32(stride)
	}
	next := sampling.Starts(counts, 1)
	send := make([]int32, len(recs))
	for j := 0; j < len(recs); j += stride {
		o := sampling.Owner(recs[j+at:j+at+order], size)
		copy(send[next[o]:], recs[j:j+stride])
		next[o] += int32(stride)
	}
	return cl.AlltoallI32(send, counts)
}

// ownedObserved returns the observed cells (train ∪ validation) that this
// process owns (sampling.Owner), from every process: the observed set of
// one process. The cells travel to their owners in rounds of at most
// exchangeRound cells a process; added, if not nil, sees each cell the
// first time it enters the set.
func (e *Experiment) ownedObserved(added func(cell []int32)) *tensor.CellSet {
	cl, order := e.sp.cl, e.x.Order()
	size := cl.Size()
	if size == 1 && added == nil {
		return e.observedSet(0)
	}
	nt, local := e.Train.NNZ(), e.Train.NNZ()+e.Val.NNZ()
	cell := func(k int) []int32 { // observed cell k of this process: train, then validation
		if k < nt {
			return e.Train.Idx[k*order : (k+1)*order]
		}
		k -= nt
		return e.Val.Idx[k*order : (k+1)*order]
	}
	rounds := make([]int64, size)
	rounds[cl.Rank()] = int64((local + exchangeRound - 1) / exchangeRound)
	cl.SumI64(rounds)
	owned := tensor.NewCellSet(e.x.Dims, local) // about a share of train ∪ validation
	batch := make([]int32, 0, min(local, exchangeRound)*order)
	for r := 0; r < int(slices.Max(rounds)); r++ {
		lo, hi := min(r*exchangeRound, local), min((r+1)*exchangeRound, local)
		batch = batch[:0]
		for k := lo; k < hi; k++ {
			batch = append(batch, cell(k)...)
		}
		recv := toOwners(cl, batch, order, 0, order)
		for k := 0; k < len(recv); k += order {
			if owned.Add(recv[k:k+order]) && added != nil {
				added(recv[k : k+order])
			}
		}
	}
	return owned
}

// countBefore returns the sum of the n of the processes before this one
// (an exclusive prefix sum over the processes).
func countBefore(cl cluster.Cluster, n int) int {
	return sum(processCounts(cl, n)[:cl.Rank()])
}

// sum returns the sum of v.
func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}

// processCounts returns every process's n, in process order.
func processCounts(cl cluster.Cluster, n int) []int {
	v := make([]int64, cl.Size())
	v[cl.Rank()] = int64(n)
	cl.SumI64(v)
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// distinctShares splits n draws of distinct cells, cycling (every cell
// drawn ⌊n/N⌋ times, then n mod N distinct ones more, at random), among
// processes holding sizes[p] of the N = Σ sizes cells: process p's number
// is ⌊n/N⌋·sizes[p] plus its count in a uniformly random (n mod N)-subset
// of the N cells, which follows the multivariate hypergeometric law and is
// drawn from r (process by process, each count conditioned on those before
// it). The same r on every process gives every process the same shares.
// With one process it returns [n] and draws nothing from r. It panics if
// n > 0 while N = 0, or n < 0.
func distinctShares(r *rand.Rand, n int, sizes []int) []int {
	out := make([]int, len(sizes))
	if n < 0 {
		panic(fmt.Sprintf("dain: distinctShares: n %d", n))
	}
	if len(sizes) == 1 {
		out[0] = n
		return out
	}
	total := sum(sizes)
	if total == 0 {
		if n > 0 {
			panic(fmt.Sprintf("dain: distinctShares: %d draws from no cells", n))
		}
		return out
	}
	q, rem, left := n/total, n%total, total
	for p, s := range sizes {
		k := rem
		if p < len(sizes)-1 {
			k = hypergeometric(r, rem, s, left)
		}
		out[p] = q*s + k
		rem, left = rem-k, left-s
	}
	return out
}

// hypergeometric draws the number of marked items among draws items taken
// without replacement from pop items of which marked are marked (draws,
// marked ≤ pop), exactly, in O(min(draws, marked)) steps: by the law's
// symmetry in draws and marked, it walks the fewer of the two, each item
// of which lands among the other's with probability (those left)/(items
// left).
func hypergeometric(r *rand.Rand, draws, marked, pop int) int {
	walk, other := min(draws, marked), max(draws, marked)
	k := 0
	for i := 0; i < walk && other > 0; i++ {
		if r.IntN(pop) < other {
			k++
			other--
		}
		pop--
	}
	return k
}

// Every cell maker keeps O(cells/P) memory on every process: the sampler
// (CellsShared), duplication (distinctShares), near-cells and entity
// replacement (drawRounds), and dain-agree's choice among the new cells
// (agreeKeepOn).

// f64Bits and bitsF64 carry float64s through an int32 exchange, two int32s
// each (the low half first), bit for bit.
func f64Bits(v []float64) []int32 {
	out := make([]int32, 2*len(v))
	for i, x := range v {
		b := math.Float64bits(x)
		out[2*i], out[2*i+1] = int32(uint32(b)), int32(uint32(b>>32))
	}
	return out
}

func bitsF64(b []int32) []float64 {
	out := make([]float64, len(b)/2)
	for i := range out {
		out[i] = math.Float64frombits(uint64(uint32(b[2*i])) | uint64(uint32(b[2*i+1]))<<32)
	}
	return out
}

// agreeKeepOn is agreeKeep over the processes of e's cluster, each holding
// its share of the candidates (the shares in process order being the draw
// order) with their predictions a and b: the n candidates of smallest
// |a − b| over every process, ties by draw order, valued by a, exactly as
// agreeKeep keeps them from all the candidates; each process receives its
// share of them in draw order (cells Rank·n/Size onwards, e.augFirst). No
// process holds more than its own candidates: the n-th smallest |a − b| is
// found by bisection over its bits (non-negative floats order as their
// bits), 64 sums of one count, and the kept cells are then sent to the
// processes whose shares hold them.
func (e *Experiment) agreeKeepOn(cand []int32, a, b []float64, n int) *tensor.COO {
	cl, order, size := e.sp.cl, e.x.Order(), e.sp.cl.Size()
	key := make([]uint64, len(a))
	for i := range a {
		key[i] = math.Float64bits(math.Abs(a[i] - b[i]))
	}
	// t: the smallest key with at least n keys ≤ it over every process.
	lo, hi := uint64(0), uint64(math.MaxUint64)
	for lo < hi {
		mid := lo + (hi-lo)/2
		c := []int64{0}
		for _, k := range key {
			if k <= mid {
				c[0]++
			}
		}
		cl.SumI64(c)
		if c[0] >= int64(n) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	t := lo
	// Every key below t is kept; of the keys equal to t, the first in draw
	// order until n are kept.
	per := make([]int64, 2*size)
	for _, k := range key {
		if k < t {
			per[2*cl.Rank()]++
		} else if k == t {
			per[2*cl.Rank()+1]++
		}
	}
	cl.SumI64(per)
	take := int64(n)
	for r := range size {
		take -= per[2*r]
		if r < cl.Rank() {
			take -= per[2*r+1]
		}
	}
	var idx []int32
	var val []float64
	for i, k := range key {
		if k < t || (k == t && take > 0) {
			if k == t {
				take--
			}
			idx = append(idx, cand[i*order:(i+1)*order]...)
			val = append(val, a[i])
		}
	}
	// The kept cells' positions among the n, and the processes whose
	// shares hold them.
	pos := countBefore(cl, len(val))
	ci, cv := make([]int32, size), make([]int32, size)
	for p := pos; p < pos+len(val); p++ {
		r := sampling.ShareOf(p, n, size)
		ci[r] += int32(order)
		cv[r] += 2
	}
	out := &tensor.COO{Dims: append([]int(nil), e.x.Dims...), Idx: cl.AlltoallI32(idx, ci)}
	out.Val = bitsF64(cl.AlltoallI32(f64Bits(val), cv))
	e.augFirst = cl.Rank() * n / size
	return out
}
