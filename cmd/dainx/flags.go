package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/internal/demo"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tensor/table"
)

// The flag definitions live in internal/cli, shared with the embedding
// library (cmd/libdainx), whose options are these flags without the dash.
type (
	intList    = cli.IntList
	inputFlags = cli.Input
)

var (
	bindInput    = cli.BindInput
	bindTraining = cli.BindTraining
	bindMethod   = cli.BindMethod
	finishConfig = cli.FinishConfig
	checkLayers  = cli.CheckLayers
	beginOutput  = cli.BeginOutput
	commitTensor = cli.CommitTensor
)

// readInput reads the tensor the flags name (the embedded demo when none,
// a table with -index) and returns it with the name to report and the
// format to write back.
func readInput(f *inputFlags) (*tensor.COO, string, tensor.Format, error) {
	t, _, name, format, err := readInputNamed(f, nil)
	return t, name, format, err
}

// checkTableFlags reports, as a usage error, table flags that do not fit
// together or -input: -value or -ids without -index, a bad -index, and a
// table file (.csv, .parquet) given without -index. valueRequired says
// whether -index needs -value.
func checkTableFlags(f *inputFlags, valueRequired bool) error {
	if _, err := f.Table.Spec(valueRequired); err != nil {
		return err
	}
	if f.Table.On() {
		if f.Input == "" {
			return fmt.Errorf("%w: -index reads a table: give it as -input FILE", errUsage)
		}
		_, err := cli.TableFormat(f)
		return err
	}
	return cli.CheckTensorInput(f)
}

// readInputNamed is readInput that also returns, for a table (-index),
// its dictionaries (nil for a tensor), and says on stderr what the table
// held (unless -quiet or stderr is nil). A table's format to write back
// is TSV (0-based indices, for an -output named .tns or .bin).
func readInputNamed(f *inputFlags, stderr io.Writer) (*tensor.COO, *table.Dicts, string, tensor.Format, error) {
	if err := checkTableFlags(f, true); err != nil {
		return nil, nil, "", 0, err
	}
	if f.Table.On() {
		t, d, err := cli.ReadTable(f, stderr)
		return t, d, f.Input, tensor.TSV, err
	}
	t, name, format, err := readTensor(f)
	return t, nil, name, format, err
}

// readTensor reads the tensor of indices the flags name.
func readTensor(f *inputFlags) (*tensor.COO, string, tensor.Format, error) {
	var format tensor.Format
	if f.Format != "" {
		v, err := tensor.ParseFormat(f.Format)
		if err != nil {
			return nil, "", 0, fmt.Errorf("%w: -format: %v", errUsage, err)
		}
		format = v
	} else if f.Input != "" {
		format = tensor.FormatOf(f.Input)
	}
	if f.Input == "" {
		t, err := demo.Read()
		return t, demoName, tensor.TSV, err
	}
	t, err := tensor.ReadFile(f.Input, tensor.ReadOptions{Format: format, IndexBase: f.IndexBase})
	return t, f.Input, format, err
}

// openFor opens the backend the flags name and says which was chosen.
func openFor(f *inputFlags, stderr io.Writer) (compute.Backend, error) {
	return cli.Open(f, stderr)
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
