package spread

import (
	"time"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/dain/config"
)

// Report describes a run spread over processes in its report (package
// dain's Report.Dist; JSON names as tagged). Times are seconds unless
// named otherwise, memory MiB.
type Report struct {
	Ranks    int    `json:"ranks"`
	Library  string `json:"library"`
	Exchange string `json:"exchange"` // the embedding gradients' exchange: dense, sparse or sharded
	// ShardedTables names the models whose embedding table was sharded
	// by row over the ranks (Config.ShardTables).
	ShardedTables []string `json:"sharded_tables,omitempty"`
	CommSeconds   float64  `json:"comm_seconds"` // wall time in communication on rank 0
	StepComm      float64  `json:"step_comm_ms"` // mean communication per training step on rank 0, ms
	// Oversubscribed: the node of rank 0 runs more ranks than it has
	// cores, so waits yield the core and times are not those of a
	// dedicated node (memory is).
	Oversubscribed bool `json:"oversubscribed,omitempty"`
	Steps          int  `json:"steps"` // training steps of every model
	// PerRank gives each rank's seconds in each stage (split: reading
	// done, the split and sets; train: Θ with its TracIn passes; augment:
	// entity importance, sampling and the values; retrain), as
	// computation (wall time outside MPI calls) and waiting (inside them:
	// the communication and the wait for slower ranks).
	PerRank []RankSeconds `json:"per_rank"`
	// Slowest is the rank with the most computation over the run: where
	// the others wait. SlowestBy is its computation over the mean of all
	// ranks' (1 when balanced).
	Slowest   int     `json:"slowest_rank"`
	SlowestBy float64 `json:"slowest_over_mean"`
}

// RankSeconds is one rank's time per stage (Report.PerRank).
type RankSeconds struct {
	Rank    int                `json:"rank"`
	Compute map[string]float64 `json:"compute"`
	Wait    map[string]float64 `json:"wait"`
	// PeakRSSMiB is the rank's peak resident memory until the end of the
	// retraining (getrusage; 0 where the system does not tell).
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// PeakRSSAfter is the peak resident memory so far at the end of each
	// stage (MiB): the stage in which it last grows holds the peak.
	PeakRSSAfter map[string]float64 `json:"peak_rss_mib_after"`
}

// Stages are the stages of Report.PerRank, in order: Recorder.Mark ends
// each.
var Stages = []string{"split", "train", "augment", "retrain"}

// Recorder is the Report of a run spread over processes in the making.
// Its Report's fields other than PerRank, Slowest, SlowestBy, CommSeconds
// and StepComm are the caller's to fill; Finish completes those.
type Recorder struct {
	Report Report
	// Comm is the wall time in the training steps' exchanges (StepComm),
	// which the training adds to (nn.DistConfig.Comm).
	Comm time.Duration
	// Each stage's wall time, MPI time and peak RSS so far on this
	// process (Mark), for PerRank.
	wall, commSecs, peak []float64
	lastWall             time.Time
	lastComm             float64
}

// NewRecorder starts the Report of a run over the processes of cl, whose
// transport cl.Describe names, at start (the run's beginning): the first
// stage's times count from there.
func NewRecorder(cl cluster.Cluster, start time.Time) *Recorder {
	return &Recorder{lastWall: start, lastComm: cl.CommSeconds(), Report: Report{Ranks: cl.Size(), Library: cl.Describe()}}
}

// Mark ends a stage of Report.PerRank (the next of Stages) on this
// process: its wall and MPI time since the last mark, and the peak RSS so
// far. It does nothing on a nil *Recorder (a run outside a job).
func (d *Recorder) Mark(cl cluster.Cluster) {
	if d == nil {
		return
	}
	now, c := time.Now(), cl.CommSeconds()
	d.peak = append(d.peak, peakRSSMiB())
	d.wall, d.commSecs = append(d.wall, now.Sub(d.lastWall).Seconds()), append(d.commSecs, c-d.lastComm)
	d.lastWall, d.lastComm = now, c
}

// Finish completes the Report with every process's times (a gather over
// cl; every stage of Stages must be marked), logs the slowest rank and the
// communication with logf, and returns it.
func (d *Recorder) Finish(cl cluster.Cluster, logf func(string, ...any)) *Report {
	dr := &d.Report
	mine := make([]float64, 0, 3*len(Stages)+1)
	for i := range Stages {
		mine = append(mine, d.wall[i]-d.commSecs[i], d.commSecs[i], d.peak[i])
	}
	mine = append(mine, peakRSSMiB())
	all := cl.GatherF64(mine)
	var sumCompute, most float64
	for r := 0; r < cl.Size(); r++ {
		rs := RankSeconds{Rank: r, Compute: map[string]float64{}, Wait: map[string]float64{}, PeakRSSAfter: map[string]float64{}}
		compute := 0.0
		for i, st := range Stages {
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
		dr.StepComm = 1000 * d.Comm.Seconds() / float64(dr.Steps)
	}
	logf("slowest rank %d: %.2f× the mean computation (%.1fs); the others wait for it in MPI", dr.Slowest, dr.SlowestBy, most)
	logf("%.1fs communicating, %.2f ms per training step", dr.CommSeconds, dr.StepComm)
	return dr
}

// NewRecorderFor is NewRecorder for a run of cfg over a tensor of dims:
// its Report also says whether the node of this process runs more ranks
// than it has cores (cl tells, as logf then says) and how the embedding
// gradients of an unsharded table are exchanged (Config.ExchangeFor).
func NewRecorderFor(cl cluster.Cluster, start time.Time, cfg config.Config, dims []int, logf func(string, ...any)) *Recorder {
	d := NewRecorder(cl, start)
	if o, ok := cl.(interface{ Oversubscribed() bool }); ok && o.Oversubscribed() {
		d.Report.Oversubscribed = true
		logf("dainx: more ranks on this node than cores: waits yield the core instead of polling; times are not a dedicated node's")
	}
	rows := 0
	for _, d := range dims {
		rows += d
	}
	d.Report.Exchange = cfg.ExchangeFor(rows, cfg.Batch, len(dims))
	return d
}
