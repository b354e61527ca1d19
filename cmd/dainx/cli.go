package main

import (
	"fmt"
	dxversion "github.com/dainx/dainx/internal/version"
	"io"
	"os"
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
  dainx augment [flags]   run DAIN (or a baseline) on a tensor and write the augmented cells
  dainx eval [flags]      compare methods over augmentation ratios and repeats, with statistics and plots
  dainx synth [flags]     write a synthetic tensor built from random factor matrices
  dainx convert [flags]   convert a tensor between tsv, tns and SPLATT .bin, and index bases
  dainx predict [flags]   predict cells with a model saved by augment -model-out
  dainx fold-in [flags]   add new entities to a saved model (trained on their cells, the rest frozen)
  dainx tune [flags]      choose the GEMM kernel variants for a GPU (or print the model's ranking)
  dainx version           print the version
  dainx help              print this help

Run "dainx <command> -h" for the flags of a command.
`

// run runs the command args names and returns its exit code. A panic in
// the command (a bug) is exit 1 with a one-line message, not a runtime
// trace: exit 2 means a bad command line only, and the command's deferred
// clean-up (staged outputs, the backend) has run. DAINX_TRACEBACK=1 lets
// the panic through, with its stack, for debugging.
func run(args []string, stdout, stderr io.Writer) (code int) {
	if os.Getenv("DAINX_TRACEBACK") == "" {
		defer func() {
			if r := recover(); r != nil {
				fmt.Fprintf(stderr, "dainx: internal error: %v\n(a bug in dainx: please report it with the command line; DAINX_TRACEBACK=1 shows where it happened)\n", r)
				code = exitFailure
			}
		}()
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "augment":
		return augment(args[1:], stdout, stderr)
	case "eval":
		return evalCmd(args[1:], stdout, stderr)
	case "synth":
		return synth(args[1:], stdout, stderr)
	case "predict":
		return predict(args[1:], stdout, stderr)
	case "fold-in":
		return foldIn(args[1:], stdout, stderr)
	case "convert":
		return convert(args[1:], stdout, stderr)
	case "tune":
		return tune(args[1:], stdout, stderr)
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

func version() string { return dxversion.String() }
