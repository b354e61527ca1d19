package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/eval"
	"github.com/dainx/dainx/internal/outtx"
)

func evalCmd(args []string, stdout, stderr io.Writer) int {
	cfg := cli.DefaultConfig()
	var in inputFlags
	var methods, ratios, out, summarize, merge, baselines string
	var repeats int
	var resume, diagnose bool
	fs := flag.NewFlagSet("dainx eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bindInput(fs, &in)
	cli.BindTable(fs, &in.Table)
	fs.StringVar(&methods, "methods", strings.Join(defaultMethods(), ","), "comma-separated `methods`: "+strings.Join(eval.VariantNames(), ", "))
	fs.StringVar(&baselines, "baselines", "", "comma-separated final `models` ("+strings.Join(eval.BaselineNames(), ", ")+") each also trained on every split's training cells alone: rows of method plain beside the augmentations (the final model's own is the ratio-0 run, reused); empty: none")
	fs.StringVar(&ratios, "ratios", "0,0.1,0.2,0.3,0.4,0.5", "comma-separated augmentation `ratios` (0 is the no-augmentation baseline, shared by all methods)")
	fs.IntVar(&repeats, "repeats", 10, "`number` of random splits; repeat r uses seed -seed + r")
	fs.StringVar(&out, "out", "", "output `directory` for runs.csv, runs.json, summary.md, summary.json, rmse.png and runtime.png (required)")
	fs.StringVar(&summarize, "summarize", "", "write the summary, tables and plots of an earlier run in `directory` again from its runs.json, and train nothing")
	fs.BoolVar(&resume, "resume", false, "continue an interrupted evaluation in -out: repeats already in its runs.json (same tensor, configuration and seeds) are kept, the rest are run")
	fs.StringVar(&merge, "merge", "", "comma-separated eval output `directories` of the same tensor and configuration with other seeds (e.g. repeats run in batches) to merge into -out as one evaluation, training nothing")
	fs.BoolVar(&diagnose, "diagnose", false, "instead of the evaluation, diagnose the split of -seed at the largest ratio: the entity-frequency profile of every method's new cells, and the value predictors' and every retrained model's test RMSE per frequency band; writes diagnose.json and diagnose.md into -out")
	bindTraining(fs, &cfg, &in.Layers)
	cli.BindInRun(fs, &cfg) // for the methods dain-in-run and dain-in-run-signed
	var oracle string
	cli.BindValues(fs, &cfg, &oracle)
	var preset string
	cli.BindPreset(fs, &preset)
	distMode := fs.String("dist", "", distHelp+"; the repeats, or each run, are spread over the ranks (-spread)")
	spread := fs.String("spread", "auto", "with -dist mpi: repeats (each rank runs whole repeats, r mod ranks = its rank, holding the whole tensor), runs (every run spread over all ranks, each holding its share of the cells, as dainx augment -dist mpi), or auto: repeats when a node's ranks can each hold a whole run and there are at least as many repeats as ranks, else runs")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: dainx eval -out DIR [flags]

Runs the paper's evaluation on one tensor: for every repeat one random split
shared by all methods; for every method and ratio, the test RMSE of an MLP
trained on train ∪ augmentation. Writes every run (CSV, JSON), a Markdown table
of mean ± std with two-sided Welch t-test p-values against dain, and PNG plots
of test RMSE and runtime against the ratio. Shows a progress bar with an ETA.
-out is rewritten after every repeat, so an interrupted evaluation keeps its
finished repeats; -resume continues it. With -summarize it rewrites an earlier output's summary; with -merge it joins
outputs made with other seeds (repeats run in batches) into one; neither
trains anything.

Methods:
`)
		fmt.Fprint(stderr, methodsHelp())
		fmt.Fprint(stderr, "\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, done := parse(fs, args, stderr); done {
		return code
	}
	if summarize != "" && merge != "" {
		return exitFor("eval", fmt.Errorf("%w: -summarize and -merge exclude each other", errUsage), nil, stderr)
	}
	if summarize != "" {
		return exitFor("eval", resummarize(summarize, stdout), nil, stderr)
	}
	if merge != "" {
		if out == "" {
			return exitFor("eval", fmt.Errorf("%w: -merge needs -out DIR", errUsage), nil, stderr)
		}
		return exitFor("eval", outDirGuard(out)(mergeEval(splitList(merge), out, stdout)), nil, stderr)
	}
	spec := eval.Spec{Methods: splitList(methods), Repeats: repeats}
	if baselines != "" {
		spec.Baselines = splitList(baselines)
	}
	for _, r := range splitList(ratios) {
		v, err := strconv.ParseFloat(r, 64)
		if err != nil {
			return exitFor("eval", fmt.Errorf("%w: -ratios: %q is not a number", errUsage, r), nil, stderr)
		}
		if err := dain.CheckRatio(v); err != nil {
			return exitFor("eval", fmt.Errorf("%w: -ratios: %v", errUsage, err), nil, stderr)
		}
		spec.Ratios = append(spec.Ratios, v)
	}
	if out == "" {
		return exitFor("eval", fmt.Errorf("%w: -out DIR is required", errUsage), nil, stderr)
	}
	if err := cli.ApplyPreset(fs, &cfg, preset); err != nil {
		return exitFor("eval", err, nil, stderr)
	}
	if err := cli.LoadOracle(&cfg, oracle); err != nil {
		return exitFor("eval", err, nil, stderr)
	}
	if err := finishConfig(&cfg, &in, stderr); err != nil {
		return exitFor("eval", fmt.Errorf("%w: %v", errUsage, err), nil, stderr)
	}
	spec.Base = cfg
	if err := spec.Validate(); err != nil {
		return exitFor("eval", fmt.Errorf("%w: %v", errUsage, err), nil, stderr)
	}
	if !in.Quiet {
		spec.Progress = stderr
	}
	if err := checkDist(*distMode); err != nil {
		return exitFor("eval", err, nil, stderr)
	}
	if *spread != "auto" && *spread != "repeats" && *spread != "runs" {
		return exitFor("eval", fmt.Errorf("%w: -spread %q: want auto, repeats or runs", errUsage, *spread), nil, stderr)
	}
	ctx, stop := signalContext()
	defer stop()
	if *distMode == "mpi" {
		if resume || diagnose {
			return exitFor("eval", fmt.Errorf("%w: -dist mpi runs neither -resume nor -diagnose", errUsage), nil, stderr)
		}
		guard := outDirGuard(out)
		code := evalDist(ctx, spec, &in, out, *spread, args, stdout, stderr)
		if code != exitOK && code != exitInterrupted {
			guard(errors.New("failed"))
		}
		return code
	}
	return exitFor("eval", outDirGuard(out)(runEval(ctx, spec, &in, out, resume, diagnose, args, stdout, stderr)), ctx, stderr)
}

// outDirGuard notes whether the output directory dir exists before the
// command, and returns the function that, given the command's error,
// removes dir if the command failed, made it, and left nothing in it but
// its temporaries: a failed command leaves no empty output directory
// behind. A directory holding finished repeats (resumable with -resume)
// is kept.
func outDirGuard(dir string) func(error) error {
	_, err := os.Lstat(dir)
	existed := err == nil
	return func(cerr error) error {
		if cerr == nil || existed {
			return cerr
		}
		outtx.Sweep(dir, "")
		os.Remove(dir) // only when empty
		return cerr
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// defaultMethods are DAIN and the paper's baselines.
func defaultMethods() []string {
	var out []string
	for _, v := range dain.Variants {
		if v.Role != "ablation" {
			out = append(out, v.Name)
		}
	}
	return out
}

// methodsHelp lists every method of dain.Variants with its role and what it
// changes.
func methodsHelp() string {
	var b strings.Builder
	for _, v := range dain.Variants {
		fmt.Fprintf(&b, "  %-22s %-9s %s\n", v.Name, v.Role, v.Doc)
	}
	return b.String()
}

func runEval(ctx context.Context, spec eval.Spec, in *inputFlags, out string, resume, diagnose bool, args []string, stdout, stderr io.Writer) error {
	t, _, name, _, err := readInputNamed(in, stderr)
	if err != nil {
		return err
	}
	if err := checkLayers(&spec.Base, t.Order()); err != nil {
		return err
	}
	// -out may not be the input nor lie where it cannot be written; its
	// files are written together after every repeat (eval.WriteDir).
	if err := checkOutDir(out, in.Input); err != nil {
		return err
	}
	be, err := openFor(in, stderr)
	if err != nil {
		return err
	}
	defer be.Close()
	// prov is what runs.json and the summary record after done repeats.
	prov := func(seconds float64, done int) eval.Provenance {
		p := eval.Provenance{
			Input: name, Dims: t.Dims, NNZ: t.NNZ(), Backend: be.Name(), Device: be.Device(),
			Methods: spec.Methods, Ratios: spec.Ratios, Baselines: spec.Baselines, Repeats: done, Base: eval.TrainingOf(spec.Base),
			Command: "dainx eval " + strings.Join(args, " "), Seconds: seconds,
		}
		if done < spec.Repeats {
			p.RepeatsRequested = spec.Repeats
		}
		return p
	}
	if diagnose {
		t0 := time.Now()
		d, err := eval.Diagnose(ctx, t, spec, be)
		if err != nil {
			return err
		}
		p := prov(time.Since(t0).Seconds(), 1)
		p.RepeatsRequested = 0
		if err := d.WriteDir(out, p); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "dainx eval: wrote %s/{diagnose.json,diagnose.md}\n", out)
		return nil
	}
	if resume {
		adoptRecorded(out, &spec.Base, args, stderr)
		prev, err := resumeFrom(out, prov(0, spec.Repeats))
		if err != nil {
			return err
		}
		if prev == nil {
			fmt.Fprintf(stderr, "dainx eval: -resume: %s has no runs.json; starting from the first repeat\n", out)
		}
		spec.Resume = prev
	}
	wrote := false
	spec.AfterRepeat = func(r *eval.Results) error {
		if d := repeatsDone(r); d < spec.Repeats {
			wrote = true
			return r.WriteDir(out, prov(r.Seconds, d))
		}
		return nil // the final write follows
	}
	res, err := eval.Evaluate(ctx, t, spec, be)
	if err != nil {
		if ctx.Err() != nil && (wrote || spec.Resume != nil) {
			if prev, _, lerr := eval.Load(out); lerr == nil && len(prev.Runs) > 0 {
				return &keptError{fmt.Sprintf("%s holds the %d finished repeats; the same command with -resume continues", out, repeatsDone(prev))}
			}
		}
		return err
	}
	if err := res.WriteDir(out, prov(res.Seconds, spec.Repeats)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "dainx eval: wrote %s/{runs.csv,runs.json,summary.md,summary.json,rmse.png,runtime.png}\n", out)
	return nil
}

// checkOutDir checks, before any work, that dir can be an eval output
// directory: not an input file, a directory or a new name in an existing,
// writable directory (internal/outtx).
func checkOutDir(dir string, inputs ...string) error {
	tx := outtx.New()
	for _, in := range inputs {
		tx.Input(in)
	}
	_, err := tx.Dir(dir, nil)
	return err
}

// repeatsDone returns the number of distinct repeats among r's runs.
func repeatsDone(r *eval.Results) int {
	seen := map[int]bool{}
	for _, run := range r.Runs {
		seen[run.Repeat] = true
	}
	return len(seen)
}

// resumeFrom loads the evaluation in dir for -resume, or returns nil if dir
// has no runs.json. It is an error if that evaluation was made on another
// tensor, with other methods, ratios or training configuration, or with
// another -seed (see eval.Provenance.Compatible).
func resumeFrom(dir string, cur eval.Provenance) (*eval.Results, error) {
	if _, err := os.Stat(filepath.Join(dir, "runs.json")); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	prev, prevProv, err := eval.Load(dir)
	if err != nil {
		return nil, err
	}
	if err := prevProv.Compatible(cur, true); err != nil {
		return nil, fmt.Errorf("-resume: %s: %w", dir, err)
	}
	return prev, nil
}

// resummarize writes the summary files of dir again from its runs.json.
func resummarize(dir string, stdout io.Writer) error {
	res, prov, err := eval.Load(dir)
	if err != nil {
		return err
	}
	prov.Seconds = res.Seconds
	if err := res.WriteDir(dir, prov); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "dainx eval: rewrote the summary of %s\n", dir)
	return nil
}

// mergeEval merges the eval outputs in dirs into out (see eval.Merge).
func mergeEval(dirs []string, out string, stdout io.Writer) error {
	tx := outtx.New()
	for _, d := range dirs {
		tx.InputDir(d)
	}
	if _, err := tx.Dir(out, nil); err != nil {
		return err
	}
	res, prov, err := eval.Merge(dirs)
	if err != nil {
		return err
	}
	if err := res.WriteDir(out, prov); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "dainx eval: merged %d outputs (%d runs) into %s/{runs.csv,runs.json,summary.md,summary.json,rmse.png,runtime.png}\n", len(dirs), len(res.Runs), out)
	return nil
}
