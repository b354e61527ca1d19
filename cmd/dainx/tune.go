package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda"
	"github.com/dainx/dainx/cuda/gemmtune"
	"github.com/dainx/dainx/nn"
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
		gemmSer   string
	)
	fs := flag.NewFlagSet("dainx tune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&layers, "layers", "MLP layer `widths`: the input width then the hidden widths, comma-separated (the output layer of width 1 is not a GEMM)")
	fs.IntVar(&batch, "batch", 1024, "training batch `size` in cells (the GEMMs' M, or K for the weight gradients)")
	fs.StringVar(&precision, "precision", "tf32", "GEMM `precision`: fp32, tf32 or 3xtf32")
	fs.BoolVar(&modelOnly, "model-only", false, "print the model's ranking for -device instead of timing on a GPU (no GPU needed)")
	fs.StringVar(&device, "device", "h100", "with -model-only, the recorded device `properties`: "+strings.Join(knownDevices(), ", "))
	fs.IntVar(&ordinal, "gpu", 0, "without -model-only, the CUDA device `ordinal` to tune")
	cli.BindGemmSerial(fs, &gemmSer)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: dainx tune [flags]

Chooses, for every GEMM of one training step (forward, dx and dw of each
layer), a member of the GEMM kernel family (docs/gpu-tuning.md). On a GPU it
runs one training step with -gemm-tune time, which times the analytic
model's top choices and fills the tuning cache
(os.UserCacheDir()/dainx/gemm-tune.json) that training with -gemm-tune
time (or DAINX_GEMM_TUNE=time) then reads, and prints the choices; with
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
	serial, err := cli.ParseGemmSerial(gemmSer)
	if err != nil {
		return exitFor("tune", err, nil, stderr)
	}
	if !modelOnly {
		return tuneOnGPU(layers, batch, ordinal, prec, serial, stdout, stderr)
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

// tuneOnGPU runs one training step of the MLP (forward, backward) on the
// CUDA backend with -gemm-tune time (cuda.GemmTuneTime), which times the model's top
// choices for every GEMM shape and fills the cache, and prints the choices;
// serial is -gemm-serial.
func tuneOnGPU(layers []int, batch, ordinal int, prec compute.Precision, serial bool, stdout, stderr io.Writer) int {
	o := cli.CUDAEnvOptions()
	o.Device, o.Precision, o.GemmTune, o.SerialSplitK = ordinal, prec, cuda.GemmTuneTime, serial
	be, err := cli.NewCUDA(o)
	if err != nil {
		fmt.Fprintf(stderr, "dainx tune: no GPU to tune on: %v\n(dainx tune -model-only -device h100 prints the model's ranking without one)\n", err)
		return exitFailure
	}
	defer be.Close()
	cb, ok := be.(*cuda.Backend)
	if !ok {
		fmt.Fprintf(stderr, "dainx tune: the backend is %s, not CUDA\n", be.Name())
		return exitFailure
	}
	order := 3
	if layers[0]%order != 0 {
		order = 1
	}
	dims := make([]int, order)
	for i := range dims {
		dims[i] = 1000
	}
	m, err := nn.NewMLP(be, nn.Config{Dims: dims, Layers: layers, Capacity: batch}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		return exitFor("tune", err, nil, stderr)
	}
	defer m.Free()
	rows := make([]int32, batch*order)
	for i := range rows {
		rows[i] = int32(i % 1000)
	}
	dr, delta := be.AllocI32(len(rows)), be.Alloc(batch)
	be.UploadI32(dr, rows)
	t0 := time.Now()
	m.Forward(dr)
	m.BackwardSparse(dr, delta)
	if err := be.Sync(); err != nil {
		return exitFor("tune", err, nil, stderr)
	}
	choices, spent := cb.GEMMChoices()
	fmt.Fprintf(stdout, "tuned on %s, %v, batch %d, layers %v: %d GEMM shapes in %.2f s (%.2f s timing)\n",
		be.Device(), prec, batch, layers, len(choices), time.Since(t0).Seconds(), spent.Seconds())
	for _, c := range choices {
		s := c.Shape
		fmt.Fprintf(stdout, "%-8v M %5d N %5d K %5d split %2d  %-13s %s", s.Op, s.M, s.N, s.K, s.Parts, c.Variant, c.How)
		if c.Serial {
			fmt.Fprint(stdout, ", serial split-K")
		}
		names := make([]string, 0, len(c.Micros))
		for n := range c.Micros {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(stdout, "  %s %.1f µs", n, c.Micros[n])
		}
		fmt.Fprintln(stdout)
	}
	if path, err := gemmtune.DefaultPath(); err == nil {
		fmt.Fprintf(stdout, "cache: %s\n", path)
	}
	return exitOK
}
