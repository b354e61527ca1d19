package dain

import (
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/spread"
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
func (e *Experiment) NTrain() int { return e.sp.NTrain() }

// GlobalNNZ returns the number of cells of x over every process, each
// holding its share of them (as Augment returns): x.NNZ() on one process.
// It is collective.
func (e *Experiment) GlobalNNZ(x *tensor.COO) int { return e.sp.GlobalNNZ(x) }

// agreeKeepOn is spread.AgreeKeep over e's cluster, each process holding
// its share of the candidates cand with their predictions a and b: the n
// of smallest |a − b| over every process, valued by a; it sets e.augFirst
// (cells Rank·n/Size onwards are this process's).
func (e *Experiment) agreeKeepOn(cand []int32, a, b []float64, n int) *tensor.COO {
	out := spread.AgreeKeep(e.sp.Cl, e.x.Dims, cand, a, b, n)
	e.augFirst = e.sp.Cl.Rank() * n / e.sp.Cl.Size()
	return out
}
