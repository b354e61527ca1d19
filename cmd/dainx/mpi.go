package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/cluster/mpijob"
	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/cuda"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/eval"
	"github.com/dainx/dainx/mpi"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tensor/table"
)

// This file is the commands under -dist mpi: opening MPI and each rank's
// backend, the processes a run is spread over (procs: one process, or the
// ranks of the MPI job) with their reading, finishing and exit code, and
// dainx eval -dist mpi (evalDist). The reading of a rank's share of a
// file is readpart.go.

// distHelp is the help of -dist, for augment and eval.
const distHelp = "spread the run over the processes of an MPI job: `mpi` (start with mpiexec -n P or srun; the MPI library, MPICH or Open MPI, is loaded at run time); empty: one process"

// checkDist returns the usage error of a -dist value other than "" and mpi.
func checkDist(v string) error {
	if v != "" && v != "mpi" {
		return fmt.Errorf("%w: -dist %q: want mpi (or nothing for one process)", errUsage, v)
	}
	return nil
}

// openMPI initialises MPI for -dist mpi, with the options the environment
// sets (cli.MPIOptions). Without an MPI library it says why and how to get
// one.
func openMPI() (*mpi.Comm, error) {
	c, err := mpi.Init(cli.MPIOptions())
	if err != nil {
		return nil, fmt.Errorf("-dist mpi: %w", err)
	}
	return c, nil
}

// openDistBackend opens the backend for this rank: with CUDA, device
// (-device + the node-local rank) modulo the node's GPUs, so one GPU per
// rank on each node, and ranks take turns on the GPUs when a node runs
// more ranks than it has.
func openDistBackend(c *mpi.Comm, in *inputFlags, stderr io.Writer) (compute.Backend, error) {
	f := *in
	local, _ := c.LocalRank()
	if f.Backend != "cpu" {
		f.Device = rankDevice(f.Device, local, func() (int, error) { return cuda.DeviceCount(cli.CUDAEnvOptions()) })
	}
	return cli.Open(&f, stderr)
}

// rankDevice is the CUDA device ordinal of the rank of node-local index
// local: (device + local) modulo the node's device count, or device +
// local when count fails (no driver: the backend's own error, or -backend
// auto's fall-back to the CPU, says why).
func rankDevice(device, local int, count func() (int, error)) int {
	n, err := count()
	if err != nil || n < 1 {
		return device + local
	}
	return (device + local) % n
}

// procs are the processes a dainx augment run is spread over (runAugment):
// cl is cluster.Local for one process, or the ranks of the MPI job comm
// (-dist mpi) as an mpijob.Cluster.
type procs struct {
	cl   cluster.Cluster
	comm *mpi.Comm // nil for one process
	nccl bool      // -nccl on: sum the gradients on the GPUs, where NCCL works
}

// openProcs initialises MPI (openMPI) and returns its ranks as procs. A
// node running more ranks' threads than it has CPUs does not spin its idle
// workers.
func openProcs(nccl bool) (*procs, error) {
	c, err := openMPI()
	if err != nil {
		return nil, err
	}
	if _, local := c.LocalRank(); local*runtime.GOMAXPROCS(0) > mpi.NodeCPUs() {
		// The node's ranks run more threads than it has CPUs: an idle
		// worker spinning for the next operation would take a core that
		// another rank's thread needs (2 ranks of 2 threads on 2 cores:
		// training 3.5× slower with spinning).
		cpu.SetIdleSpin(false)
	}
	return &procs{cl: &mpijob.Cluster{C: c}, comm: c, nccl: nccl}, nil
}

func (p *procs) rank() int { return p.cl.Rank() }
func (p *procs) size() int { return p.cl.Size() }

// read reads this process's share of the input: the whole tensor (or
// table, with its dictionaries) on one process; under MPI its byte range
// of the file, or its slice of the embedded demo tensor (readPart).
func (p *procs) read(in *inputFlags, stderr io.Writer) (*tensor.Part, *table.Dicts, string, tensor.Format, error) {
	if p.comm == nil {
		t, names, name, format, err := readInputNamed(in, stderr)
		if err != nil {
			return nil, nil, "", 0, err
		}
		return &tensor.Part{Cells: t, NNZ: t.NNZ()}, names, name, format, nil
	}
	sh, name, format, err := readPart(p.comm, in)
	if err != nil {
		// Printed by the rank that found it (ErrReported on the others).
		return nil, nil, "", 0, ownFound{err}
	}
	return sh, nil, name, format, nil
}

// backend opens this process's backend (under MPI with the CUDA backend,
// one GPU per rank: openDistBackend) and, under MPI with -nccl on, the
// ranks' NCCL communicator, saying on progress why not when it fails.
func (p *procs) backend(in *inputFlags, stderr, progress io.Writer) (compute.Backend, error) {
	if p.comm == nil {
		return openFor(in, stderr)
	}
	be, err := openDistBackend(p.comm, in, stderrIf(p.rank() == 0, stderr))
	if err != nil {
		return nil, err
	}
	if dc, why := mpijob.OpenNCCL(p.comm, be, p.nccl); dc != nil {
		p.cl.(*mpijob.Cluster).Device = dc
	} else if why != "" && progress != nil {
		fmt.Fprintf(progress, "dainx: gradients through host memory: %s\n", why)
	}
	return be, nil
}

// finish writes the outputs of res, once every process has finished, and
// commits them (Transaction.Finish) with the report, whose JSON it returns
// on the process that wrote it (rank 0). Under MPI every rank writes its
// share of the new cells into the one file at once
// (tensor.StageFileParallel), which rank 0 takes into the transaction
// with the other outputs: a failure on any rank leaves nothing.
func (p *procs) finish(tx *cli.Transaction, res *dain.Result, base int, opt tensor.WriteOptions) ([]byte, error) {
	if p.comm == nil {
		return tx.Finish(res, base, opt)
	}
	p.comm.Barrier()
	if tx.Output != nil {
		tmp, err := tensor.StageFileParallel(tx.Output.Target(), res.Aug, opt, p.cl)
		if err == nil && p.rank() == 0 {
			err = tx.Output.Adopt(tmp)
		}
		if err != nil {
			return nil, staging{err}
		}
	}
	if p.rank() != 0 {
		return nil, nil
	}
	return tx.FinishStaged(res, base)
}

// The errors of runAugment under MPI say, by their type, which ranks found
// them, and so which prints it and how the job ends (procs.exit):
//
//   - allFound: every rank found it alike (a flag, an output path, the
//     tensor's order); rank 0 prints it and every rank ends normally;
//   - ownFound: found by this rank while reading, each rank that found it
//     prints it (the others have mpijob.ErrReported);
//   - staging: writing this rank's share of the new cells failed
//     (tensor.ErrOtherRank on the others); every rank ends normally;
//   - any other: this rank's alone, unless dain says every rank returned
//     it (dain.ErrAgreed); this rank prints it and, when the others may be
//     waiting for it, aborts the job.
//
// On one process every error is printed as exitFor prints it.
type (
	allFound struct{ error }
	ownFound struct{ error }
	staging  struct{ error }
)

func (e allFound) Unwrap() error { return e.error }
func (e ownFound) Unwrap() error { return e.error }
func (e staging) Unwrap() error  { return e.error }

// exit ends this process's part of a run of the command cmd that returned
// err, printing err (once, by the process the error types above say) and
// returning the exit code; under MPI it finalizes MPI, or aborts the job
// when other ranks may be left waiting.
func (p *procs) exit(cmd string, err error, ctx context.Context, stderr io.Writer) int {
	if p.comm == nil {
		return exitFor(cmd, err, ctx, stderr)
	}
	c, rank, size := p.comm, p.rank(), p.size()
	code := exitFailure
	var all allFound
	var own ownFound
	var st staging
	switch {
	case err == nil:
		code = exitOK
	case errors.Is(err, mpijob.ErrReported) || errors.Is(err, dain.ErrOtherProcess):
		// The rank that failed prints why; this one waits for it to
		// finish (or to abort the job).
	case errors.As(err, &all):
		// An exit without MPI_Finalize ends the job, which could kill
		// rank 0 before it has printed: every rank finalizes.
		code = exitFor(cmd, all.error, ctx, stderrIf(rank == 0, stderr))
	case errors.As(err, &own):
		code = exitFor(cmd, own.error, ctx, stderr)
	case errors.As(err, &st):
		switch {
		case size == 1:
			code = exitFor(cmd, st.error, ctx, stderr)
		case !errors.Is(err, tensor.ErrOtherRank):
			fmt.Fprintf(stderr, "dainx %s: rank %d of %d: %v\n", cmd, rank, size, st.error)
		}
	case size == 1:
		code = exitFor(cmd, err, ctx, stderr)
	case errors.Is(err, dain.ErrAgreed):
		// Every rank returned an error at the same point (a checkpoint
		// refused): each prints its own and ends without an abort, which
		// could kill a rank before it has printed.
		fmt.Fprintf(stderr, "dainx %s: rank %d of %d: %v\n", cmd, rank, size, err)
	default:
		fmt.Fprintf(stderr, "dainx %s: rank %d of %d: %v\n", cmd, rank, size, err)
		c.Abort(exitFailure)
		return exitFailure
	}
	c.Finalize()
	return code
}

// stderrIf returns w when ok, else io.Discard: a failure every rank finds
// alike is printed by rank 0 only.
func stderrIf(ok bool, w io.Writer) io.Writer {
	if ok {
		return w
	}
	return io.Discard
}

// evalDist is `dainx eval -dist mpi`. With -spread repeats every rank
// reads the whole tensor and runs the repeats r with r mod P = its rank on
// its own backend; with -spread runs every rank reads its share of the
// cells and every run is spread over all ranks (eval.EvaluateOn, as
// dainx augment -dist mpi); auto chooses repeats when each of a node's
// ranks can hold a whole run (dain.RunBytes within half the node's memory)
// and there are at least as many repeats as ranks. Rank 0 gathers the runs
// (in one process's order) and writes the output once.
func evalDist(ctx context.Context, spec eval.Spec, in *inputFlags, out, spread string, args []string, stdout, stderr io.Writer) int {
	c, err := openMPI()
	if err != nil {
		return exitFor("eval", err, ctx, stderr)
	}
	rank, size := c.Rank(), c.Size()
	fail := func(err error) int {
		if size > 1 {
			fmt.Fprintf(stderr, "dainx eval: rank %d of %d: %v\n", rank, size, err)
			c.Abort(exitFailure) // ends every rank
			return exitFailure
		}
		code := exitFor("eval", err, ctx, stderr)
		c.Finalize()
		return code
	}
	// -spread runs (and auto, to decide) reads each rank's share; repeats
	// reads the whole tensor on every rank.
	var sh *tensor.Part
	var t *tensor.COO
	var name string
	var dims []int
	var nnz int
	if spread != "repeats" {
		if sh, name, _, err = readPart(c, in); err != nil {
			if errors.Is(err, mpijob.ErrReported) {
				c.Finalize()
				return exitFailure
			}
			return fail(err)
		}
		dims, nnz = sh.Cells.Dims, sh.NNZ
	}
	if spread == "auto" {
		_, local := c.LocalRank()
		fits := dain.RunBytes(nnz, dims, spec.Base, 1)*float64(local) <= float64(dain.PhysicalMemory())/2
		spread = "runs"
		if fits && spec.Repeats >= size {
			spread = "repeats"
		}
	}
	if spread == "repeats" {
		sh = nil
		if t, name, _, err = readInput(in); err != nil {
			return fail(err)
		}
		dims, nnz = t.Dims, t.NNZ()
	}
	if err := checkLayers(&spec.Base, len(dims)); err != nil {
		return fail(err)
	}
	if rank == 0 {
		if err := checkOutDir(out, in.Input); err != nil {
			return fail(err)
		}
	} else {
		spec.Progress = nil
	}
	be, err := openDistBackend(c, in, stderrIf(rank == 0, stderr))
	if err != nil {
		return fail(err)
	}
	defer be.Close()
	var res *eval.Results
	if spread == "runs" {
		cl := &mpijob.Cluster{C: c}
		if res, err = eval.EvaluateOn(ctx, cl, sh, spec, be); err != nil {
			return fail(err)
		}
	} else {
		spec.Only = func(r int) bool { return r%size == rank }
		if res, err = eval.Evaluate(ctx, t, spec, be); err != nil {
			return fail(err)
		}
		// Every rank's runs, gathered in one process's order.
		js, err := json.Marshal(res.Runs)
		if err != nil {
			return fail(err)
		}
		all, counts := mpi.Allgatherv(c, js)
		var runs []eval.Run
		off := 0
		for _, n := range counts {
			var part []eval.Run
			if err := json.Unmarshal(all[off:off+int(n)], &part); err != nil {
				return fail(err)
			}
			runs = append(runs, part...)
			off += int(n)
		}
		sort.SliceStable(runs, func(i, j int) bool { return runs[i].Repeat < runs[j].Repeat })
		res.Runs = runs
	}
	secs := []float64{res.Seconds}
	c.Allreduce(secs, mpi.Max)
	if rank == 0 {
		res.Seconds = secs[0]
		p := eval.Provenance{
			Input: name, Dims: dims, NNZ: nnz, Backend: be.Name(), Device: be.Device(),
			Methods: spec.Methods, Ratios: spec.Ratios, Baselines: spec.Baselines, Repeats: spec.Repeats, Base: eval.TrainingOf(spec.Base),
			Command: "dainx eval " + strings.Join(args, " "), Seconds: res.Seconds,
		}
		if err := res.WriteDir(out, p); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "dainx eval: wrote %s/{runs.csv,runs.json,summary.md,summary.json,rmse.png,runtime.png} (%d ranks, -spread %s, %s)\n", out, size, spread, c.Version())
	}
	c.Finalize()
	return exitOK
}
