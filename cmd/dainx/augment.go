package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/tensor"
)

func augment(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dainx augment", flag.ContinueOnError)
	fs.SetOutput(stderr)
	a := cli.NewAugment(fs) // the flags the library's options name too
	cli.BindTable(fs, &a.In.Table)
	ck := bindCheckpoint(fs)
	distMode := fs.String("dist", "", distHelp)
	shardTables := fs.String("shard-tables", string(dain.ShardTablesAuto), "with -dist mpi, shard each model's embedding table by row over the ranks (each row on one rank, with its Adam moments; a step fetches its rows from their owners and sends their gradients back): `on`, off, or auto (on with more than one rank when a table holds at least 64 MiB); a sharded table trains with sparse-adam")
	exchangeEnv := bindExchange(fs, &a.Config.Exchange)
	ncclDefault := "off"
	if cli.NCCLDefault() {
		ncclDefault = "on"
	}
	nccl := fs.String("nccl", ncclDefault, "with -dist mpi and the CUDA backend, sum gradients on the GPUs with NCCL (libnccl.so.2): `on` or off; off (the default, unless $DAINX_NCCL=1) sends them through host memory and MPI. NCCL needs one GPU per rank (when a node runs more ranks than GPUs, or its set-up fails, gradients go through MPI); it has not yet been verified on GPUs")
	cfg := &a.Config
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: dainx augment [flags]

Trains an MLP on a random 72% of the observed cells (18% validation, 10%
test), scores every training cell by TracIn influence on the validation loss,
aggregates the scores into entity importance, draws ratio × |train| new cells
from the important entities with alias tables, predicts their values (CoSTCo),
retrains a fresh MLP on train ∪ new cells and reports the test RMSE before and
after. -method runs a baseline or an ablation instead (the names of dainx
eval's -methods).

-test-frac 0 is the production mode: every observed cell trains or
validates, the report's RMSEs are validation RMSEs ("no_test": true), and
no new cell lands on an observed cell. -model-out keeps the retrained model
for dainx predict; -scores-out, -importance-out and -split-out write what
the run computed on the way.

-input with -index reads a table of IDs (CSV, TSV or Parquet), e.g.

  dainx augment -input ratings.csv -index userId,movieId,timestamp:day \
      -value rating -ids sorted -output new.csv -model-out m

and every output (-output, -scores-out, -importance-out, -split-out) then
names cells by those IDs (time bins by their start, RFC 3339 UTC) in the
input's format (or the one the output's extension names: .csv, .tsv,
.parquet; an -output named .tns or .bin holds indices); -model-out adds
the dictionaries (dictionaries.json) for dainx predict -index.

The JSON report goes to standard output; progress goes to standard error.

Flags:
`)
		fs.PrintDefaults()
	}
	if code, done := parse(fs, args, stderr); done {
		return code
	}
	if err := a.Finish(fs, stderr); err != nil {
		return exitFor("augment", err, nil, stderr)
	}
	if err := ck.check(); err != nil {
		return exitFor("augment", err, nil, stderr)
	}
	if err := checkTableFlags(&a.In, true); err != nil {
		return exitFor("augment", err, nil, stderr)
	}
	if a.In.Table.On() && *distMode == "mpi" {
		return exitFor("augment", fmt.Errorf("%w: -dist mpi reads tensors of indices (tsv, tns, bin) in parts; convert the table first (dainx convert -input TABLE -index … -value … -output x.bin -dict-out dictionaries.json)", errUsage), nil, stderr)
	}
	if err := checkDist(*distMode); err != nil {
		return exitFor("augment", err, nil, stderr)
	}
	if err := exchangeEnv(fs, *distMode == "mpi"); err != nil {
		return exitFor("augment", err, nil, stderr)
	}
	cfg.ShardTables = dain.TableSharding(*shardTables)
	if st := cfg.ShardTables; !slices.Contains(dain.TableShardings, st) {
		return exitFor("augment", fmt.Errorf("%w: -shard-tables %q: want auto, on or off", errUsage, st), nil, stderr)
	}
	if cfg.ShardTables == dain.ShardTablesOn && *distMode != "mpi" {
		return exitFor("augment", fmt.Errorf("%w: -shard-tables on shards over the ranks of -dist mpi; one process holds its tables whole", errUsage), nil, stderr)
	}
	if *nccl != "on" && *nccl != "off" {
		return exitFor("augment", fmt.Errorf("%w: -nccl %q: want on or off", errUsage, *nccl), nil, stderr)
	}
	ctx, stop := signalContext()
	defer stop()
	if *distMode != "mpi" {
		return exitFor("augment", runAugment(ctx, a, ck, &procs{cl: cluster.Local{}}, stdout, stderr), ctx, stderr)
	}
	p, err := openProcs(*nccl == "on")
	if err != nil {
		return exitFor("augment", err, ctx, stderr)
	}
	return p.exit("augment", runAugment(ctx, a, ck, p, stdout, stderr), ctx, stderr)
}

// exchangeEnvVar is the environment variable that sets the default of
// augment's -exchange.
const exchangeEnvVar = "DAINX_EXCHANGE"

// bindExchange registers -exchange on fs, bound to x, with its default
// from $DAINX_EXCHANGE (auto when unset). It returns the check to run
// once the flags are parsed: a bad value of the variable, when -exchange
// is not given, is a usage error naming both, for a run with -dist mpi
// (the only one that reads the setting).
func bindExchange(fs *flag.FlagSet, x *dain.Exchange) func(fs *flag.FlagSet, dist bool) error {
	*x = dain.ExchangeAuto
	env := os.Getenv(exchangeEnvVar)
	bad := env != "" && x.Set(env) != nil
	fs.Var(x, "exchange", "with -dist mpi, how the ranks sum the gradients of an embedding table that is not sharded: `auto` (the whole table's when it is within 4× the rows a step touches, else only the touched rows), dense (the whole table's gradient, an all-reduce) or sparse (only the rows a step touched); the report's dist.exchange says which Θ used; $DAINX_EXCHANGE sets the default")
	return func(fs *flag.FlagSet, dist bool) error {
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == "exchange" })
		if bad && !given && dist {
			return fmt.Errorf("%w: $%s=%q, the default of -exchange: want auto, dense or sparse", errUsage, exchangeEnvVar, env)
		}
		return nil
	}
}

// runAugment is dainx augment on the processes p: one (cluster.Local) or
// the ranks of an MPI job (-dist mpi). Each process reads its share of the
// input (one process the whole of it) and runs dain.RunOn; once every
// process has finished, the outputs are written as one transaction: the
// new cells by every rank at once (each its own share) under MPI, the
// other outputs and the report by rank 0, which commits them. Under MPI
// with more than one rank, -split-out and -scores-out are refused (each
// rank holds its own share of the split and the scores), as is -model-out
// with sharded tables; the models, replicated, are saved by rank 0. Its
// error says, through its type, which processes found it (procs.exit).
func runAugment(ctx context.Context, a *cli.Augment, ck *checkpointFlags, p *procs, stdout, stderr io.Writer) error {
	cfg, in := a.Config, &a.In
	if p.rank() != 0 {
		cfg.Progress = nil
		stdout = io.Discard
	}
	if err := checkOutputsOn(a, p.size()); err != nil {
		return allFound{err}
	}
	// Every output is checked before the work and written with the others
	// after it, or not at all (internal/outtx).
	tx, err := a.Begin(ck.dir)
	if err != nil {
		return allFound{err}
	}
	defer tx.Abort()
	sh, names, name, format, err := p.read(in, stderr)
	if err != nil {
		return err
	}
	tx.Names = names
	if err := checkLayers(&cfg, len(sh.Cells.Dims)); err != nil {
		return allFound{err}
	}
	be, err := p.backend(in, stderr, cfg.Progress)
	if err != nil {
		return err
	}
	defer be.Close()
	base := cli.Base(in.IndexBase, format)
	if tx.Model != nil {
		cli.SaveModels(&cfg.Keep, a, tx.Model, base, version())
	}
	res, err := ck.run(ctx, p, sh, cfg, be, name)
	if err != nil {
		return err
	}
	res.Report.Input, res.Report.Variant, res.Report.Version, res.Report.Preset = name, a.Variant(), version(), a.Preset
	js, err := p.finish(tx, res, base, tensor.WriteOptions{Format: outputFormat(a.Output, format), IndexBase: in.IndexBase})
	if err != nil {
		return err
	}
	_, err = stdout.Write(js)
	return err
}

// checkOutputsOn refuses, as a usage error, the outputs of a that a run on
// size processes does not write: on more than one, -split-out and
// -scores-out (each process holds its own share of the split and of the
// training cells' scores, which are not gathered), and -model-out with
// -shard-tables on (each holds a share of the table's rows; dain.RunOn
// refuses a table that auto shards).
func checkOutputsOn(a *cli.Augment, size int) error {
	if size <= 1 {
		return nil
	}
	for _, o := range []struct{ flag, path, what string }{
		{"-split-out", a.Out.SplitOut, "the split"},
		{"-scores-out", a.Out.ScoresOut, "the training cells' scores"},
	} {
		if o.path != "" {
			return fmt.Errorf("%w: %s under -dist mpi on %d ranks: each rank holds its own share of %s, which is not gathered; run on one process (or one rank) to write it", errUsage, o.flag, size, o.what)
		}
	}
	if a.Out.ModelOut != "" && a.Config.ShardTables == dain.ShardTablesOn {
		return fmt.Errorf("%w: -model-out with -shard-tables on over %d ranks: each rank holds a share of the embedding table's rows, and a sharded model is not gathered for saving; use -shard-tables off", errUsage, size)
	}
	return nil
}

// outputFormat is the format of the -output file: by its extension when it
// names one (.tsv, .tns or .bin, before any .gz), else the input's.
func outputFormat(path string, input tensor.Format) tensor.Format {
	p := strings.ToLower(path)
	p = strings.TrimSuffix(p, ".gz")
	switch filepath.Ext(p) {
	case ".tsv":
		return tensor.TSV
	case ".tns":
		return tensor.TNS
	case ".bin":
		return tensor.BIN
	}
	return input
}
