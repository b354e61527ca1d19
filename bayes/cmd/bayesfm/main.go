// Command bayesfm measures package bayes on a real tensor: it splits the
// tensor's cells as dainx's legacy split does (tensor.Split with test 0.1,
// validation 0.2 and the given seed), fits the Bayesian factorization
// machine on the training cells only, and prints the validation and test
// RMSE of the posterior-mean predictions and the wall time.
//
//	go run ./bayes/cmd/bayesfm -data /work/shared/data/movielens_latest_small.tsv.gz
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"time"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/tensor"
)

func main() {
	def := bayes.DefaultConfig()
	data := flag.String("data", "", "tensor file (TSV, 0-based; plain or gzip)")
	splitSeed := flag.Uint64("split-seed", 1, "seed of tensor.Split (dainx -split legacy -seed)")
	rank := flag.Int("rank", def.Rank, "rank K")
	samples := flag.Int("samples", def.Samples, "Gibbs sweeps, burn-in included")
	burnIn := flag.Int("burnin", def.BurnIn, "sweeps discarded before averaging")
	seed := flag.Uint64("seed", def.Seed, "chain seed")
	initStd := flag.Float64("init-std", def.InitStd, "std of the initial factors")
	workers := flag.Int("workers", 0, "goroutines (0: GOMAXPROCS)")
	shared := flag.Bool("shared", false, "one prior group for all modes (libFM without -meta)")
	clamp := flag.String("clamp", string(bayes.ClampSamples), "where predictions are clamped to the training range: samples (each, libFM's), mean, or auto (chosen on the validation cells)")
	verbose := flag.Bool("v", false, "one line per sweep on stderr")
	stopTol := flag.Float64("stop-tol", 1e-4, "the relative improvement of the validation RMSE over a window below which the chain would stop (reported for windows of 10, 20 and 40 sweeps)")
	flag.Parse()
	if *data == "" {
		fmt.Fprintln(os.Stderr, "bayesfm: -data is required")
		os.Exit(2)
	}
	t0 := time.Now()
	x, err := tensor.ReadFile(*data, tensor.ReadOptions{Format: tensor.FormatOf(*data), IndexBase: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bayesfm:", err)
		os.Exit(1)
	}
	tr, va, te := tensor.Split(x.NNZ(), 0.1, 0.2, *splitSeed)
	train, val, test := x.Subset(tr), x.Subset(va), x.Subset(te)
	read := time.Since(t0)
	var progress io.Writer
	if *verbose {
		progress = os.Stderr
	}
	cfg := bayes.Config{Rank: *rank, Samples: *samples, BurnIn: *burnIn, Seed: *seed, InitStd: *initStd, Workers: *workers, SharedPriors: *shared, Clamp: bayes.ClampRule(*clamp), Progress: progress}
	res, err := bayes.Fit(context.Background(), train, []*tensor.COO{val, test}, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bayesfm:", err)
		os.Exit(1)
	}
	rmse := func(p, y []float64) float64 {
		var s float64
		for i := range p {
			s += (p[i] - y[i]) * (p[i] - y[i])
		}
		return math.Sqrt(s / float64(len(p)))
	}
	fmt.Printf("data %s: dims %v, %d cells; split seed %d: train %d, val %d, test %d (read+split %.2fs)\n",
		*data, x.Dims, x.NNZ(), *splitSeed, train.NNZ(), val.NNZ(), test.NNZ(), read.Seconds())
	fmt.Printf("bayes-fm rank %d, %d samples, burn-in %d, seed %d, init std %g, shared priors %v, clamp %s, GOMAXPROCS %d\n",
		cfg.Rank, cfg.Samples, cfg.BurnIn, cfg.Seed, cfg.InitStd, cfg.SharedPriors, res.Clamp, runtime.GOMAXPROCS(0))
	q := res.QueryRMSE[1]
	for _, s := range []int{10, 25, 50, 100, 150, 200, 300, 400} {
		if s <= len(q) && s < len(q) {
			fmt.Printf("  test RMSE of the average of the first %d samples after burn-in: %.4f\n", s, q[s-1])
		}
	}
	fmt.Printf("val RMSE %.4f, test RMSE %.4f, train RMSE (last sample) %.4f, noise sd 1/sqrt(alpha) %.4f, fit %.1fs (%d sweeps)\n",
		rmse(res.Pred[0], val.Val), rmse(res.Pred[1], test.Val), res.TrainRMSE[len(res.TrainRMSE)-1], 1/math.Sqrt(res.Alpha), res.Elapsed.Seconds(), res.Sweeps)
	// Where Config.StopWindow would have ended this chain (the same rule
	// on its validation trace: the chain up to a stop is this one's), and
	// the test RMSE of the average there.
	v, t := res.QueryRMSE[0], res.QueryRMSE[1]
	for _, w := range []int{10, 20, 40} {
		for k := w; k < len(v); k++ {
			if v[k] > (1-*stopTol)*v[k-w] {
				fmt.Printf("  stop window %d (tolerance %g): stops after %d sweeps, test RMSE %.4f (all %d: %.4f)\n", w, *stopTol, cfg.BurnIn+k+1, t[k], len(v), t[len(t)-1])
				break
			}
		}
	}
}
