package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/internal/demo"
	"github.com/dainx/dainx/tensor"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailure     = 1   // the run failed: bad input, device failure, …
	exitUsage       = 2   // bad command line
	exitInterrupted = 130 // SIGINT or SIGTERM
)

const demoName = "synthetic_10K.tsv (embedded demo: DAIN's data/synthetic_10K.tensor, Apache-2.0, Oh et al. CIKM 2021)"

const usage = `dainx: influence-guided data augmentation for neural tensor completion (DAIN)

Usage:
  dainx augment [flags]   run DAIN on a tensor and write the augmented cells
  dainx version           print the version
  dainx help              print this help

Run "dainx augment -h" for the flags of augment.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "augment":
		return augment(args[1:], stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, "dainx", version())
		return exitOK
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "dainx: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
		if bi.Main.Version != "" {
			return bi.Main.Version
		}
	}
	return "(devel)"
}

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

func augment(args []string, stdout, stderr io.Writer) int {
	def := dain.DefaultConfig()
	fs := flag.NewFlagSet("dainx augment", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		input     = fs.String("input", "", "input tensor `file`: DAIN TSV (0-based indices, tab-separated, then the value) or FROSTT .tns (1-based, # comments); gzip is detected by content. Empty: the embedded demo tensor (DAIN's synthetic_10K)")
		output    = fs.String("output", "", "write the augmented cells only to this `file`, in the input's format and index base (gzip if it ends in .gz); written to a temporary file and renamed, never half-written")
		report    = fs.String("report", "", "also write the JSON report to this `file` (it always goes to standard output)")
		format    = fs.String("format", "", "input `format`: tsv or tns; empty: by extension (.tns or .tns.gz is tns, anything else tsv)")
		indexBase = fs.Int("index-base", -1, "index `base` of the input and output files (0 or 1); -1: the format's own (tsv 0, tns 1)")
		ratio     = fs.Float64("ratio", def.Ratio, "augmentation `ratio`: draw ratio × |train| new cells")
		seed      = fs.Uint64("seed", def.Seed, "random `seed` for the split, initialisation, shuffling and sampling")
		layers    intList
		epochs    = fs.Int("epochs", def.Epochs, "maximum training `epochs` per model")
		batch     = fs.Int("batch", def.Batch, "training batch `size` in cells")
		lr        = fs.Float64("lr", def.LR, "Adam learning `rate`, also TracIn's step size η")
		patience  = fs.Int("patience", def.Patience, "early-stopping patience in `epochs` without a better validation MSE")
		testFrac  = fs.Float64("test-frac", def.TestFrac, "`fraction` of all cells held out for test")
		valFrac   = fs.Float64("val-frac", def.ValFrac, "`fraction` of the remaining cells used for validation")
		predictor = fs.String("predictor", def.Predictor, "value `predictor` for the new cells: mlp (reuse the trained model Θ)")
		backend   = fs.String("backend", "auto", "compute `backend`: auto (CUDA if a driver and device exist, else CPU), cpu or cuda")
		quiet     = fs.Bool("quiet", false, "no progress on standard error")
	)
	fs.Var(&layers, "layers", "MLP layer `widths`: N·E (N modes × embedding width E) then the hidden widths, comma-separated; default N·50,1024,1024,128")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: dainx augment [flags]

Trains an MLP on a random 72% of the observed cells (18% validation, 10%
test), scores every training cell by TracIn influence on the validation loss,
aggregates the scores into entity importance, draws ratio × |train| new cells
from the important entities with alias tables, predicts their values, retrains
a fresh model on train ∪ new cells and reports the test RMSE before and after.

The JSON report goes to standard output; progress goes to standard error.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dainx augment: unexpected argument %q (flags come as -name value)\n", fs.Arg(0))
		return exitUsage
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "dainx augment: "+format+"\n", a...)
		return exitUsage
	}
	if *indexBase < -1 {
		return usageErr("-index-base %d: want 0, 1 (or -1 for the format's own)", *indexBase)
	}
	cfg := def
	cfg.Ratio, cfg.Seed, cfg.Epochs, cfg.Batch, cfg.LR = *ratio, *seed, *epochs, *batch, *lr
	cfg.Patience, cfg.TestFrac, cfg.ValFrac, cfg.Predictor = *patience, *testFrac, *valFrac, *predictor
	if len(layers) > 0 {
		cfg.Layers = layers
	}
	if err := cfg.Validate(); err != nil {
		return usageErr("%v", err)
	}
	if !*quiet {
		cfg.Progress = stderr
	}

	// Read the tensor.
	var fmtIn tensor.Format
	name := *input
	if *format != "" {
		f, err := tensor.ParseFormat(*format)
		if err != nil {
			return usageErr("-format: %v", err)
		}
		fmtIn = f
	} else if name != "" {
		fmtIn = tensor.FormatOf(name)
	}
	ropt := tensor.ReadOptions{Format: fmtIn, IndexBase: *indexBase}
	var t *tensor.COO
	var err error
	if name == "" {
		name = demoName
		t, err = demo.Read()
	} else {
		t, err = tensor.ReadFile(name, ropt)
	}
	if err != nil {
		fmt.Fprintf(stderr, "dainx: %v\n", err)
		return exitFailure
	}
	if cfg.Layers != nil && cfg.Layers[0]%t.Order() != 0 {
		return usageErr("-layers %v: the first width must be a multiple of the tensor order %d (order × embedding width)", layers.String(), t.Order())
	}
	// Refuse an unwritable output before hours of training.
	for _, p := range []string{*output, *report} {
		if p == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(p)); err != nil || !st.IsDir() {
			fmt.Fprintf(stderr, "dainx: cannot write %s: directory %s does not exist\n", p, filepath.Dir(p))
			return exitFailure
		}
	}

	be, why, err := openBackend(*backend)
	if err != nil {
		fmt.Fprintf(stderr, "dainx: %v\n", err)
		if errors.Is(err, errUsage) {
			return exitUsage
		}
		return exitFailure
	}
	defer be.Close()
	if why != "" && !*quiet {
		fmt.Fprintf(stderr, "dainx: backend %s: %s\n", be.Name(), why)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := dain.Run(ctx, t, cfg, be)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "dainx: interrupted; nothing written")
			return exitInterrupted
		}
		fmt.Fprintf(stderr, "dainx: %v\n", err)
		return exitFailure
	}
	res.Report.Input = name

	js, err := json.MarshalIndent(res.Report, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "dainx: encoding the report: %v\n", err)
		return exitFailure
	}
	js = append(js, '\n')
	if *output != "" {
		wopt := tensor.WriteOptions{Format: fmtIn, IndexBase: *indexBase}
		if err := tensor.WriteFile(*output, res.Aug, wopt); err != nil {
			fmt.Fprintf(stderr, "dainx: %v\n", err)
			return exitFailure
		}
	}
	if *report != "" {
		if err := tensor.AtomicWrite(*report, func(w io.Writer) error { _, err := w.Write(js); return err }); err != nil {
			fmt.Fprintf(stderr, "dainx: %v\n", err)
			return exitFailure
		}
	}
	if _, err := stdout.Write(js); err != nil {
		fmt.Fprintf(stderr, "dainx: %v\n", err)
		return exitFailure
	}
	return exitOK
}
