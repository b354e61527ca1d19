package dain

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tracin"
)

// This file is DAIN spread over processes (dainx augment -dist mpi): every
// process holds a share of the observed cells and a replica of each model;
// training is data parallel (nn.Train with TrainConfig.Dist), TracIn scores each process's
// own training cells, entity importance and the validation gradient sums
// are reduced, and sampling draws each round's candidates split over the
// processes and judges them by their owners in hash-partitioned cell sets
// (sampling.CellsShared); each process keeps, predicts, retrains on and
// writes its own share of the new cells. The split, the initialisations, the
// shuffles and the sampling's draws are those of Run with the same seed on
// one process; only the order in which gradients and importances are summed
// differs.

// Shard is one process's share of a tensor's observed cells: cells
// First … First+Cells.NNZ()−1 (in file order) of the tensor's NNZ. Its
// Dims are the whole tensor's.
type Shard struct {
	Cells *tensor.COO
	First int
	NNZ   int
}

// DistReport describes a run spread over processes in the report.
type DistReport struct {
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

// RankSeconds is one rank's time per stage (DistReport.PerRank).
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

// distStages are the stages of DistReport.PerRank, in order.
var distStages = []string{"split", "train", "augment", "retrain"}

// DistSupported reports why cfg cannot run spread over processes, or nil:
// the paper's DAIN (TracIn on the MLP's last layer, aggregated entity
// importance, CoSTCo or MLP values) and the Random baselines.
func DistSupported(cfg Config) error {
	switch {
	case cfg.Method != "dain" && cfg.Method != "random":
		return fmt.Errorf("-method %s does not run spread over processes yet (dain and random do)", cfg.Method)
	case cfg.Model != "mlp" || cfg.Influence != "tracin" || cfg.InfluenceLayers != "last" || cfg.Entity != "sum" || cfg.sign() != "abs" || cfg.Temperature != 1 || cfg.Mix != 0:
		return fmt.Errorf("spread over processes, dain runs the paper's configuration only (-model mlp -influence tracin -influence-layers last -entity sum -sign abs, no -temperature or -mix)")
	case cfg.Predictor != "costco" && cfg.Predictor != "mlp":
		return fmt.Errorf("-predictor %s does not run spread over processes yet (costco and mlp do)", cfg.Predictor)
	case cfg.finalModel() != FinalMLP:
		return fmt.Errorf("-final-model %s does not run spread over processes yet (mlp does)", cfg.finalModel())
	case cfg.values() != ValuesPredictor:
		return fmt.Errorf("-values %s does not run spread over processes yet (run it in one process)", cfg.values())
	}
	return nil
}

// RunDist is Run on the processes of cl, each calling it with its shard of
// the tensor and the same configuration on its own backend. Every process
// returns the same report, or the same error, and its share of the
// augmented cells: of Run's N_aug new cells (Report.NAug), Result.Aug holds
// cells Rank·N_aug/Size to (Rank+1)·N_aug/Size − 1 with their values, so
// the processes' shares in rank order are the whole (written together by
// tensor.WriteFileParallel). Progress goes to cfg.Progress (give it to one
// process). Like Run, RunDist keeps
// the split only: once its parts are made it replaces sh.Cells by a tensor
// of the same dims without cells, so that the shard's cells can be freed
// (the caller must not need them afterwards).
func RunDist(ctx context.Context, cl cluster.Cluster, sh *Shard, cfg Config, be compute.Backend) (*Result, error) {
	return runDist(ctx, cl, sh, cfg, be, nil)
}

// RunDistCheckpointed is RunDist made restartable as RunCheckpointed makes
// Run: after every epoch of every training stage each process saves its
// state in a directory of its own under ck.Dir (rank-R-of-P), rank 0
// writes the manifest, and an epoch counts as saved once every process has
// saved it, so a run killed at any moment on any process continues, with
// ck.Resume and as many processes, from the last epoch every process
// saved, to the uninterrupted run's result (bit for bit on the CPU).
// ck.Dir must be one directory seen by every process (a shared file
// system across nodes). It needs the keyed split.
func RunDistCheckpointed(ctx context.Context, cl cluster.Cluster, sh *Shard, cfg Config, be compute.Backend, ck Checkpoint) (*Result, error) {
	return runDist(ctx, cl, sh, cfg, be, &ck)
}

func runDist(ctx context.Context, cl cluster.Cluster, sh *Shard, cfg Config, be compute.Backend, ck *Checkpoint) (*Result, error) {
	start := time.Now()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.TestFrac == 0 {
		return nil, fmt.Errorf("dain: test fraction 0 (the production mode) runs in one process only, for now")
	}
	if k := cfg.Keep; k.Split || k.Scores || k.Importance || k.Model != nil {
		return nil, fmt.Errorf("dain: a distributed run keeps no split, scores, importance or models (Config.Keep), for now")
	}
	if err := DistSupported(cfg); err != nil {
		return nil, fmt.Errorf("dain: %w", err)
	}
	dims := sh.Cells.Dims
	if cfg.Layers == nil {
		cfg.Layers = nn.DefaultLayers(len(dims))
	}
	if err := nn.CheckLayers(cfg.Layers, len(dims)); err != nil {
		return nil, fmt.Errorf("dain: %w", err)
	}
	shards := 1 // the tables' share a rank holds
	if on, _, _, _ := cfg.shardPlan("mlp", dims, cl.Size()); on {
		shards = cl.Size()
	}
	if err := checkMemorySharded(&tensor.COO{Dims: dims}, cfg, shards); err != nil {
		return nil, err
	}
	logf := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", args...)
		}
	}
	rank, size := cl.Rank(), cl.Size()
	var dck *distCheckpoint
	if ck != nil {
		var err error
		if dck, err = openDistCheckpoint(ck, cfg, be, cl, sh.Cells, sh.NNZ, logf); err != nil {
			return nil, err
		}
	}

	// Step 0: the split, the same on every process; each keeps its own
	// cells of each part. Under the keyed split each process looks at its
	// own cells only, and the training cells before its own are summed
	// over the processes.
	lo, hi := sh.First, sh.First+sh.Cells.NNZ()
	tr, va, te, trFirst, counts := cfg.splitCells(sh.NNZ, lo, hi)
	var sp splitPrint
	sp.add(tr, va, te)
	cl.SumI64(sp[:])
	if trFirst < 0 {
		per := make([]int64, size)
		per[rank] = int64(len(tr))
		cl.SumI64(per)
		trFirst = 0
		for r := 0; r < rank; r++ {
			trFirst += int(per[r])
		}
	}
	pick := func(part []int) *tensor.COO {
		rows := make([]int, len(part))
		for i, p := range part {
			rows[i] = p - lo
		}
		return sh.Cells.Subset(rows)
	}
	train, val, test := pick(tr), pick(va), pick(te)
	sh.Cells = &tensor.COO{Dims: sh.Cells.Dims} // the parts hold the cells now
	nTrain, nVal, nTest := counts[0], counts[1], counts[2]
	tr, va, te = nil, nil, nil
	if nTrain == 0 || nVal == 0 || nTest == 0 {
		return nil, fmt.Errorf("dain: %d cells split into %d train, %d validation, %d test; every part must be non-empty", sh.NNZ, nTrain, nVal, nTest)
	}
	dr := &DistReport{Ranks: size, Library: cl.Describe()}
	if o, ok := cl.(interface{ Oversubscribed() bool }); ok && o.Oversubscribed() {
		dr.Oversubscribed = true
		logf("dainx: more ranks on this node than cores: waits yield the core instead of polling; times are not a dedicated node's")
	}
	logf("dainx: %d cells, dims %v: %d train, %d validation, %d test; backend %s (%s); %d ranks (%s)", sh.NNZ, dims, nTrain, nVal, nTest, be.Name(), be.Device(), size, dr.Library)
	rep := cfg.newReport(be, dims, sh.NNZ, counts, sp, logf)
	// A distributed run's report has never named the values' source
	// (always the predictor's here: DistSupported).
	rep.Values = ""
	var commBefore time.Duration
	mse := func(m *nn.Net, s *nn.Set, n int) (float64, error) {
		sum := []float64{0}
		if s.Len() > 0 || m.Sharded() { // a sharded table: every rank takes part
			v, err := m.Evaluate(s)
			if err != nil {
				return 0, err
			}
			if s.Len() > 0 {
				sum[0] = v * float64(s.Len())
			}
		}
		cl.SumF64(sum)
		return sum[0] / float64(n), nil
	}
	mlpCfg := nn.Config{Dims: dims, Layers: cfg.Layers, Capacity: max(cfg.Batch, cfg.EvalBatch)}
	rows := 0
	for _, d := range dims {
		rows += d
	}
	dr.Exchange = cfg.exchange(rows, cfg.Batch, len(dims))
	shardMLP, optMLP, why, err := cfg.shardPlan("mlp", dims, size)
	if err != nil {
		return nil, err
	}
	if shardMLP {
		mlpCfg.Shard = &nn.Sharding{Comm: cl}
		dr.Exchange, dr.ShardedTables = "sharded", append(dr.ShardedTables, "mlp")
		rep.EmbeddingOptimizers["mlp"] = optMLP
	}
	logf("data parallel over %d ranks: dense layers summed every step, embedding gradients %s", size, map[string]string{
		"dense":   fmt.Sprintf("summed whole (dense: the %d-row table is within 4× the rows a step touches)", rows),
		"sparse":  fmt.Sprintf("exchanged sparsely (only the rows a step touched, of %d)", rows),
		"sharded": fmt.Sprintf("sent to the rows' owners: the %d-row table is sharded by row over the ranks (%s), each rank holding about %d rows", rows, why, nn.OwnedRows(rows, 0, size)),
	}[dr.Exchange])
	if !shardMLP && why != "" {
		logf("dainx: mlp's embedding table %s", why)
	}
	shardCC, optCC := false, ""
	if cfg.Predictor == "costco" {
		var cwhy string
		if shardCC, optCC, cwhy, err = cfg.shardPlan("costco", dims, size); err != nil {
			return nil, err
		}
		if shardCC {
			dr.ShardedTables = append(dr.ShardedTables, "costco")
			rep.EmbeddingOptimizers["costco"] = optCC
			logf("dainx: costco's embedding table sharded by row over the ranks (%s)", cwhy)
		} else if cwhy != "" {
			logf("dainx: costco's embedding table %s", cwhy)
		}
	}
	// fit trains m data parallel on this process's cells of a training set
	// of global size n (local cells numbered by owned).
	fit := func(label string, m *nn.Net, tc nn.TrainConfig, set, valSet *nn.Set, n int, owned []nn.Span, exchange string) (nn.Result, error) {
		if m.Sharded() {
			exchange = "" // nn.Train's own exchange of a sharded table
		}
		epochs := tc.Epochs
		after := tc.AfterEpoch
		tc.AfterEpoch = func(ep nn.Epoch) error {
			if after != nil {
				if err := after(ep); err != nil {
					return err
				}
			}
			logEpoch(&cfg, label, ep, epochs, time.Since(start))
			return nil
		}
		tc.Dist = &nn.DistConfig{Cluster: cl, Global: n, Owned: owned, ValGlobal: nVal, Exchange: exchange, Comm: &commBefore}
		res, err := nn.Train(ctx, m, set, valSet, tc)
		if err != nil {
			var div *nn.DivergenceError
			if errors.As(err, &div) {
				return res, fmt.Errorf("dain: training %s diverged at epoch %d: %s; lower the learning rate or rescale the values", label, div.Epoch, div.Reason)
			}
			return res, fmt.Errorf("dain: training %s: %w", label, err)
		}
		dr.Steps += len(res.Epochs) * ((n + tc.Batch - 1) / tc.Batch)
		return res, nil
	}

	// Each rank's wall and MPI time per stage, for PerRank.
	var stageWall, stageComm, stagePeak []float64
	lastWall, lastComm := start, cl.CommSeconds()
	mark := func() {
		now, c := time.Now(), cl.CommSeconds()
		stagePeak = append(stagePeak, peakRSSMiB())
		stageWall, stageComm = append(stageWall, now.Sub(lastWall).Seconds()), append(stageComm, c-lastComm)
		lastWall, lastComm = now, c
	}
	mark() // split

	// Θ, the value predictor and their sets are freed once the new cells
	// have their values, before Θ′ is made (release), so a rank never
	// holds three models' tables at once.
	var frees []func()
	release := func() {
		for i := len(frees) - 1; i >= 0; i-- {
			frees[i]()
		}
		frees = nil
	}
	defer func() { release() }()
	var (
		theta                     *nn.Net
		trainSet, valSet, testSet *nn.Set
		last                      *tracin.LastLayer
	)
	// dropModels frees every model registered so far and drops this
	// function's references to Θ (closures such as Θ's AfterEpoch hold
	// them too), then collects, so that what comes next reuses the memory.
	dropModels := func() {
		release()
		theta, trainSet, valSet, testSet, last = nil, nil, nil, nil, nil
		runtime.GC()
	}
	trainOwned := []nn.Span{{Global: trFirst, Local: 0, N: train.NNZ()}}
	var res nn.Result
	nAug, err := AugCount(cfg.Ratio, nTrain)
	if err != nil {
		return nil, err
	}
	// This process's share of the new cells: cells augFirst… of the nAug,
	// augFirst = rank·nAug/size.
	aug := &tensor.COO{Dims: append([]int(nil), dims...)}
	augFirst := rank * nAug / size
	var st AugStats
	saved, savedAug, err := dck.loadAugmented()
	if err != nil {
		return nil, err
	}
	if saved != nil {
		// Steps 1–4 were done before the interruption.
		rep.RMSEBefore, rep.BestEpoch, rep.HistoryBefore = saved.RMSEBefore, saved.BestEpoch, saved.HistoryBefore
		rep.Seconds, st, aug = saved.Seconds, saved.Stats, savedAug
		aug.Dims = append([]int(nil), dims...)
		if aug.Val == nil {
			aug.Val = []float64{}
		}
		logf("Θ and the %d new cells were made before the interruption (checkpoint)", nAug)
		mark() // train
	} else {
		// Steps 1–2: Θ with TracIn on its last layer at every checkpoint.
		t0 := time.Now()
		theta, err = nn.NewMLP(be, mlpCfg, rng(cfg.Seed, streamInit))
		if err != nil {
			return nil, fmt.Errorf("dain: %w", err)
		}
		frees = append(frees, theta.Free)
		trainSet, valSet, testSet = theta.NewSet(train.Idx, train.Val), theta.NewSet(val.Idx, val.Val), theta.NewSet(test.Idx, test.Val)
		frees = append(frees, trainSet.Free, valSet.Free, testSet.Free)
		tc := nn.TrainConfig{Epochs: cfg.Epochs, Batch: cfg.Batch, Patience: cfg.Patience, LR: cfg.LR, Order: cfg.order(streamShuffle, nTrain), Eager: cfg.graphs() == GraphsOff}
		var pcg *rand.PCG
		tc.Shuffle, pcg = rngPCG(cfg.Seed, streamShuffle)
		tc.EmbeddingOptimizer = optMLP
		secs := []float64{0} // TracIn's
		var accs []tracin.Accumulator
		var passes []TracIn
		if cfg.Method == "dain" {
			last = tracin.NewLastLayer(theta, trainSet, cfg.LR)
			frees = append(frees, last.Free)
			accs, passes = []tracin.Accumulator{last}, []TracIn{{Layers: "last"}}
			tc.ValGradSum = last.ValGradSum()
		}
		stage := stageName("mlp", passes)
		tc.AfterEpoch = func(ep nn.Epoch) error {
			if err := dck.at(stage, ep.N, "trained"); err != nil {
				return err
			}
			if last == nil {
				return nil
			}
			t := time.Now()
			err := last.Checkpoint(ep.Best)
			secs[0] += time.Since(t).Seconds()
			if err != nil {
				return err
			}
			return dck.at(stage, ep.N, "tracin")
		}
		t := &trained{net: theta, accs: accs}
		seconds, savedSecs, found, err := dck.loadModel(stage, t)
		if err != nil {
			return nil, err
		}
		if found {
			res, rep.RMSEBefore = t.res, t.rmse
			copy(secs, savedSecs)
			logf("Θ: trained before the interruption (checkpoint): best epoch %d, validation MSE %.6f, test RMSE %.6f", res.BestEpoch, res.BestValMSE, rep.RMSEBefore)
		} else {
			if last != nil {
				logf("training Θ (mlp, %d parameters) with TracIn at every checkpoint", theta.NumParams())
			} else {
				logf("training Θ (mlp, %d parameters)", theta.NumParams())
			}
			prior, err := dck.fit(&tc, stage, "Θ", pcg, accs, secs, logf, func() float64 { return time.Since(t0).Seconds() })
			if err != nil {
				return nil, err
			}
			if res, err = fit("Θ", theta, tc, trainSet, valSet, nTrain, trainOwned, dr.Exchange); err != nil {
				return nil, err
			}
			m, err := mse(theta, testSet, nTest)
			if err != nil {
				return nil, fmt.Errorf("dain: testing Θ: %w", err)
			}
			rep.RMSEBefore = math.Sqrt(m)
			seconds = prior + time.Since(t0).Seconds() - secs[0]
			t.res, t.rmse = res, rep.RMSEBefore
			if err := dck.finish(stage, func() error { return dck.c.writeModel(stage, t, seconds, secs) }); err != nil {
				return nil, err
			}
			logf("Θ: best epoch %d, validation MSE %.6f, test RMSE %.6f", res.BestEpoch, res.BestValMSE, rep.RMSEBefore)
		}
		rep.BestEpoch, rep.HistoryBefore = res.BestEpoch, history(res)
		rep.Seconds.Train, rep.Seconds.Influence = seconds, secs[0]
		mark() // train

		if nAug > 0 {
			logf("step 4: %s, %d new cells", cfg.Method, nAug)
			// Step 3: entity importance, each process's cells summed over all.
			t0 = time.Now()
			var key uint64
			w := make([][]float64, len(dims))
			if last != nil {
				imp := be.Alloc(rows)
				be.EntityImportance(imp, last.Scores(), trainSet.Rows)
				host := make([]float32, rows)
				err := be.Download(host, imp)
				imp.Free()
				if err != nil {
					return nil, fmt.Errorf("dain: %w", err)
				}
				sum := make([]float64, rows)
				for i, v := range host {
					sum[i] = float64(v)
				}
				cl.SumF64(sum)
				off := 0
				for n, d := range dims {
					w[n] = sum[off : off+d]
					total := 0.0
					for _, v := range w[n] {
						total += v
					}
					if err := tracin.NoImportance(total, n); err != nil {
						return nil, fmt.Errorf("dain: tracin: %w", err)
					}
					for i := range w[n] {
						w[n][i] /= total
					}
					off += d
				}
				key = rng(cfg.Seed, streamSample).Uint64()
			} else {
				for n, d := range dims {
					w[n] = make([]float64, d)
					for i := range w[n] {
						w[n][i] = 1
					}
				}
				key = rng(cfg.Seed, streamRandom).Uint64()
			}
			tables := make([]*sampling.Alias, len(dims))
			for n := range w {
				if tables[n], err = sampling.NewAlias(w[n]); err != nil {
					return nil, fmt.Errorf("dain: mode %d: %w", n+1, err)
				}
			}
			rep.Seconds.Entity = time.Since(t0).Seconds()
			if cfg.Predictor == "costco" {
				// Θ's part is done (its TracIn scores are in the tables):
				// free it before CoSTCo is trained.
				dropModels()
			}

			// Step 4: the observed cells (train ∪ validation) partitioned by
			// owner, then the draws.
			t0 = time.Now()
			order := len(dims)
			counts := make([]int32, size)
			for _, c := range [][]int32{train.Idx, val.Idx} {
				for k := 0; k < len(c); k += order {
					counts[sampling.Owner(c[k:k+order], size)] += int32(order)
				}
			}
			next := sampling.Starts(counts, 1)
			send := make([]int32, len(train.Idx)+len(val.Idx))
			for _, c := range [][]int32{train.Idx, val.Idx} {
				for k := 0; k < len(c); k += order {
					r := sampling.Owner(c[k:k+order], size)
					copy(send[next[r]:], c[k:k+order])
					next[r] += int32(order)
				}
			}
			recv := cl.AlltoallI32(send, counts)
			send = nil
			dev := sampling.Upload(be, tables)
			defer dev.Free()
			owned := tensor.NewCellSet(dims, len(recv)/order)
			support := []int64{0}
			for k := 0; k < len(recv); k += order {
				if owned.Add(recv[k:k+order]) && dev.Reachable(recv[k:k+order]) {
					support[0]++
				}
			}
			recv = nil
			cl.SumI64(support)
			cells, first, s, err := dev.CellsShared(owned, int(support[0]), nAug, sampling.Options{Key: key}, cl)
			if err != nil {
				return nil, fmt.Errorf("dain: %w", err)
			}
			owned = nil
			aug.Idx, augFirst = cells, first
			st.Draws, st.RejectObserved, st.RejectRepeat = s.Draws, s.Observed, s.Duplicate
			st.Sample = time.Since(t0).Seconds()

			// Values: each process predicts its share of the new cells.
			predictor := theta
			if cfg.Predictor == "costco" {
				t0 = time.Now()
				ccfg := nn.CoSTCoConfig{Dims: dims, Rank: cfg.Rank, Channels: cfg.Channels, Capacity: max(cfg.CoSTCoBatch, cfg.EvalBatch)}
				if shardCC {
					ccfg.Shard = &nn.Sharding{Comm: cl}
				}
				cc, err := nn.NewCoSTCo(be, ccfg, rng(cfg.Seed, streamInitCoSTCo))
				if err != nil {
					return nil, fmt.Errorf("dain: %w", err)
				}
				frees = append(frees, cc.Free)
				ctr, cva, cte := cc.NewSet(train.Idx, train.Val), cc.NewSet(val.Idx, val.Val), cc.NewSet(test.Idx, test.Val)
				frees = append(frees, ctr.Free, cva.Free, cte.Free)
				logf("training Θc (costco, %d parameters)", cc.NumParams())
				ctc := nn.TrainConfig{Epochs: cfg.Epochs, Batch: cfg.CoSTCoBatch, Patience: cfg.Patience, LR: cfg.CoSTCoLR, Order: cfg.order(streamShuffleCoSTCo, nTrain), Eager: cfg.graphs() == GraphsOff}
				var cpcg *rand.PCG
				ctc.Shuffle, cpcg = rngPCG(cfg.Seed, streamShuffleCoSTCo)
				ctc.EmbeddingOptimizer = optCC
				cex := cfg.exchange(rows, cfg.CoSTCoBatch, len(dims))
				cstage := stageName("costco", nil)
				ctc.AfterEpoch = func(ep nn.Epoch) error { return dck.at(cstage, ep.N, "trained") }
				t1 := t0
				prior, err := dck.fit(&ctc, cstage, "Θc", cpcg, nil, nil, logf, func() float64 { return time.Since(t1).Seconds() })
				if err != nil {
					return nil, err
				}
				rep.Seconds.Predict += prior
				cres, err := fit("Θc", cc, ctc, ctr, cva, nTrain, trainOwned, cex)
				if err != nil {
					return nil, err
				}
				cm, err := mse(cc, cte, nTest)
				if err != nil {
					return nil, fmt.Errorf("dain: testing Θc: %w", err)
				}
				logf("Θc: best epoch %d, validation MSE %.6f, test RMSE %.6f", cres.BestEpoch, cres.BestValMSE, math.Sqrt(cm))
				predictor = cc
				rep.Seconds.Predict += time.Since(t0).Seconds()
			}
			t0 = time.Now()
			aug.Val = []float64{}
			if len(aug.Idx) > 0 || predictor.Sharded() { // a sharded table: every rank takes part
				if aug.Val, err = predict(predictor, aug.Idx); err != nil {
					return nil, err
				}
			}
			st.Predict = time.Since(t0).Seconds()
		}
		rep.Seconds.Sample, rep.Seconds.Predict = st.Sample, rep.Seconds.Predict+st.Predict
		if dck != nil {
			r := augRecord{RMSEBefore: rep.RMSEBefore, BestEpoch: rep.BestEpoch, HistoryBefore: rep.HistoryBefore,
				NAug: aug.NNZ(), Total: nAug, Stats: st, Seconds: rep.Seconds, Dims: dims}
			if err := dck.agree(dck.c.saveAugmented(r, aug)); err != nil {
				return nil, err
			}
		}
	}
	rep.NAug = nAug
	rep.Draws, rep.RejectObserved, rep.RejectRepeat = st.Draws, st.RejectObserved, st.RejectRepeat
	mark() // augment
	// Θ and the predictor are done with: free them before Θ′ is made.
	dropModels()

	// Step 5: a fresh MLP on train ∪ aug, each process holding its
	// training cells and its share of the new ones.
	logf("step 5: retraining on %d + %d cells", nTrain, rep.NAug)
	t0 := time.Now()
	after, err := nn.NewMLP(be, mlpCfg, rng(cfg.Seed, streamInitAfter))
	if err != nil {
		return nil, fmt.Errorf("dain: %w", err)
	}
	defer after.Free()
	both := after.NewSetConcat([][]int32{train.Idx, aug.Idx}, [][]float64{train.Val, aug.Val})
	defer both.Free()
	val2, test2 := after.NewSet(val.Idx, val.Val), after.NewSet(test.Idx, test.Val)
	defer val2.Free()
	defer test2.Free()
	owned := []nn.Span{{Global: trFirst, Local: 0, N: train.NNZ()}, {Global: nTrain + augFirst, Local: train.NNZ(), N: aug.NNZ()}}
	atc := nn.TrainConfig{Epochs: cfg.Epochs, Batch: cfg.Batch, Patience: cfg.Patience, LR: cfg.LR, Order: cfg.order(streamShuffleAfter, nTrain+rep.NAug), Eager: cfg.graphs() == GraphsOff}
	var apcg *rand.PCG
	atc.Shuffle, apcg = rngPCG(cfg.Seed, streamShuffleAfter)
	atc.EmbeddingOptimizer = optMLP
	atc.AfterEpoch = func(ep nn.Epoch) error { return dck.at("retrain", ep.N, "trained") }
	prior, err := dck.fit(&atc, "retrain", "Θ'", apcg, nil, nil, logf, func() float64 { return time.Since(t0).Seconds() })
	if err != nil {
		return nil, err
	}
	res, err = fit("Θ'", after, atc, both, val2, nTrain+rep.NAug, owned, dr.Exchange)
	if err != nil {
		return nil, err
	}
	m, err := mse(after, test2, nTest)
	if err != nil {
		return nil, fmt.Errorf("dain: testing the retrained model: %w", err)
	}
	rep.RMSEAfter, rep.BestEpochAfter, rep.HistoryAfter = math.Sqrt(m), res.BestEpoch, history(res)
	rep.Improved = rep.NAug > 0 && rep.RMSEAfter < rep.RMSEBefore
	rep.Seconds.Retrain = prior + time.Since(t0).Seconds()
	// The replicas must have stayed identical.
	sum, err := after.ParamsChecksum()
	if err != nil {
		return nil, err
	}
	gathered := cl.GatherF64([]float64{float64(sum >> 32), float64(sum & 0xffffffff)})
	for i := 2; i < len(gathered); i += 2 {
		if gathered[i] != gathered[0] || gathered[i+1] != gathered[1] {
			return nil, fmt.Errorf("dain: the model replicas differ across ranks after training (rank %d's parameters differ from rank 0's); the MPI library's reductions gave ranks different sums", i/2)
		}
	}
	mark() // retrain
	mine := make([]float64, 0, 3*len(distStages)+1)
	for i := range distStages {
		mine = append(mine, stageWall[i]-stageComm[i], stageComm[i], stagePeak[i])
	}
	mine = append(mine, peakRSSMiB())
	all := cl.GatherF64(mine)
	var total, most float64
	for r := 0; r < size; r++ {
		rs := RankSeconds{Rank: r, Compute: map[string]float64{}, Wait: map[string]float64{}, PeakRSSAfter: map[string]float64{}}
		compute := 0.0
		for i, st := range distStages {
			v := all[r*len(mine)+3*i:]
			rs.Compute[st], rs.Wait[st], rs.PeakRSSAfter[st] = max(v[0], 0), v[1], v[2]
			compute += max(v[0], 0)
		}
		rs.PeakRSSMiB = all[r*len(mine)+len(mine)-1]
		dr.PerRank = append(dr.PerRank, rs)
		total += compute
		if r == 0 || compute > most {
			dr.Slowest, most = r, compute
		}
	}
	if total > 0 {
		dr.SlowestBy = most / (total / float64(size))
	}
	rep.Seconds.Total = time.Since(start).Seconds()
	dr.CommSeconds = cl.CommSeconds()
	if dr.Steps > 0 {
		dr.StepComm = 1000 * commBefore.Seconds() / float64(dr.Steps)
	}
	rep.Dist = dr
	logf("slowest rank %d: %.2f× the mean computation (%.1fs); the others wait for it in MPI", dr.Slowest, dr.SlowestBy, most)
	logf("test RMSE %.6f → %.6f after %d augmented cells (%.1fs; %.1fs communicating, %.2f ms per training step)", rep.RMSEBefore, rep.RMSEAfter, rep.NAug, rep.Seconds.Total, dr.CommSeconds, dr.StepComm)
	return &Result{Report: rep, Aug: aug}, nil
}

// ShardTablesAbove is the size of an embedding table (rows × width × 4
// bytes, one copy) from which a run spread over more than one process
// shards it by row when Config.ShardTables is auto: 64 MiB, where the
// four copies a replicated table costs each rank (parameters, Adam's two
// moments, the best epoch's) pass 256 MiB.
const ShardTablesAbove = 64 << 20

// shardPlan returns whether a model of kind (mlp or costco) over dims is
// sharded on size processes, the embedding optimiser it then trains with,
// and why (for the progress).
func (c *Config) shardPlan(kind string, dims []int, size int) (shard bool, opt, why string, err error) {
	opt, _ = c.EmbeddingOptimizerFor(kind, dims)
	rows, width := 0, c.Rank
	for _, d := range dims {
		rows += d
	}
	if kind == "mlp" {
		layers := c.Layers
		if layers == nil {
			layers = nn.DefaultLayers(len(dims))
		}
		width = layers[0] / len(dims)
	}
	bytes := int64(rows) * int64(width) * 4
	explicit := c.embeddingOptimizerSetting() != nn.Auto
	switch c.ShardTables {
	case "off":
		return false, opt, "", nil
	case "on":
		if explicit && opt != nn.SparseAdam {
			return false, opt, "", fmt.Errorf("dain: -shard-tables on: a sharded table trains with sparse-adam, not %s (-embedding-optimizer)", opt)
		}
		return true, nn.SparseAdam, "-shard-tables on", nil
	}
	if size < 2 || bytes < ShardTablesAbove {
		return false, opt, "", nil
	}
	if explicit && opt != nn.SparseAdam {
		return false, opt, fmt.Sprintf("not sharded: its %d MiB table would be, but -embedding-optimizer %s updates every row", bytes>>20, opt), nil
	}
	return true, nn.SparseAdam, fmt.Sprintf("its %d MiB table is at least %d MiB", bytes>>20, ShardTablesAbove>>20), nil
}
