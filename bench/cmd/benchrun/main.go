// Command benchrun is `make bench`: it measures dainx on this machine and
// writes the results under bench/results/ as JSON and Markdown, named by
// kind and date (cpu-2006-01-02.json/.md; a later run on the same day adds
// the time, cpu-2006-01-02T1504.*) with copies as latest.json and
// latest.md, and prints the Markdown.
//
// It records the machine (CPU model, cores, GPU if any), the date and the
// git commit, then measures:
//
//   - the FMA peak of the CPU (a register-only loop of independent FMAs on
//     every core) and of one core, in the widest vector ISA it has (16-wide
//     AVX-512 FMAs where it has AVX-512F, else 8-wide AVX2 ones), with the
//     AVX2 peak beside it; every "of peak" is of the widest ISA's. The GEMM
//     kernel each CPU path ran (e.g. avx512 12×32) is recorded with its
//     rows. Then the GEMM ceiling
//     (independent single-threaded 1024³ products on every core at once),
//     which bounds how fast the training step can be;
//   - every backend operation at the default MLP's shapes (batch 1024), in
//     GFLOP/s (with the fraction of the FMA peak) or GB/s, for each CPU code
//     path and the CUDA backend (fp32) when a GPU is usable;
//   - a whole training step of the default MLP and a TracIn pass;
//   - the same training step in PyTorch (bench/peers/mlp_step.py), when a
//     python3 with torch is found (-python auto: python3 on PATH, then
//     /usr/bin/python3; not finding one is reported with the paths tried),
//     as a ratio of the two at their best, then in interleaved rounds
//     (ours, the peer, ours, …; -paired) whose median ratio is less at the
//     mercy of other processes. Where OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE
//     is set, the CPU peer also runs with them removed and, if its loss
//     matches, keeps the faster environment; the results say which;
//   - with a GPU: the CUDA backend's training step and TracIn pass in each
//     GEMM precision (-precisions: fp32, tf32, 3xtf32) against PyTorch on
//     the same GPU in the same mode (3xtf32 against fp32), PyTorch at its
//     best of three variants (plain; fused Adam; fused Adam with the whole
//     step in a CUDA graph), in interleaved rounds of -gpu-steps steps with
//     a warm peer process, with TFLOP/s and the fraction of the GPU's peak;
//   - `dainx augment` end to end (-e2e-backend, cuda when a GPU was found)
//     on the demo tensor (default flags), on movielens_latest_small and on
//     movingmnist100 (reduced epochs, for peak memory; -movingmnist-full
//     for the whole default run): seconds and seconds per stage, per-epoch
//     training throughput, seconds per step and peak resident memory of the
//     child process.
//
// Usage (from the repository root, where bench/peers/mlp_step.py is found;
// a binary in a folder of the repository, e.g. .dev/benchrun, also finds it
// from the folder above its own):
//
//	go build -o dainx ./cmd/dainx && go run ./bench/cmd/benchrun [flags]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/dainx/dainx/bench"
	"github.com/dainx/dainx/bench/internal/gitrev"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/nn"
)

// Results is what one run writes. Every field added after the first GPU
// version is optional, so that -render reads older files.
type Results struct {
	Date    string    `json:"date"`
	Commit  string    `json:"commit"`
	Command string    `json:"command"`
	Machine Machine   `json:"machine"`
	Peak    Peak      `json:"peak"`
	Ops     []OpRes   `json:"ops"`
	Steps   []StepRes `json:"train_step"`
	// Python is the interpreter that ran the peers; PythonTried every
	// candidate looked at, with what it said.
	Python      string   `json:"python,omitempty"`
	PythonTried []string `json:"python_tried,omitempty"`
	Peer        *PeerRes `json:"pytorch_peer,omitempty"`
	PeerMsg     string   `json:"pytorch_peer_skipped,omitempty"`
	// PeerGPU is PyTorch on the GPU in fp32 against the CUDA backend's
	// fp32 step (only when the CUDA backend ran); PeersGPU holds the peer
	// in every mode measured, GPUModes the comparison per precision.
	PeerGPU    *PeerRes   `json:"pytorch_peer_gpu,omitempty"`
	PeerGPUMsg string     `json:"pytorch_peer_gpu_skipped,omitempty"`
	PeersGPU   []*PeerRes `json:"pytorch_peers_gpu,omitempty"`
	GPUPeak    *GPUPeak   `json:"gpu_peak,omitempty"`
	GPUModes   []GPUMode  `json:"gpu_modes,omitempty"`
	E2E        []E2ERes   `json:"end_to_end"`
	Notes      []string   `json:"notes,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	MemoryGiB  string `json:"memory_gib"`
	GPU        string `json:"gpu"`
	Go         string `json:"go"`
	Load       string `json:"loadavg_at_start"`
}

// Peak is the measured single-precision FMA peak: the machine's is one
// core's (by its own CPU time, so other processes do not lower it) times the
// cores; Wall is what all cores reached together by the wall clock during
// this run.
//
// Machine, PerCore and Wall are those of the widest vector ISA the CPU has
// (ISA; absent in files from before it was recorded: avx2); AVX2 and AVX512
// hold each ISA's own.
type Peak struct {
	Machine float64  `json:"gflops_machine"`
	PerCore float64  `json:"gflops_per_core"`
	Wall    float64  `json:"gflops_wall_all_cores"`
	ISA     string   `json:"isa,omitempty"`
	AVX2    *ISAPeak `json:"avx2,omitempty"`
	AVX512  *ISAPeak `json:"avx512,omitempty"`
	// GEMM is cpu.GEMMCeiling: independent single-threaded 1024³
	// products on every core at once, by the wall clock.
	GEMM float64 `json:"gemm_ceiling_gflops,omitempty"`
}

// ISAPeak is the FMA peak of one vector ISA's loop, as in Peak.
type ISAPeak struct {
	Machine float64 `json:"gflops_machine"`
	PerCore float64 `json:"gflops_per_core"`
	Wall    float64 `json:"gflops_wall_all_cores"`
}

// OpRes is one micro-benchmark result.
type OpRes struct {
	Backend  string  `json:"backend"`
	Op       string  `json:"op"`
	Unit     string  `json:"unit"`
	Rate     float64 `json:"rate"`
	OfPeak   float64 `json:"fraction_of_peak,omitempty"`
	Microsec float64 `json:"us_per_call"`
}

// StepRes is one training-step (and TracIn pass) result.
type StepRes struct {
	Backend string `json:"backend"`
	// Precision is the CUDA backend's GEMM precision (absent on the CPU).
	Precision string `json:"precision,omitempty"`
	// GEMMKernel is the CPU path's GEMM micro-kernel and register tile,
	// e.g. "avx512 12×32" or "avx2 6×16"; Device the backend's own
	// description (threads, kernels).
	GEMMKernel    string  `json:"gemm_kernel,omitempty"`
	Device        string  `json:"device,omitempty"`
	Layers        []int   `json:"layers"`
	MsPerStep     float64 `json:"ms_per_step"`
	CellsPerSec   float64 `json:"cells_per_s"`
	GFLOPS        float64 `json:"gflops"`
	OfPeak        float64 `json:"fraction_of_peak,omitempty"`
	TracInMcellsS float64 `json:"tracin_mcells_per_s"`
	TracInSecPerM float64 `json:"tracin_s_per_million_cells"`
}

// PeerRes is the PyTorch peer's result.
type PeerRes struct {
	Torch string `json:"torch"`
	BLAS  string `json:"blas"`
	// Env says in words which environment the peer ran in; EnvAdded and
	// EnvRemoved are that environment's changes to benchrun's own.
	Env        string   `json:"env,omitempty"`
	EnvAdded   []string `json:"env_added,omitempty"`
	EnvRemoved []string `json:"env_removed,omitempty"`
	Threads    int      `json:"threads"`
	Device     string   `json:"device,omitempty"`
	// Precision is the GPU peer's mode (fp32 or tf32); Variant the
	// fastest of Variants (ms per step of each variant that ran;
	// VariantErrors says why the others did not).
	Precision     string             `json:"precision,omitempty"`
	Variant       string             `json:"variant,omitempty"`
	Variants      map[string]float64 `json:"variants_ms_per_step,omitempty"`
	VariantErrors map[string]string  `json:"variant_errors,omitempty"`
	Steps         int                `json:"steps,omitempty"`
	Warmup        int                `json:"warmup,omitempty"`
	// Loss is the loss of the last timed step of the run kept.
	Loss        float64 `json:"loss,omitempty"`
	MsPerStep   float64 `json:"ms_per_step"`
	CellsPerSec float64 `json:"cells_per_s"`
	Ratio       float64 `json:"ratio_ours_over_theirs"`
	// Paired holds the interleaved rounds (ours, then the peer, in turn);
	// PairedMedian is the median of their ratios, PairedMin and
	// PairedMax the range.
	Paired       []PairRes `json:"paired_rounds,omitempty"`
	PairedMedian float64   `json:"paired_ratio_median,omitempty"`
	PairedMin    float64   `json:"paired_ratio_min,omitempty"`
	PairedMax    float64   `json:"paired_ratio_max,omitempty"`
}

// PairRes is one interleaved round: our training step, then the peer's,
// each timed over the same number of steps.
type PairRes struct {
	OursMs float64 `json:"ours_ms_per_step"`
	PeerMs float64 `json:"peer_ms_per_step"`
	Ratio  float64 `json:"ratio"`
}

func main() {
	var (
		out        = flag.String("out", "bench/results", "results `directory`")
		dainx      = flag.String("dainx", "./dainx", "the dainx `binary` for the end-to-end runs")
		python     = flag.String("python", "auto", "`python3` with torch for the PyTorch peer; auto: the first of python3 on PATH and /usr/bin/python3 that imports torch")
		peerScript = flag.String("peer-script", "bench/peers/mlp_step.py", "the PyTorch peer `script` (relative: to the working directory, else to the folder above the benchrun binary's)")
		micro      = flag.Bool("micro", true, "measure the peak, the ops, the training steps and the peers (false: only the end-to-end runs)")
		e2e        = flag.Bool("e2e", true, "run the end-to-end runs")
		e2eRuns    = flag.String("e2e-runs", "demo,movielens,movingmnist", "which end-to-end `runs`: a comma-separated subset of demo, movielens, movingmnist")
		e2eBackend = flag.String("e2e-backend", "", "-backend of the end-to-end runs, cpu or cuda (default: cuda when a GPU was found, else cpu)")
		e2ePrec    = flag.String("e2e-precision", "", "-precision of the end-to-end runs (fp32, tf32, 3xtf32; default: dainx's own, fp32)")
		generic    = flag.Bool("generic", true, "also benchmark the portable CPU paths (gonum, generic) besides the default one")
		cpuRows    = flag.Bool("cpu", true, "benchmark the CPU backend and the CPU PyTorch peer (false: only the GPU rows, to fit a short GPU lease)")
		mlLayers   = flag.String("movielens-layers", "", "-layers for the movielens run (empty: the default)")
		mmEpochs   = flag.Int("movingmnist-epochs", 2, "-epochs for the movingmnist100 memory run (0: skip it)")
		mmFull     = flag.Bool("movingmnist-full", false, "also run the whole default `dainx augment` on movingmnist100 (default flags)")
		minTime    = flag.Duration("mintime", 300*time.Millisecond, "time per measurement round")
		render     = flag.String("render", "", "only re-render the Markdown of a results `file` (.json) beside it, measuring nothing")
		rounds     = flag.Int("paired", 7, "interleaved rounds of our training step and the PyTorch peer's (0: none), on the CPU and on the GPU; on a shared machine their median ratio is steadier than one measurement of each")
		precisions = flag.String("precisions", "fp32,tf32,3xtf32", "GEMM `precisions` of the CUDA backend's training step and TracIn rows (the ops run in fp32 only)")
		gpuSteps   = flag.Int("gpu-steps", 300, "timed `steps` of the GPU peer's runs and of each interleaved GPU round (after 20 warm-up steps)")
		commit     = flag.String("commit", "", "the commit to record (default: git rev-parse HEAD, +dirty when the tree differs)")
	)
	flag.Parse()
	if *render != "" {
		renderFile(*render)
		return
	}
	var precs []compute.Precision
	for _, s := range strings.Split(*precisions, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := compute.ParsePrecision(s)
		if err != nil {
			fatalf("-precisions: %v", err)
		}
		precs = append(precs, p)
	}
	runs := map[string]bool{}
	for _, s := range strings.Split(*e2eRuns, ",") {
		switch s = strings.TrimSpace(s); s {
		case "":
		case "demo", "movielens", "movingmnist":
			runs[s] = true
		default:
			fatalf("-e2e-runs: %q: want demo, movielens or movingmnist", s)
		}
	}
	switch *e2eBackend {
	case "", "cpu", "cuda":
	default:
		fatalf("-e2e-backend %q: want cpu or cuda", *e2eBackend)
	}
	if *gpuSteps < 1 {
		fatalf("-gpu-steps %d: want at least 1", *gpuSteps)
	}
	r := &Results{
		Date:    time.Now().UTC().Format(time.RFC3339),
		Commit:  *commit,
		Command: commandLine(),
		Machine: machine(),
	}
	if r.Commit == "" {
		r.Commit = gitrev.Head()
	}
	gpu := !strings.HasPrefix(r.Machine.GPU, "none")
	logf("machine: %s, %d cores, GPU: %s, load %s", r.Machine.CPU, r.Machine.Cores, r.Machine.GPU, r.Machine.Load)

	if *micro {
		// The peers: the interpreter and the script, or why not.
		py := peerPython(r, *python, *peerScript)
		microBench(r, py, *cpuRows, *generic, gpu, precs, *minTime, *rounds, *gpuSteps)
	}

	if *e2e {
		be := *e2eBackend
		if be == "" {
			be = "cpu"
			if gpu {
				be = "cuda"
			}
		}
		r.E2E = endToEndRuns(*dainx, e2eOpts{backend: be, precision: *e2ePrec}, runs, *mlLayers, *mmEpochs, *mmFull)
	}
	if *micro {
		r.Notes = append(r.Notes, cpuNotes...)
	}
	if len(r.GPUModes) > 0 {
		r.Notes = append(r.Notes, gpuNotes(*gpuSteps)...)
	}
	write(*out, r)
}

// cpuNotes explain the measurements of the CPU backends.
var cpuNotes = []string{
	"Rates are the best of 3 rounds; other processes on the machine lower them (see loadavg_at_start).",
	"GFLOP/s count the dense work: 2·B·in·out per GEMM, 6·B·Σ in·out per training step (forward, dW, dx of every Linear layer). When a GEMM's left operand is at most 20% nonzeros (sampled) the CPU backend skips its exact zeros, which shows as a rate above the kernel's; at the default MLP's ~50% ReLU density it stays dense.",
	"Fractions of peak are of the machine's FMA peak (per-core peak × cores) in the widest vector ISA the CPU has (AVX-512 where present: 16-wide FMAs; else AVX2), not of the AVX2 peak shown beside it; other processes on the machine lower the rates measured by the wall clock, not the peak.",
}

// peerPython finds the python3 and the script for the peers and records
// them in r; it returns the interpreter and script, or an empty
// interpreter after recording why there is none.
func peerPython(r *Results, python, script string) peerCmd {
	py, tried, msg := findPython(python)
	r.Python, r.PythonTried = py, tried
	if msg == "" {
		s, err := findScript(script)
		if err != nil {
			py, msg = "", err.Error()
		} else {
			script = s
		}
	}
	if msg != "" {
		r.PeerMsg = msg
		logf("PyTorch peers skipped: %s", msg)
		return peerCmd{}
	}
	logf("PyTorch peers: %s %s", py, script)
	return peerCmd{python: py, script: script}
}

// microBench measures the peak, the ops, the training steps and the
// peers into r.
func microBench(r *Results, py peerCmd, cpuRows, generic, gpu bool, precs []compute.Precision, minTime time.Duration, rounds, gpuSteps int) {
	procs := runtime.GOMAXPROCS(0)
	pk := cpu.PeakGFLOPS(procs, 2*time.Second)
	r.Peak.PerCore, r.Peak.Wall, r.Peak.ISA = pk.PerCore, pk.Wall, pk.ISA
	r.Peak.Machine = pk.PerCore * float64(procs)
	isa := func(rt cpu.Rate) *ISAPeak {
		if rt.PerCore <= 0 {
			return nil
		}
		return &ISAPeak{Machine: rt.PerCore * float64(procs), PerCore: rt.PerCore, Wall: rt.Wall}
	}
	r.Peak.AVX2, r.Peak.AVX512 = isa(pk.AVX2), isa(pk.AVX512)
	logf("FMA peak (%s): %.1f GFLOP/s per core, %.1f for the machine (%d cores); %.1f reached on all cores by the wall clock",
		r.Peak.ISA, r.Peak.PerCore, r.Peak.Machine, procs, r.Peak.Wall)
	if r.Peak.AVX2 != nil && r.Peak.ISA != "avx2" {
		logf("FMA peak (avx2): %.1f GFLOP/s per core, %.1f for the machine; %.1f on all cores by the wall clock",
			r.Peak.AVX2.PerCore, r.Peak.AVX2.Machine, r.Peak.AVX2.Wall)
	}
	r.Peak.GEMM = cpu.GEMMCeiling(runtime.GOMAXPROCS(0), 1024, 3*time.Second)
	logf("GEMM ceiling: %.1f GFLOP/s (independent 1024³ products on all %d cores); the training step at that rate: %.1f ms",
		r.Peak.GEMM, runtime.GOMAXPROCS(0), stepFlops()/r.Peak.GEMM/1e6)

	type named struct {
		name string
		be   compute.Backend
		peak float64
	}
	var bes []named
	for _, k := range cpu.Kernels() {
		if !cpuRows || k != cpu.Kernels()[0] && !generic {
			continue
		}
		be, err := cpu.NewWith(cpu.Options{Kernel: k})
		if err != nil {
			fatalf("%v", err)
		}
		bes = append(bes, named{"cpu-" + k, be, r.Peak.Machine})
	}
	dev, devErr := deviceFromEnv()
	if gpu && devErr == nil {
		r.GPUPeak = gpuPeak(dev)
		if be, err := newCUDA(dev, compute.FP32); err == nil {
			bes = append(bes, named{"cuda", be, r.GPUPeak.FP32TFLOPS * 1e3})
		} else {
			logf("cuda: %v", err)
		}
	}
	for _, b := range bes {
		ops := bench.Ops(b.be)
		for _, op := range ops {
			sec := measure(op.Run, b.be, minTime)
			o := OpRes{Backend: b.name, Op: op.Name, Unit: op.Unit, Rate: op.Work / sec, Microsec: sec * 1e6}
			if op.Flops && b.peak > 0 {
				o.OfPeak = o.Rate / b.peak
			}
			r.Ops = append(r.Ops, o)
			logf("%-12s %-32s %9.2f %-10s %9.1f µs", b.name, op.Name, o.Rate, op.Unit, o.Microsec)
		}
		for _, op := range ops {
			op.Free()
		}
		s := stepAndTracIn(b.name, b.be, b.peak, minTime)
		if b.name == "cuda" {
			s.Precision = compute.FP32.String()
		}
		if c, ok := b.be.(*cpu.Backend); ok {
			s.GEMMKernel = c.GEMMKernel()
			logf("%-12s GEMM kernel %s (%s)", b.name, s.GEMMKernel, s.Device)
		}
		r.Steps = append(r.Steps, s)
		b.be.Close()
	}

	if py.python == "" || !cpuRows {
		// peerPython said why in r.PeerMsg, or -cpu=false.
	} else if p, msg := cpuPeer(py); p != nil {
		r.Peer = p
		if len(r.Steps) > 0 {
			r.Peer.Ratio = r.Steps[0].CellsPerSec / r.Peer.CellsPerSec
		}
		logf("PyTorch peer (%s, %s): %.1f ms per step; ours/theirs %.2f×", r.Peer.Torch, r.Peer.BLAS, r.Peer.MsPerStep, r.Peer.Ratio)
		paired(r.Peer, py, rounds)
	} else {
		r.PeerMsg = msg
		logf("PyTorch peer skipped: %s", r.PeerMsg)
	}
	if cudaStep(r.Steps) != nil {
		gpuBench(r, py, dev, precs, minTime, rounds, gpuSteps)
	}
}

// stepAndTracIn measures the default training step and a TracIn pass on
// be; peak (GFLOP/s, 0: unknown) gives the fraction of peak.
func stepAndTracIn(name string, be compute.Backend, peak float64, minTime time.Duration) StepRes {
	layers := nn.DefaultLayers(3)
	ts, err := bench.NewTrainStep(be, layers)
	if err != nil {
		fatalf("%v", err)
	}
	defer ts.Free()
	sec := measure(ts.Run, be, 3*minTime)
	tp := bench.NewTracInPass(ts)
	defer tp.Free()
	tsec := measure(tp.Run, be, minTime)
	s := StepRes{Backend: name, Device: be.Device(), Layers: layers, MsPerStep: sec * 1e3, CellsPerSec: bench.Batch / sec,
		GFLOPS: ts.Flops / sec / 1e9, TracInMcellsS: bench.Batch / tsec / 1e6, TracInSecPerM: tsec * 1e6 / bench.Batch}
	if peak > 0 {
		s.OfPeak = s.GFLOPS / peak
	}
	logf("%-12s train step %.3g ms (%.0f cells/s, %.1f GFLOP/s); TracIn pass %.3g s per million cells",
		name, s.MsPerStep, s.CellsPerSec, s.GFLOPS, s.TracInSecPerM)
	return s
}

// commandLine is the command as run: `make bench (go run …)` under go
// run, else the binary's path and flags.
func commandLine() string {
	args := strings.Join(os.Args[1:], " ")
	if strings.Contains(os.Args[0], "go-build") {
		return "make bench (go run ./bench/cmd/benchrun " + args + ")"
	}
	return strings.TrimSpace(os.Args[0] + " " + args)
}

// measure returns the best time per call of run over 3 rounds of at least
// minTime each, after one warm-up call.
func measure(run func(), be compute.Backend, minTime time.Duration) float64 {
	run()
	be.Sync()
	best := 0.0
	for round := 0; round < 3; round++ {
		n := 0
		start := time.Now()
		for n == 0 || time.Since(start) < minTime {
			run()
			n++
		}
		be.Sync()
		s := time.Since(start).Seconds() / float64(n)
		if round == 0 || s < best {
			best = s
		}
	}
	return best
}

func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(), CPU: "unknown", GPU: "none"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %f kB", &kb); err == nil {
			m.MemoryGiB = fmt.Sprintf("%.1f", kb/(1<<20))
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.Load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	if be, err := newCUDAFromEnv(); err == nil {
		m.GPU = be.Device()
		be.Close()
	} else {
		m.GPU = "none (" + err.Error() + ")"
	}
	return m
}

func write(dir string, r *Results) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fatalf("%v", err)
	}
	kind := "cpu"
	if !strings.HasPrefix(r.Machine.GPU, "none") {
		kind = "gpu"
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		fatalf("%v", err)
	}
	js = append(js, '\n')
	md := []byte(markdown(r))
	// A second run on the same day keeps the first: it is named by the
	// minute as well.
	now := time.Now().UTC()
	stem := filepath.Join(dir, kind+"-"+now.Format("2006-01-02"))
	if _, err := os.Stat(stem + ".json"); err == nil {
		stem = filepath.Join(dir, kind+"-"+now.Format("2006-01-02T1504"))
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{stem + ".json", js}, {stem + ".md", md}, {filepath.Join(dir, "latest.json"), js}, {filepath.Join(dir, "latest.md"), md}} {
		if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
			fatalf("%v", err)
		}
	}
	os.Stdout.Write(md)
	logf("wrote %s.json, %s.md and latest.{json,md}", stem, stem)
}

// renderFile rewrites the Markdown beside the results file path (.json)
// from it, as the current benchrun would have written it.
func renderFile(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		fatalf("%v", err)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		fatalf("%s: %v", path, err)
	}
	md := strings.TrimSuffix(path, ".json") + ".md"
	if err := os.WriteFile(md, []byte(markdown(&r)), 0o644); err != nil {
		fatalf("%v", err)
	}
	logf("wrote %s", md)
}

// cudaStep returns the CUDA backend's fp32 training-step result, or nil.
func cudaStep(steps []StepRes) *StepRes {
	for i := range steps {
		if steps[i].Backend == "cuda" {
			return &steps[i]
		}
	}
	return nil
}

// stepFlops is the dense FLOP count of one default training step.
func stepFlops() float64 {
	w := []int{150, 1024, 1024, 128, 1}
	f := 0.0
	for l := 1; l < len(w); l++ {
		f += 6 * float64(bench.Batch*w[l-1]*w[l])
	}
	return f
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "benchrun: "+format+"\n", a...)
}

func fatalf(format string, a ...any) {
	logf(format, a...)
	os.Exit(1)
}
