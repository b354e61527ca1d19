package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda/gemmtune"
	"github.com/dainx/dainx/internal/cli"
)

// tune is `dainx tune`: the GEMM variants of one training step, ranked by
// the model for a recorded device (-model-only), or tuned on the GPU.
func tune(args []string, stdout, stderr io.Writer) int {
	layers := cli.IntList{150, 1024, 1024, 128}
	var (
		batch     int
		precision string
		modelOnly bool
		device    string
		ordinal   int
	)
	fs := flag.NewFlagSet("dainx tune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&layers, "layers", "MLP layer `widths`: the input width then the hidden widths, comma-separated (the output layer of width 1 is not a GEMM)")
	fs.IntVar(&batch, "batch", 1024, "training batch `size` in cells (the GEMMs' M, or K for the weight gradients)")
	fs.StringVar(&precision, "precision", "tf32", "GEMM `precision`: fp32, tf32 or 3xtf32")
	fs.BoolVar(&modelOnly, "model-only", false, "print the model's ranking for -device instead of timing on a GPU (no GPU needed)")
	fs.StringVar(&device, "device", "h100", "with -model-only, the recorded device `properties`: "+strings.Join(knownDevices(), ", "))
	fs.IntVar(&ordinal, "gpu", 0, "without -model-only, the CUDA device `ordinal` to tune")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: dainx tune [flags]

Chooses, for every GEMM of one training step (forward, dx and dw of each
layer), a member of the GEMM kernel family (docs/gpu-tuning.md). On a GPU it
times the analytic model's top choices and fills the tuning cache
(os.UserCacheDir()/dainx/gemm-tune.json) that training then reads; with
-model-only it prints the model's ranking for recorded device properties
and needs no GPU. Without a GPU and without -model-only it fails.

Flags:
`)
		fs.PrintDefaults()
	}
	if code, done := parse(fs, args, stderr); done {
		return code
	}
	prec, err := compute.ParsePrecision(precision)
	if err != nil {
		return exitFor("tune", fmt.Errorf("%w: -%v", errUsage, err), nil, stderr)
	}
	if batch < 1 {
		return exitFor("tune", fmt.Errorf("%w: -batch %d: want a positive size", errUsage, batch), nil, stderr)
	}
	if len(layers) < 2 {
		return exitFor("tune", fmt.Errorf("%w: -layers: want at least two widths", errUsage), nil, stderr)
	}
	if !modelOnly {
		be, err := newCUDA(ordinal, prec)
		if err != nil {
			fmt.Fprintf(stderr, "dainx tune: no GPU to tune on: %v\n(dainx tune -model-only -device h100 prints the model's ranking without one)\n", err)
			return exitFailure
		}
		be.Close()
		fmt.Fprintln(stderr, "dainx tune: timing on the device is not wired into the CUDA backend yet (issue 24); use -model-only")
		return exitFailure
	}
	d, ok := gemmtune.Known[strings.ToLower(device)]
	if !ok {
		return exitFor("tune", fmt.Errorf("%w: -device %q: want one of %s", errUsage, device, strings.Join(knownDevices(), ", ")), nil, stderr)
	}
	fmt.Fprintf(stdout, "model ranking for %s (%d SMs, %d KiB shared memory per SM, %d KiB opt-in, compute %d.%d), %v, batch %d, layers %v\n",
		d.Name, d.SMs, d.SmemPerSM>>10, d.SmemOptIn>>10, d.Major, d.Minor, prec, batch, layers)
	total := 0.0
	for _, s := range gemmtune.StepShapes(layers, batch, d.SMs, prec) {
		es := gemmtune.Rank(d, s)
		total += es[0].Micros
		fmt.Fprintf(stdout, "%-8v M %5d N %5d K %5d split %2d  choice %-13s", s.Op, s.M, s.N, s.K, s.Parts, es[0].Name)
		for _, e := range es {
			if e.Fits {
				fmt.Fprintf(stdout, "  %s %.1f µs", e.Name, e.Micros)
			} else {
				fmt.Fprintf(stdout, "  %s (does not fit: %s)", e.Name, e.Why)
			}
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stdout, "predicted GEMM time of the step: %.1f µs (model only; a GPU run times the top choices)\n", total)
	return exitOK
}

func knownDevices() []string {
	var ns []string
	for n := range gemmtune.Known {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}
