package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/internal/demo"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// intList is a flag.Value for comma-separated positive integers.
type intList []int

func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(s string) error {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	*l = out
	return nil
}

// inputFlags are the flags every command that reads a tensor shares.
type inputFlags struct {
	input, format, backend string
	precision              string
	device                 int
	indexBase              int
	quiet                  bool
	layers                 intList
}

// bindInput registers the input, backend and progress flags.
func bindInput(fs *flag.FlagSet, f *inputFlags) {
	fs.StringVar(&f.input, "input", "", "input tensor `file`: DAIN TSV (0-based indices, tab-separated, then the value) or FROSTT .tns (1-based, # comments); gzip is detected by content. Empty: the embedded demo tensor (DAIN's synthetic_10K)")
	fs.StringVar(&f.format, "format", "", "input `format`: tsv or tns; empty: by extension (.tns or .tns.gz is tns, anything else tsv)")
	fs.IntVar(&f.indexBase, "index-base", -1, "index `base` of the input and output files (0 or 1); -1: the format's own (tsv 0, tns 1)")
	fs.StringVar(&f.backend, "backend", "auto", "compute `backend`: auto (CUDA if a driver and device exist, else CPU), cpu or cuda")
	dev, err := cuda.DeviceFromEnv()
	if err != nil {
		dev = -1 // reported by openBackend as a bad -device
	}
	fs.IntVar(&f.device, "device", dev, "CUDA device `ordinal` (default $DAINX_DEVICE, else 0); dainx shares the device's primary context")
	fs.StringVar(&f.precision, "precision", "fp32", "GEMM `precision` of the CUDA backend: fp32 (exact float32), tf32 (tensor cores, 10-bit mantissa products) or 3xtf32 (tensor cores, split operands, about fp32 accuracy)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress on standard error")
}

// bindTraining registers the flags of the models' training and the split.
func bindTraining(fs *flag.FlagSet, c *dain.Config, layers *intList) {
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random `seed` for the split, initialisation, shuffling and sampling")
	fs.Var(layers, "layers", "MLP layer `widths`: N·E (N modes × embedding width E) then the hidden widths, comma-separated; default N·50,1024,1024,128")
	fs.IntVar(&c.Epochs, "epochs", c.Epochs, "maximum training `epochs` per model")
	fs.IntVar(&c.Batch, "batch", c.Batch, "MLP training batch `size` in cells")
	fs.Float64Var(&c.LR, "lr", c.LR, "MLP Adam learning `rate`, also TracIn's step size η")
	fs.IntVar(&c.Patience, "patience", c.Patience, "early-stopping patience in `epochs` without a better validation MSE")
	fs.Float64Var(&c.TestFrac, "test-frac", c.TestFrac, "`fraction` of all cells held out for test")
	fs.Float64Var(&c.ValFrac, "val-frac", c.ValFrac, "`fraction` of the remaining cells used for validation")
	fs.IntVar(&c.Rank, "rank", c.Rank, "CoSTCo embedding `rank` R")
	fs.IntVar(&c.Channels, "channels", c.Channels, "CoSTCo convolution `channels` C")
	fs.Float64Var(&c.CoSTCoLR, "costco-lr", c.CoSTCoLR, "CoSTCo Adam learning `rate`")
	fs.IntVar(&c.CoSTCoBatch, "costco-batch", c.CoSTCoBatch, "CoSTCo training batch `size`")
}

// bindMethod registers the flags that choose how cells are made; their
// help lists dain's variants of each step.
func bindMethod(fs *flag.FlagSet, c *dain.Config) {
	fs.StringVar(&c.Method, "method", c.Method, "augmentation `method`: "+dain.Help(dain.Methods))
	fs.StringVar(&c.Model, "model", c.Model, "embedding `model` Θ whose influence ranks cells: "+dain.Help(dain.Models))
	fs.StringVar(&c.Predictor, "predictor", c.Predictor, "value `predictor` for new cells: "+dain.Help(dain.Models)+"; mlp reuses Θ")
	fs.StringVar(&c.Influence, "influence", c.Influence, "cell importance `estimator`: "+dain.Help(dain.Influences))
	fs.StringVar(&c.InfluenceLayers, "influence-layers", c.InfluenceLayers, "TracIn's `parameters`: "+dain.Help(dain.InfluenceLayers))
	fs.StringVar(&c.Entity, "entity", c.Entity, "entity importance `aggregator`: "+dain.Help(dain.Entities))
}

// finishConfig applies the parsed layers and checks the configuration.
func finishConfig(c *dain.Config, f *inputFlags, stderr io.Writer) error {
	if len(f.layers) > 0 {
		c.Layers = f.layers
	}
	if f.indexBase < -1 {
		return fmt.Errorf("-index-base %d: want 0, 1 (or -1 for the format's own)", f.indexBase)
	}
	if !f.quiet {
		c.Progress = stderr
	}
	return c.Validate()
}

// readInput reads the tensor the flags name (the embedded demo when none)
// and returns it with the name to report and the format to write back.
func readInput(f *inputFlags) (*tensor.COO, string, tensor.Format, error) {
	var format tensor.Format
	if f.format != "" {
		v, err := tensor.ParseFormat(f.format)
		if err != nil {
			return nil, "", 0, fmt.Errorf("%w: -format: %v", errUsage, err)
		}
		format = v
	} else if f.input != "" {
		format = tensor.FormatOf(f.input)
	}
	if f.input == "" {
		t, err := demo.Read()
		return t, demoName, tensor.TSV, err
	}
	t, err := tensor.ReadFile(f.input, tensor.ReadOptions{Format: format, IndexBase: f.indexBase})
	return t, f.input, format, err
}

// checkLayers reports, as a usage error, a -layers that does not fit the
// tensor's order.
func checkLayers(c *dain.Config, order int) error {
	if c.Layers == nil {
		return nil
	}
	if err := nn.CheckLayers(c.Layers, order); err != nil {
		return fmt.Errorf("%w: -layers %v: %v", errUsage, (*intList)(&c.Layers).String(), err)
	}
	return nil
}

// checkWritable refuses, before hours of training, a path whose directory
// does not exist.
func checkWritable(paths ...string) error {
	for _, p := range paths {
		if p == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(p)); err != nil || !st.IsDir() {
			return fmt.Errorf("cannot write %s: directory %s does not exist", p, filepath.Dir(p))
		}
	}
	return nil
}

// openFor opens the backend the flags name and says which was chosen.
func openFor(f *inputFlags, stderr io.Writer) (compute.Backend, error) {
	be, why, err := openBackend(backendChoice{name: f.backend, device: f.device, precision: f.precision})
	if err != nil {
		return nil, err
	}
	if why != "" && !f.quiet {
		fmt.Fprintf(stderr, "dainx: backend %s: %s\n", be.Name(), why)
	}
	return be, nil
}

// exitFor prints err and returns the exit code it deserves.
func exitFor(cmd string, err error, ctx context.Context, stderr io.Writer) int {
	switch {
	case err == nil:
		return exitOK
	case ctx != nil && ctx.Err() != nil:
		var kept *keptError
		if errors.As(err, &kept) {
			fmt.Fprintf(stderr, "dainx %s: interrupted; %s\n", cmd, kept.msg)
		} else {
			fmt.Fprintf(stderr, "dainx %s: interrupted; nothing written\n", cmd)
		}
		return exitInterrupted
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "dainx %s: %v\n", cmd, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		return exitUsage
	default:
		fmt.Fprintf(stderr, "dainx %s: %v\n", cmd, err)
		return exitFailure
	}
}

// keptError is an interruption after which some complete output was kept
// (eval's finished repeats); msg says what and where.
type keptError struct{ msg string }

func (e *keptError) Error() string { return e.msg }

// signalContext is cancelled by SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// parse parses args into fs and rejects stray arguments; done reports that
// the command should return code (help was shown or parsing failed).
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, true
		}
		return exitUsage, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q (flags come as -name value)\n", fs.Name(), fs.Arg(0))
		return exitUsage, true
	}
	return 0, false
}
