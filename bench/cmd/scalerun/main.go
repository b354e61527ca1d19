// Command scalerun is `make bench-scale`: it runs `dainx augment` on
// synthetic 3-mode tensors of growing size (10M, 30M and 100M cells by
// default) and records how time and memory grow with the cells, in
// bench/results/scale-<date>.json and .md (a later run on the same day
// adds the time to the name), with the machine and its load.
//
// The tensors are made once with `dainx synth` (dims 100000×50000×1000,
// seed 1) and `dainx convert` (to SPLATT .bin) and cached in -data
// (bench/scale-data/, git-ignored), each with a sidecar .json naming how it
// was made; a file whose sidecar differs is made again.
//
// For each size it measures:
//
//   - input speed: the text (.tsv) and the .bin file each read by a fresh
//     process (scalerun -read, which calls tensor.ReadFile as dainx does),
//     in MB/s of file and with that process's peak RSS; the files are in
//     the page cache after the first read, so this is parsing speed, not
//     the disk's;
//   - `dainx augment -backend cpu -layers 48,64,32 -epochs 1` on the .bin
//     file, with -output (a .bin, deleted after): peak RSS of the process
//     (rusage) and bytes per observed cell, seconds per stage from its
//     report (-report), and rates: training and TracIn cells/s (training
//     cells × epochs over the stage's seconds), sampling cells/s (new cells
//     over the sampling seconds), the retraining's cells/s;
//   - the load average before and after each run;
//   - with -roofline (the default), the machine's FMA peak and STREAM
//     bandwidth measured first (bench/internal/roofline), and each stage
//     placed against them: cells/s, modelled FLOP and bytes per cell,
//     GFLOP/s and GB/s as fractions of the two roofs, and which one bounds
//     it (account.go).
//
// First, the entity sweep (-entity-sweep, -sweep-cells): the same number
// of cells (2M) in tensors of 2.1K, 200K and 2M entities (dims
// 1000×1000×100, 100000×100000×100, 1000000×1000000×1000, made once by
// `dainx synth` as .bin and cached), run with -sweep-args too (-patience
// 1), each -sweep-repeats times (3): the median seconds per stage and
// against the first tensor, cells/s, the largest peak RSS,
// the bytes per entity of the tables and their optimiser state and the
// RSS's growth per entity, naming every stage whose seconds per cell grow
// by more than 1.5× from the fewest to the most entities. -entity-sweep ""
// skips it; -sizes "" runs only it.
//
// With -ranks (make bench-dist) each size is then run again under the MPI
// launcher with -dist mpi for each count of ranks: every rank's peak RSS
// (from the report), the seconds per stage, the slowest rank, the SHA-256
// of the augmented cells and how many of them one process did not make,
// and a fit of the largest rank's peak RSS to a + b·cells/P + c·cells.
//
// Before each size it waits (up to -wait) until MemAvailable is at least
// -need-bytes per cell, so a run does not start while another process holds
// the memory it needs. Growth is checked between consecutive sizes: each
// per-cell quantity (bytes, seconds) that changes by more than 15% is
// named in the results as not linear.
//
// Usage (from the repository root):
//
//	go build -o dainx ./cmd/dainx && go run ./bench/cmd/scalerun [flags]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dainx/dainx/bench/internal/gitrev"
	"github.com/dainx/dainx/bench/internal/roofline"
	"github.com/dainx/dainx/tensor"
)

// Results is what one run writes.
type Results struct {
	Date    string  `json:"date"`
	Commit  string  `json:"commit"`
	Command string  `json:"command"`
	Machine Machine `json:"machine"`
	// Roofline is the machine's FMA peak and memory bandwidth, measured
	// at the start of the run (-roofline), against which Run.Account
	// places each stage.
	Roofline *roofline.Machine `json:"roofline,omitempty"`
	Args     []string          `json:"augment_args"`
	Dims     []int             `json:"dims"`
	Runs     []Run             `json:"runs"`
	Linear   []string          `json:"not_linear"`
	// The entity sweep: SweepCells cells in tensors of growing entity
	// counts, run with Args and SweepArgs.
	SweepCells  int        `json:"sweep_cells,omitempty"`
	SweepArgs   []string   `json:"sweep_args,omitempty"`
	Sweep       []SweepRun `json:"entity_sweep,omitempty"`
	SweepGrowth []string   `json:"entity_sweep_growth,omitempty"`
	// The runs under MPI (-ranks): Launcher -n P for each P.
	Launcher []string `json:"mpi_launcher,omitempty"`
	// DistArgs are the flags added to Args for the runs under MPI only.
	DistArgs []string  `json:"dist_args,omitempty"`
	Dist     []DistRun `json:"dist,omitempty"`
	Notes    []string  `json:"notes"`
}

// Machine describes where the run happened.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	MemoryGiB  string `json:"memory_gib"`
	Go         string `json:"go"`
	Load       string `json:"loadavg_at_start"`
}

// Read is one input file read by a fresh process.
type Read struct {
	Format    string  `json:"format"`
	Bytes     int64   `json:"bytes"`
	Seconds   float64 `json:"seconds"`
	MBps      float64 `json:"mb_per_s"`
	MaxRSSMiB float64 `json:"max_rss_mib"`
	BPerCell  float64 `json:"rss_bytes_per_cell"`
	Error     string  `json:"error,omitempty"`
}

// Run is one size.
type Run struct {
	Cells     int                `json:"cells"`
	Reads     []Read             `json:"reads"`
	Wall      float64            `json:"wall_seconds"`
	MaxRSSMiB float64            `json:"max_rss_mib"`
	BPerCell  float64            `json:"rss_bytes_per_cell"`
	Seconds   map[string]float64 `json:"seconds"` // the report's, with read_split: the wall time before training
	NTrain    int                `json:"n_train"`
	NVal      int                `json:"n_val"`
	NAug      int                `json:"n_aug"`
	Split     string             `json:"split_fingerprint,omitempty"` // the report's: which cells are in which part
	Epochs    int                `json:"epochs_before"`
	EpochsAft int                `json:"epochs_after"`
	TrainCPS  float64            `json:"train_cells_per_s"`
	TracInCPS float64            `json:"tracin_cells_per_s"`
	SampleCPS float64            `json:"sample_cells_per_s"`
	RetrainCP float64            `json:"retrain_cells_per_s"`
	RMSE      [2]float64         `json:"rmse_before_after"`
	LoadStart string             `json:"loadavg_before"`
	LoadEnd   string             `json:"loadavg_after"`
	// Account places each stage against the machine's roofs
	// (Results.Roofline): its cells/s, modelled GFLOP/s and bytes per
	// cell, and which roof bounds it (account.go).
	Account []roofline.Stage `json:"account,omitempty"`
	Waited  float64          `json:"waited_for_memory_s,omitempty"`
	Error   string           `json:"error,omitempty"`
}

func main() {
	var (
		out      = flag.String("out", "bench/results", "results `directory`")
		data     = flag.String("data", "bench/scale-data", "cache `directory` of the synthetic tensors")
		dainx    = flag.String("dainx", "./dainx", "the dainx `binary`")
		sizes    = flag.String("sizes", "10M,30M,100M", "comma-separated `cells` of each tensor (K, M suffixes)")
		dimsF    = flag.String("dims", "100000,50000,1000", "mode `sizes` of the synthetic tensors")
		layers   = flag.String("layers", "48,64,32", "-layers of the runs")
		epochs   = flag.Int("epochs", 1, "-epochs of the runs")
		extra    = flag.String("args", "", "more `flags` for dainx augment, space-separated (e.g. \"-predictor mlp\")")
		reads    = flag.Bool("reads", true, "measure the input speed of the text and .bin files")
		need     = flag.Float64("need-bytes", 100, "wait before a size until MemAvailable holds this many `bytes` per cell")
		wait     = flag.Duration("wait", 2*time.Hour, "give up a size after waiting this long for memory")
		readOnly = flag.String("read", "", "internal: read this `file` with tensor.ReadFile and print the seconds and cells as JSON")
		sweep    = flag.String("entity-sweep", "1000,1000,100;100000,100000,100;1000000,1000000,1000", "`dims` of the entity sweep's tensors, semicolon-separated (empty: no sweep): the same cells with growing entity counts")
		sweepN   = flag.String("sweep-cells", "2M", "`cells` of each entity-sweep tensor")
		sweepA   = flag.String("sweep-args", "-patience 1", "more `flags` for the entity sweep's runs, space-separated")
		sweepR   = flag.Int("sweep-repeats", 3, "`runs` of each entity-sweep tensor; each stage's seconds are their median")
		ranksF   = flag.String("ranks", "", "after each size's run, run it again under MPI with each of these `counts` of ranks (e.g. 1,2,4; empty: none)")
		mpiexecF = flag.String("mpiexec", "", "the MPI `launcher`, space-separated (default mpiexec.mpich, else mpiexec)")
		distArgs = flag.String("dist-args", "", "more `flags` for the runs under MPI only, space-separated (e.g. \"-shard-tables on\")")
		nameF    = flag.String("name", "scale", "results file `prefix`: NAME-DATE.{json,md}")
		roof     = flag.Bool("roofline", true, "measure the FMA peak and the memory bandwidth first (about 10 s, 384 MiB) and place each stage against them")
	)
	flag.Parse()
	if *readOnly != "" {
		readChild(*readOnly)
		return
	}
	dims, err := parseInts(*dimsF)
	if err != nil {
		fatalf("-dims: %v", err)
	}
	var cells []int
	for _, s := range strings.Split(*sizes, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		n, err := parseCells(strings.TrimSpace(s))
		if err != nil {
			fatalf("-sizes: %v", err)
		}
		cells = append(cells, n)
	}
	if _, err := os.Stat(*dainx); err != nil {
		fatalf("%v (build it: go build -o dainx ./cmd/dainx)", err)
	}
	ranks, err := parseRanks(*ranksF)
	if err != nil {
		fatalf("-ranks: %v", err)
	}
	namePrefix = *nameF
	var launcher []string
	if len(ranks) > 0 {
		launcher = strings.Fields(*mpiexecF)
		if len(launcher) == 0 {
			launcher = []string{"mpiexec"}
			if _, err := exec.LookPath("mpiexec.mpich"); err == nil {
				launcher = []string{"mpiexec.mpich"}
			}
		}
		if _, err := exec.LookPath(launcher[0]); err != nil {
			fatalf("-ranks: %v (apt-get install mpich)", err)
		}
	}
	args := []string{"-backend", "cpu", "-layers", *layers, "-epochs", strconv.Itoa(*epochs)}
	args = append(args, strings.Fields(*extra)...)
	r := &Results{Date: time.Now().UTC().Format(time.RFC3339), Commit: gitrev.Head(), Command: strings.Join(append([]string{"scalerun"}, os.Args[1:]...), " "),
		Machine: machine(), Args: args, Dims: dims}
	logf("machine: %s, %d cores, %s GiB, load %s", r.Machine.CPU, r.Machine.Cores, r.Machine.MemoryGiB, r.Machine.Load)
	lay, err := parseInts(*layers)
	if err != nil {
		fatalf("-layers: %v", err)
	}
	if *roof {
		m := roofline.Measure(0, 2*time.Second, 128)
		r.Roofline = &m
		logf("roofline: FMA peak %.1f GFLOP/s (%s, %d threads; %.1f by the wall clock), bandwidth copy %.1f GB/s, triad %.1f GB/s: balance %.1f FLOP/byte",
			m.PeakGFLOPS, m.ISA, m.Threads, m.WallGFLOPS, m.CopyGBps, m.TriadGBps, m.Balance())
	}
	place := func(run *Run, d []int, bin string, opts map[string]string) {
		if r.Roofline == nil {
			return
		}
		var size int64
		if st, err := os.Stat(bin); err == nil {
			size = st.Size()
		}
		run.Account = account(run, *r.Roofline, d, lay, args, size, opts)
	}
	sweepDims, err := parseSweep(*sweep)
	if err != nil {
		fatalf("-entity-sweep: %v", err)
	}
	if len(sweepDims) > 0 {
		n, err := parseCells(*sweepN)
		if err != nil {
			fatalf("-sweep-cells: %v", err)
		}
		r.SweepCells, r.SweepArgs = n, strings.Fields(*sweepA)
		for _, d := range sweepDims {
			bin, err := ensureSweepData(*dainx, *data, d, n)
			if err != nil {
				fatalf("%v", err)
			}
			s := SweepRun{Dims: d, Run: Run{Cells: n}}
			for _, x := range d {
				s.Entities += x
			}
			s.Waited = waitForMemory(int64(*need*float64(n)), *wait)
			var runs []Run
			for i := 0; i < max(1, *sweepR); i++ {
				run := Run{Cells: n}
				s.Optimizers = augment(&run, *dainx, bin, append(append([]string(nil), args...), r.SweepArgs...))
				runs = append(runs, run)
				if run.Error != "" {
					break
				}
			}
			s.Run, s.Repeats = medianRun(runs), runs
			place(&s.Run, d, bin, s.Optimizers) // on the median seconds
			s.TableBytesPerEntity = tableBytesPerEntity(s.Optimizers, lay[0]/len(d), 20, *epochs)
			if len(r.Sweep) > 0 && s.Error == "" && r.Sweep[0].Error == "" {
				s.RSSBytesPerEntity = (s.MaxRSSMiB - r.Sweep[0].MaxRSSMiB) * (1 << 20) / float64(s.Entities-r.Sweep[0].Entities)
			}
			r.Sweep = append(r.Sweep, s)
			write(*out, r, false)
		}
		r.SweepGrowth = sweepGrowth(r.Sweep)
	}
	for _, n := range cells {
		tsv, bin, err := ensureData(*dainx, *data, dims, n)
		if err != nil {
			fatalf("%v", err)
		}
		run := Run{Cells: n}
		run.Waited = waitForMemory(int64(*need*float64(n)), *wait)
		if *reads {
			for _, f := range []struct{ format, path string }{{"tsv", tsv}, {"bin", bin}} {
				run.Reads = append(run.Reads, readFile(f.format, f.path, n))
			}
		}
		if len(ranks) == 0 {
			place(&run, dims, bin, augment(&run, *dainx, bin, args))
			r.Runs = append(r.Runs, run)
			write(*out, r, false) // keep what is measured so far
			continue
		}
		one := filepath.Join(filepath.Dir(bin), "dist-"+cellsName(n)+"-one.bin")
		opts, _ := augmentWith(&run, nil, *dainx, bin, args, one)
		place(&run, dims, bin, opts)
		r.Runs = append(r.Runs, run)
		r.Launcher = launcher
		r.DistArgs = strings.Fields(*distArgs)
		r.Dist = append(r.Dist, distRuns(launcher, *dainx, bin, n, ranks, append(append([]string(nil), args...), r.DistArgs...), one)...)
		os.Remove(one)
		write(*out, r, false)
	}
	r.Linear = linearity(r.Runs)
	r.Notes = notes
	write(*out, r, true)
}

var notes = []string{
	"Peak RSS is the dainx process's ru_maxrss; bytes per cell divide it by the observed cells (all of them: train, validation and test), so the model and the Go runtime (tens of MB) are in it too.",
	"Input speed: each file read by a fresh process with tensor.ReadFile (as dainx does), file bytes over seconds; the files are in the page cache, so it is parsing, not disk, speed.",
	"Training cells/s: training cells × epochs over the training seconds (without the TracIn passes); TracIn cells/s: training cells × checkpoints over the TracIn seconds; sampling: new cells over the sampling seconds (draws, rejection against train ∪ validation ∪ drawn); retraining: (training + new cells) × epochs over the retraining seconds, its validation pass included. read_split is the wall time before training: reading the .bin file and splitting it.",
	"The machine is shared: other processes' load (loadavg before and after each run) lowers the rates, not the memory.",
	"Account: the FMA peak is one core's by its own CPU time times the threads, so load does not lower it; the bandwidth is by the wall clock, so load does. FLOP and bytes per cell are a model of each stage's work (bench/cmd/scalerun/account.go), not counters: what they say is the order of magnitude and which roof a stage sits under, not its exact distance from it.",
}

// readChild reads path as dainx does (its format by the extension, the
// collector's target as dainx sets it) and prints {"seconds":…, "cells":…}.
func readChild(path string) {
	debug.SetGCPercent(20) // as dainx sets it
	start := time.Now()
	t, err := tensor.ReadFile(path, tensor.ReadOptions{Format: tensor.FormatOf(path), IndexBase: -1})
	if err != nil {
		fatalf("%v", err)
	}
	secs := time.Since(start).Seconds()
	json.NewEncoder(os.Stdout).Encode(map[string]float64{"seconds": secs, "cells": float64(t.NNZ())})
}

// readFile times a fresh process reading path.
func readFile(format, path string, n int) Read {
	rd := Read{Format: format}
	st, err := os.Stat(path)
	if err != nil {
		rd.Error = err.Error()
		return rd
	}
	rd.Bytes = st.Size()
	self, err := os.Executable()
	if err != nil {
		rd.Error = err.Error()
		return rd
	}
	// Once to bring the file into the page cache, then measured.
	for pass := 0; pass < 2; pass++ {
		cmd := exec.Command(self, "-read", path)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			rd.Error = fmt.Sprintf("%v: %s", err, stderr.String())
			return rd
		}
		var res struct{ Seconds, Cells float64 }
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			rd.Error = err.Error()
			return rd
		}
		rd.Seconds = res.Seconds
		rd.MBps = float64(rd.Bytes) / 1e6 / res.Seconds
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rd.MaxRSSMiB = float64(ru.Maxrss) / 1024
			rd.BPerCell = float64(ru.Maxrss) * 1024 / float64(n)
		}
	}
	logf("%d cells: read %s (%.0f MB) in %.2f s: %.0f MB/s, max RSS %.0f MiB (%.1f B/cell)", n, path, float64(rd.Bytes)/1e6, rd.Seconds, rd.MBps, rd.MaxRSSMiB, rd.BPerCell)
	return rd
}

// augment runs dainx augment on input and fills run; it returns the
// embedding optimisers the report names.
func augment(run *Run, dainx, input string, args []string) map[string]string {
	opts, _ := augmentWith(run, nil, dainx, input, args, "")
	return opts
}

// augmentWith is augment under launcher (mpiexec -n P, or nil), keeping
// the augmented cells (a .bin file) at keep when keep is not "", and
// returning the report's bytes too (nil when the run failed).
func augmentWith(run *Run, launcher []string, dainx, input string, args []string, keep string) (map[string]string, []byte) {
	dir, err := os.MkdirTemp(filepath.Dir(input), "run-")
	if err != nil {
		fatalf("%v", err)
	}
	defer os.RemoveAll(dir)
	report := filepath.Join(dir, "report.json")
	output := filepath.Join(dir, "aug.bin")
	if keep != "" {
		output = keep
	}
	full := append([]string{"augment", "-input", input, "-output", output, "-report", report}, args...)
	cmd := exec.Command(dainx, full...)
	if len(launcher) > 0 {
		cmd = exec.Command(launcher[0], append(append(append([]string(nil), launcher[1:]...), dainx), full...)...)
	}
	cmd.Stdout = io.Discard
	pipe, err := cmd.StderrPipe()
	if err != nil {
		fatalf("%v", err)
	}
	run.LoadStart = loadavg()
	logf("%d cells: %s", run.Cells, strings.Join(cmd.Args, " "))
	start := time.Now()
	var firstLine time.Duration
	var tail []string
	err = cmd.Start()
	if err == nil {
		// dainx's progress is copied to ours; the wall time until it
		// reports the split (its first line) is reading and splitting.
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			if firstLine == 0 && strings.Contains(line, " test; backend ") {
				firstLine = time.Since(start)
			}
			fmt.Fprintln(os.Stderr, "  "+line)
			tail = append(tail, line)
			if len(tail) > 5 {
				tail = tail[1:]
			}
		}
		err = cmd.Wait()
	}
	run.Wall = time.Since(start).Seconds()
	run.LoadEnd = loadavg()
	if cmd.ProcessState == nil {
		run.Error = fmt.Sprintf("dainx did not start: %v", err)
		return nil, nil
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		run.MaxRSSMiB = float64(ru.Maxrss) / 1024
		run.BPerCell = float64(ru.Maxrss) * 1024 / float64(run.Cells)
	}
	if err != nil {
		run.Error = fmt.Sprintf("dainx failed: %v: %s", err, strings.Join(tail, "\n"))
		logf("%d cells: %s", run.Cells, run.Error)
		return nil, nil
	}
	b, err := os.ReadFile(report)
	if err != nil {
		run.Error = err.Error()
		return nil, nil
	}
	var rep struct {
		NTrain  int                `json:"n_train"`
		NVal    int                `json:"n_val"`
		NAug    int                `json:"n_aug"`
		Split   string             `json:"split_fingerprint"`
		Before  float64            `json:"rmse_before"`
		After   float64            `json:"rmse_after"`
		Seconds map[string]float64 `json:"seconds"`
		Opts    map[string]string  `json:"embedding_optimizers"`
		HistB   []json.RawMessage  `json:"history_before"`
		HistA   []json.RawMessage  `json:"history_after"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		run.Error = err.Error()
		return nil, nil
	}
	run.Seconds, run.NTrain, run.NVal, run.NAug, run.RMSE, run.Split = rep.Seconds, rep.NTrain, rep.NVal, rep.NAug, [2]float64{rep.Before, rep.After}, rep.Split
	run.Seconds["read_split"] = firstLine.Seconds()
	run.Epochs, run.EpochsAft = len(rep.HistB), len(rep.HistA)
	run.setRates()
	logf("%d cells: %.0f s, max RSS %.0f MiB (%.1f B/cell); train %.0f cells/s, TracIn %.0f, sampling %.0f, retraining %.0f; load %s → %s",
		run.Cells, run.Wall, run.MaxRSSMiB, run.BPerCell, run.TrainCPS, run.TracInCPS, run.SampleCPS, run.RetrainCP, run.LoadStart, run.LoadEnd)
	return rep.Opts, b
}

// setRates sets the run's cells/s from its cell counts, epochs and
// seconds per stage.
func (run *Run) setRates() {
	rate := func(cells float64, secs float64) float64 {
		if secs <= 0 {
			return 0
		}
		return cells / secs
	}
	run.TrainCPS = rate(float64(run.NTrain*run.Epochs), run.Seconds["train"])
	run.TracInCPS = rate(float64(run.NTrain*run.Epochs), run.Seconds["influence"])
	run.SampleCPS = rate(float64(run.NAug), run.Seconds["sample"])
	run.RetrainCP = rate(float64((run.NTrain+run.NAug)*run.EpochsAft), run.Seconds["retrain"])
}

// synthRecord is the sidecar of a cached tensor: how it was made.
type synthRecord struct {
	Dims  []int  `json:"dims"`
	Cells int    `json:"cells"`
	Seed  int    `json:"seed"`
	Made  string `json:"made_by"`
}

// ensureData returns the cached .tsv and .bin of the tensor of n cells,
// making them first when they are missing or were made otherwise.
func ensureData(dainx, dir string, dims []int, n int) (tsv, bin string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	stem := filepath.Join(dir, "synth-"+cellsName(n))
	tsv, bin, side := stem+".tsv", stem+".bin", stem+".json"
	want := synthRecord{Dims: dims, Cells: n, Seed: 1, Made: fmt.Sprintf("dainx synth -dims %s -nnz %d -seed 1; dainx convert to .bin", joinInts(dims), n)}
	if b, err := os.ReadFile(side); err == nil {
		var got synthRecord
		if json.Unmarshal(b, &got) == nil && fmt.Sprint(got) == fmt.Sprint(want) && exists(tsv) && exists(bin) {
			return tsv, bin, nil
		}
	}
	os.Remove(side)
	logf("making %s and %s (once; cached in %s)", tsv, bin, dir)
	for _, c := range [][]string{
		{"synth", "-dims", joinInts(dims), "-nnz", strconv.Itoa(n), "-seed", "1", "-output", tsv},
		{"convert", "-input", tsv, "-output", bin},
	} {
		cmd := exec.Command(dainx, c...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", "", fmt.Errorf("dainx %s: %v", strings.Join(c, " "), err)
		}
	}
	b, _ := json.MarshalIndent(want, "", "  ")
	return tsv, bin, os.WriteFile(side, append(b, '\n'), 0o644)
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// waitForMemory waits until MemAvailable is at least need bytes, or for
// at most limit; it returns the seconds waited.
func waitForMemory(need int64, limit time.Duration) float64 {
	start := time.Now()
	for said := false; ; said = true {
		avail := memAvailable()
		if avail < 0 || avail >= need || time.Since(start) > limit {
			if avail >= 0 && avail < need {
				logf("still only %.1f GiB available after %s; running anyway", float64(avail)/(1<<30), limit)
			}
			return time.Since(start).Seconds()
		}
		if !said {
			logf("waiting for %.1f GiB of available memory (%.1f GiB now; other processes hold the rest)", float64(need)/(1<<30), float64(avail)/(1<<30))
		}
		time.Sleep(30 * time.Second)
	}
}

// memAvailable returns MemAvailable of /proc/meminfo in bytes, or -1.
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return -1
}

// linearity names every per-cell quantity that changes by more than 15%
// between consecutive sizes.
func linearity(runs []Run) []string {
	var out []string
	per := func(r Run) map[string]float64 {
		m := map[string]float64{"peak RSS per cell": r.BPerCell}
		for k, v := range r.Seconds {
			m["seconds per cell, "+k] = v / float64(r.Cells)
		}
		for _, rd := range r.Reads {
			m["read seconds per cell, "+rd.Format] = rd.Seconds / float64(r.Cells)
		}
		return m
	}
	for i := 1; i < len(runs); i++ {
		a, b := runs[i-1], runs[i]
		if a.Error != "" || b.Error != "" {
			continue
		}
		pa, pb := per(a), per(b)
		for _, k := range sortedKeys(pb) {
			va, vb := pa[k], pb[k]
			if va <= 0 || vb <= 0 || k == "seconds per cell, total" {
				continue
			}
			if f := vb / va; math.Abs(f-1) > 0.15 {
				out = append(out, fmt.Sprintf("%s: %.3g at %s cells, %.3g at %s (×%.2f)", k, va, cellsName(a.Cells), vb, cellsName(b.Cells), f))
			}
		}
	}
	return out
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q: want positive integers", s)
		}
		out = append(out, v)
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// parseCells reads 10M, 500K or 1000.
func parseCells(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "M"):
		mult, s = 1_000_000, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "K"):
		mult, s = 1000, strings.TrimSuffix(s, "K")
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("%q: want a number of cells such as 10M", s)
	}
	return v * mult, nil
}

// cellsName writes 10000000 as 10M.
func cellsName(n int) string {
	switch {
	case n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n%1000 == 0:
		return fmt.Sprintf("%dK", n/1000)
	}
	return strconv.Itoa(n)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(), CPU: "unknown", Load: loadavg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %f kB", &kb); err == nil {
			m.MemoryGiB = fmt.Sprintf("%.1f", kb/(1<<20))
		}
	}
	return m
}

// stem is the results' file name without extension, fixed by the first
// write of a run; namePrefix its first part (-name).
var stem string

var namePrefix = "scale"

// write saves r as JSON and Markdown; final also prints the Markdown.
func write(dir string, r *Results, final bool) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fatalf("%v", err)
	}
	if stem == "" {
		now := time.Now().UTC()
		stem = filepath.Join(dir, namePrefix+"-"+now.Format("2006-01-02"))
		if exists(stem + ".json") {
			stem = filepath.Join(dir, namePrefix+"-"+now.Format("2006-01-02T1504"))
		}
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		fatalf("%v", err)
	}
	md := markdown(r)
	if err := os.WriteFile(stem+".json", append(js, '\n'), 0o644); err != nil {
		fatalf("%v", err)
	}
	if err := os.WriteFile(stem+".md", []byte(md), 0o644); err != nil {
		fatalf("%v", err)
	}
	if final {
		os.Stdout.WriteString(md)
		logf("wrote %s.json and %s.md", stem, stem)
	}
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "scalerun: "+format+"\n", a...)
}

func fatalf(format string, a ...any) {
	logf(format, a...)
	os.Exit(1)
}
