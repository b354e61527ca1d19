// Command benchrun is `make bench`: it measures dainx on this machine and
// writes the results under bench/results/ as JSON and Markdown, named by
// kind and date (cpu-2006-01-02.json/.md; a later run on the same day adds
// the time, cpu-2006-01-02T1504.*) with copies as latest.json and
// latest.md, and prints the Markdown.
//
// It records the machine (CPU model, cores, GPU if any), the date and the
// git commit, then measures:
//
//   - the FMA peak of the CPU (a register-only loop of independent 8-wide
//     FMAs on every core) and of one core, and the GEMM ceiling
//     (independent single-threaded 1024³ products on every core at once),
//     which bounds how fast the training step can be;
//   - every backend operation at the default MLP's shapes (batch 1024), in
//     GFLOP/s (with the fraction of the FMA peak) or GB/s, for each CPU code
//     path and the CUDA backend when a GPU is usable;
//   - a whole training step of the default MLP and a TracIn pass;
//   - the same training step in PyTorch (bench/peers/mlp_step.py), when
//     python3 has torch, as a ratio of the two at their best, then in
//     interleaved rounds (ours, the peer, ours, …; -paired) whose median
//     ratio is less at the mercy of other processes; with a GPU also
//     PyTorch on that GPU against the CUDA backend;
//   - `dainx augment` end to end on the demo tensor (default flags), on
//     movielens_latest_small and on movingmnist100 (reduced epochs, for
//     peak memory): seconds, per-epoch training throughput, seconds per step
//     and peak resident memory of the child process.
//
// Usage (from the repository root):
//
//	go build -o dainx ./cmd/dainx && go run ./bench/cmd/benchrun [flags]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/dainx/dainx/bench"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/cuda"
	"github.com/dainx/dainx/internal/realdata"
	"github.com/dainx/dainx/nn"
)

// Results is what one run writes.
type Results struct {
	Date    string    `json:"date"`
	Commit  string    `json:"commit"`
	Command string    `json:"command"`
	Machine Machine   `json:"machine"`
	Peak    Peak      `json:"peak"`
	Ops     []OpRes   `json:"ops"`
	Steps   []StepRes `json:"train_step"`
	Peer    *PeerRes  `json:"pytorch_peer,omitempty"`
	PeerMsg string    `json:"pytorch_peer_skipped,omitempty"`
	// PeerGPU is PyTorch on the GPU against the CUDA backend (only when
	// the CUDA backend ran).
	PeerGPU    *PeerRes `json:"pytorch_peer_gpu,omitempty"`
	PeerGPUMsg string   `json:"pytorch_peer_gpu_skipped,omitempty"`
	E2E        []E2ERes `json:"end_to_end"`
	Notes      []string `json:"notes,omitempty"`
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
type Peak struct {
	Machine float64 `json:"gflops_machine"`
	PerCore float64 `json:"gflops_per_core"`
	Wall    float64 `json:"gflops_wall_all_cores"`
	// GEMM is cpu.GEMMCeiling: independent single-threaded 1024³
	// products on every core at once, by the wall clock.
	GEMM float64 `json:"gemm_ceiling_gflops,omitempty"`
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
	Backend       string  `json:"backend"`
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
	Torch       string  `json:"torch"`
	BLAS        string  `json:"blas"`
	Env         string  `json:"env,omitempty"`
	Threads     int     `json:"threads"`
	Device      string  `json:"device,omitempty"`
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

// E2ERes is one `dainx augment` run.
type E2ERes struct {
	Name         string   `json:"name"`
	Args         []string `json:"args"`
	Seconds      float64  `json:"seconds"`
	Wall         float64  `json:"wall_seconds"`
	NTrain       int      `json:"n_train"`
	EpochsBefore int      `json:"epochs_before"`
	EpochSec     float64  `json:"mean_epoch_seconds"`
	CellsPerSec  float64  `json:"train_cells_per_s"`
	SecPerStep   float64  `json:"seconds_per_step"`
	MaxRSSMiB    float64  `json:"max_rss_mib"`
	RMSEBefore   float64  `json:"rmse_before"`
	RMSEAfter    float64  `json:"rmse_after"`
	Parts        any      `json:"seconds_by_step"`
	Skipped      string   `json:"skipped,omitempty"`
}

func main() {
	var (
		out      = flag.String("out", "bench/results", "results `directory`")
		dainx    = flag.String("dainx", "./dainx", "the dainx `binary` for the end-to-end runs")
		python   = flag.String("python", "/usr/bin/python3", "`python3` with torch for the PyTorch peer")
		e2e      = flag.Bool("e2e", true, "run the end-to-end runs")
		generic  = flag.Bool("generic", true, "also benchmark the portable CPU paths (gonum, generic) besides the default one")
		mlLayers = flag.String("movielens-layers", "", "-layers for the movielens run (empty: the default)")
		mmEpochs = flag.Int("movingmnist-epochs", 2, "-epochs for the movingmnist100 memory run (0: skip it)")
		minTime  = flag.Duration("mintime", 300*time.Millisecond, "time per measurement round")
		render   = flag.String("render", "", "only re-render the Markdown of a results `file` (.json) beside it, measuring nothing")
		rounds   = flag.Int("paired", 7, "interleaved rounds of our training step and the PyTorch peer's (0: none); on a shared machine their median ratio is steadier than one measurement of each")
	)
	flag.Parse()
	if *render != "" {
		renderFile(*render)
		return
	}
	r := &Results{
		Date:    time.Now().UTC().Format(time.RFC3339),
		Commit:  gitCommit(),
		Command: "make bench (go run ./bench/cmd/benchrun " + strings.Join(os.Args[1:], " ") + ")",
		Machine: machine(),
	}
	logf("machine: %s, %d cores, GPU: %s, load %s", r.Machine.CPU, r.Machine.Cores, r.Machine.GPU, r.Machine.Load)

	pk := cpu.PeakGFLOPS(runtime.GOMAXPROCS(0), 2*time.Second)
	r.Peak.PerCore, r.Peak.Wall = pk.PerCore, pk.Wall
	r.Peak.Machine = pk.PerCore * float64(runtime.GOMAXPROCS(0))
	logf("FMA peak: %.1f GFLOP/s per core, %.1f for the machine (%d cores); %.1f reached on all cores by the wall clock",
		r.Peak.PerCore, r.Peak.Machine, runtime.GOMAXPROCS(0), r.Peak.Wall)
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
		if k != cpu.Kernels()[0] && !*generic {
			continue
		}
		be, err := cpu.NewWith(cpu.Options{Kernel: k})
		if err != nil {
			fatalf("%v", err)
		}
		bes = append(bes, named{"cpu-" + k, be, r.Peak.Machine})
	}
	if gpu, err := cuda.New(); err == nil {
		bes = append(bes, named{"cuda", gpu, 0})
	}
	for _, b := range bes {
		ops := bench.Ops(b.be)
		for _, op := range ops {
			sec := measure(op.Run, b.be, *minTime)
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
		layers := nn.DefaultLayers(3)
		ts, err := bench.NewTrainStep(b.be, layers)
		if err != nil {
			fatalf("%v", err)
		}
		sec := measure(ts.Run, b.be, 3*(*minTime))
		tp := bench.NewTracInPass(ts)
		tsec := measure(tp.Run, b.be, *minTime)
		s := StepRes{Backend: b.name, Layers: layers, MsPerStep: sec * 1e3, CellsPerSec: bench.Batch / sec,
			GFLOPS: ts.Flops / sec / 1e9, TracInMcellsS: bench.Batch / tsec / 1e6, TracInSecPerM: tsec * 1e6 / bench.Batch}
		if b.peak > 0 {
			s.OfPeak = s.GFLOPS / b.peak
		}
		r.Steps = append(r.Steps, s)
		logf("%-12s train step %.1f ms (%.0f cells/s, %.1f GFLOP/s); TracIn pass %.2f s per million cells",
			b.name, s.MsPerStep, s.CellsPerSec, s.GFLOPS, s.TracInSecPerM)
		tp.Free()
		ts.Free()
		b.be.Close()
	}

	r.Peer, r.PeerMsg = peer(*python, "cpu")
	if r.Peer != nil && len(r.Steps) > 0 {
		r.Peer.Ratio = r.Steps[0].CellsPerSec / r.Peer.CellsPerSec
		logf("PyTorch peer (%s, %s): %.1f ms per step; ours/theirs %.2f×", r.Peer.Torch, r.Peer.BLAS, r.Peer.MsPerStep, r.Peer.Ratio)
		paired(r.Peer, *python, *rounds)
	} else {
		logf("PyTorch peer skipped: %s", r.PeerMsg)
	}
	if gs := cudaStep(r.Steps); gs != nil {
		r.PeerGPU, r.PeerGPUMsg = peer(*python, "cuda")
		if r.PeerGPU != nil {
			r.PeerGPU.Ratio = gs.CellsPerSec / r.PeerGPU.CellsPerSec
			logf("PyTorch peer on %s: %.3f ms per step; cuda/theirs %.2f×", r.PeerGPU.Device, r.PeerGPU.MsPerStep, r.PeerGPU.Ratio)
		} else {
			logf("PyTorch GPU peer skipped: %s", r.PeerGPUMsg)
		}
	}

	if *e2e {
		r.E2E = append(r.E2E, endToEnd(*dainx, "demo (synthetic_10K, default flags)", nil))
		data := realdata.Dir()
		var ml []string
		if *mlLayers != "" {
			ml = []string{"-layers", *mlLayers}
		}
		r.E2E = append(r.E2E, endToEndFile(*dainx, "movielens_latest_small", filepath.Join(data, "movielens_latest_small.tsv.gz"), ml))
		if *mmEpochs > 0 {
			r.E2E = append(r.E2E, endToEndFile(*dainx, fmt.Sprintf("movingmnist100 (-epochs %d, memory)", *mmEpochs),
				filepath.Join(data, "movingmnist100.tsv.gz"), []string{"-epochs", fmt.Sprint(*mmEpochs)}))
		}
	}
	r.Notes = append(r.Notes, "Rates are the best of 3 rounds; other processes on the machine lower them (see loadavg_at_start).",
		"GFLOP/s count the dense work: 2·B·in·out per GEMM, 6·B·Σ in·out per training step (forward, dW, dx of every Linear layer). When a GEMM's left operand is at most 20% nonzeros (sampled) the CPU backend skips its exact zeros, which shows as a rate above the kernel's; at the default MLP's ~50% ReLU density it stays dense.",
		"Fractions of peak are of the machine's FMA peak (per-core peak × cores); other processes on the machine lower the rates measured by the wall clock, not the peak.")
	write(*out, r)
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
	if be, err := cuda.New(); err == nil {
		m.GPU = be.Device()
		be.Close()
	} else {
		m.GPU = "none (" + err.Error() + ")"
	}
	return m
}

func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += "+dirty"
	}
	return c
}

// peer runs the PyTorch training step, or says why not. It runs it with
// the default OpenMP settings and with OMP_WAIT_POLICY=PASSIVE (spinning
// OpenMP and BLAS threads starve each other on two busy cores) and keeps
// the faster, so the ratio is against the peer at its best.
func peer(python, device string) (*PeerRes, string) {
	if err := exec.Command(python, "-c", "import torch").Run(); err != nil {
		return nil, fmt.Sprintf("%s cannot import torch (%v); install Debian's python3-torch (and libopenblas0-pthread for an optimised BLAS)", python, err)
	}
	var best *PeerRes
	var msgs []string
	envs, steps := []string{"", "OMP_WAIT_POLICY=PASSIVE"}, 30
	if device == "cuda" {
		envs, steps = []string{""}, 300
	}
	for _, env := range envs {
		p, err := runPeer(python, env, device, steps)
		if err != nil {
			msgs = append(msgs, err.Error())
			continue
		}
		logf("PyTorch peer with %q: %.1f ms per step", env, p.MsPerStep)
		if best == nil || p.MsPerStep < best.MsPerStep {
			blas := "unknown"
			if t, err := filepath.EvalSymlinks("/usr/lib/x86_64-linux-gnu/libblas.so.3"); err == nil {
				blas = t
			}
			best = &PeerRes{Torch: p.Torch, BLAS: blas, Env: env, Threads: p.Threads, Device: p.Device, MsPerStep: p.MsPerStep, CellsPerSec: p.CellsPerS}
		}
	}
	if best == nil {
		return nil, strings.Join(msgs, "; ")
	}
	return best, ""
}

// paired runs rounds interleaved rounds of our training step (the default
// CPU path) and the peer's (with the environment peer chose), 20 steps
// each after a warm-up, and records them with the median and range of the
// ratios in p.
func paired(p *PeerRes, python string, rounds int) {
	if rounds <= 0 {
		return
	}
	be := cpu.New()
	defer be.Close()
	ts, err := bench.NewTrainStep(be, nn.DefaultLayers(3))
	if err != nil {
		fatalf("%v", err)
	}
	defer ts.Free()
	const steps = 20
	for i := 0; i < 5; i++ {
		ts.Run()
	}
	var ratios []float64
	for i := 0; i < rounds; i++ {
		start := time.Now()
		for j := 0; j < steps; j++ {
			ts.Run()
		}
		be.Sync()
		ours := time.Since(start).Seconds() * 1e3 / steps
		theirs, err := runPeer(python, p.Env, "cpu", steps)
		if err != nil {
			logf("paired round %d: %v", i+1, err)
			continue
		}
		pr := PairRes{OursMs: ours, PeerMs: theirs.MsPerStep, Ratio: theirs.MsPerStep / ours}
		p.Paired = append(p.Paired, pr)
		ratios = append(ratios, pr.Ratio)
		logf("paired round %d: ours %.1f ms, PyTorch %.1f ms per step: %.2f×", i+1, pr.OursMs, pr.PeerMs, pr.Ratio)
	}
	if len(ratios) == 0 {
		return
	}
	p.PairedMedian = median(ratios)
	p.PairedMin, p.PairedMax = slices.Min(ratios), slices.Max(ratios)
}

// median returns the median of v (not empty), leaving v as it was.
func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	return (s[(n-1)/2] + s[n/2]) / 2
}

// peerOut is what bench/peers/mlp_step.py prints.
type peerOut struct {
	Torch     string  `json:"torch"`
	Threads   int     `json:"threads"`
	Device    string  `json:"device"`
	MsPerStep float64 `json:"ms_per_step"`
	CellsPerS float64 `json:"cells_per_s"`
}

// runPeer runs bench/peers/mlp_step.py once for steps timed steps, with env
// (NAME=value, or empty) added to the environment.
func runPeer(python, env, device string, steps int) (*peerOut, error) {
	cmd := exec.Command(python, "bench/peers/mlp_step.py", "--threads", fmt.Sprint(runtime.GOMAXPROCS(0)), "--steps", fmt.Sprint(steps), "--device", device)
	cmd.Stderr = os.Stderr
	cmd.Env = os.Environ()
	if env != "" {
		cmd.Env = append(cmd.Env, env)
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("bench/peers/mlp_step.py (%s) failed: %v", env, err)
	}
	var p peerOut
	if err := json.Unmarshal(out, &p); err != nil {
		return nil, fmt.Errorf("bench/peers/mlp_step.py printed %q: %v", out, err)
	}
	return &p, nil
}

func endToEndFile(dainx, name, path string, args []string) E2ERes {
	if _, err := os.Stat(path); err != nil {
		logf("%s: skipped: %v", name, err)
		return E2ERes{Name: name, Skipped: fmt.Sprintf("%v (set DAINX_DATA to the directory holding it)", err)}
	}
	return endToEnd(dainx, name, append([]string{"-input", path}, args...))
}

// endToEnd runs `dainx augment` with args and reads its report.
func endToEnd(dainx, name string, args []string) E2ERes {
	res := E2ERes{Name: name, Args: args}
	dir, err := os.MkdirTemp("", "benchrun")
	if err != nil {
		fatalf("%v", err)
	}
	defer os.RemoveAll(dir)
	report := filepath.Join(dir, "report.json")
	full := append([]string{"augment", "-backend", "cpu", "-quiet", "-report", report}, args...)
	cmd := exec.Command(dainx, full...)
	cmd.Stdout = io.Discard
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	logf("%s: %s %s", name, dainx, strings.Join(full, " "))
	start := time.Now()
	err = cmd.Run()
	res.Wall = time.Since(start).Seconds()
	if err != nil {
		res.Skipped = fmt.Sprintf("dainx failed: %v: %s", err, stderr.String())
		logf("%s: %s", name, res.Skipped)
		return res
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.MaxRSSMiB = float64(ru.Maxrss) / 1024 // kilobytes on Linux
	}
	b, err := os.ReadFile(report)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	var rep struct {
		NTrain   int                `json:"n_train"`
		Batch    int                `json:"batch"`
		Before   float64            `json:"rmse_before"`
		After    float64            `json:"rmse_after"`
		Seconds  map[string]float64 `json:"seconds"`
		EpochLog []struct {
			Seconds float64 `json:"seconds"`
		} `json:"history_before"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		res.Skipped = err.Error()
		return res
	}
	res.Seconds, res.NTrain, res.RMSEBefore, res.RMSEAfter, res.Parts = rep.Seconds["total"], rep.NTrain, rep.Before, rep.After, rep.Seconds
	res.EpochsBefore = len(rep.EpochLog)
	if len(rep.EpochLog) > 0 {
		// The median epoch: the first pays for warm-up.
		secs := make([]float64, len(rep.EpochLog))
		for i, e := range rep.EpochLog {
			secs[i] = e.Seconds
		}
		sort.Float64s(secs)
		res.EpochSec = secs[len(secs)/2]
		res.CellsPerSec = float64(rep.NTrain) / res.EpochSec
		steps := (rep.NTrain + rep.Batch - 1) / max(rep.Batch, 1)
		res.SecPerStep = res.EpochSec / float64(steps)
	}
	logf("%s: %.1f s, epoch %.2f s (%.0f cells/s, %.1f ms per step incl. validation), max RSS %.0f MiB",
		name, res.Seconds, res.EpochSec, res.CellsPerSec, res.SecPerStep*1e3, res.MaxRSSMiB)
	return res
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

func markdown(r *Results) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# dainx benchmarks\n\n")
	p("%s, commit `%s`, `%s`\n\n", r.Date, r.Commit, r.Command)
	p("- CPU: %s, %d cores (GOMAXPROCS %d), %s GiB; load average at start %s\n", r.Machine.CPU, r.Machine.Cores, r.Machine.GOMAXPROCS, r.Machine.MemoryGiB, r.Machine.Load)
	p("- GPU: %s\n- %s\n", r.Machine.GPU, r.Machine.Go)
	p("- FMA peak (fp32, measured with a register-only FMA loop): **%.1f GFLOP/s** for the machine (%.1f per core by thread CPU time × %d); %.1f reached on all cores by the wall clock during this run\n",
		r.Peak.Machine, r.Peak.PerCore, r.Machine.GOMAXPROCS, r.Peak.Wall)
	if r.Peak.GEMM > 0 {
		p("- GEMM ceiling (independent single-threaded 1024³ products on all %d cores at once, by the wall clock): **%.1f GFLOP/s**, %s of the FMA peak; the default training step's %.2f GFLOP at that rate would take %.1f ms\n",
			r.Machine.GOMAXPROCS, r.Peak.GEMM, pct(r.Peak.GEMM/r.Peak.Machine), stepFlops()/1e9, stepFlops()/r.Peak.GEMM/1e6)
	}
	p("\n")
	p("## Training step, default MLP (150, 1024, 1024, 128, 1), batch 1024\n\n")
	p("| backend | ms/step | cells/s | GFLOP/s (dense-equivalent) | of peak | TracIn s per 1M cells |\n|---|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Steps {
		p("| %s | %s | %.0f | %.1f | %s | %.2f |\n", s.Backend, msFmt(s.MsPerStep), s.CellsPerSec, s.GFLOPS, pct(s.OfPeak), s.TracInSecPerM)
	}
	if r.Peer != nil {
		p("| PyTorch %s (%d threads, BLAS %s %s) | %.1f | %.0f | %.1f | %s | |\n", r.Peer.Torch, r.Peer.Threads, filepath.Base(filepath.Dir(r.Peer.BLAS)), r.Peer.Env,
			r.Peer.MsPerStep, r.Peer.CellsPerSec, stepFlops()/r.Peer.MsPerStep/1e6, pct(stepFlops()/r.Peer.MsPerStep/1e6/r.Peak.Machine))
	}
	if r.PeerGPU != nil {
		p("| PyTorch %s on %s | %s | %.0f | %.1f | | |\n", r.PeerGPU.Torch, r.PeerGPU.Device,
			msFmt(r.PeerGPU.MsPerStep), r.PeerGPU.CellsPerSec, stepFlops()/r.PeerGPU.MsPerStep/1e6)
	}
	if r.Peer != nil {
		if len(r.Peer.Paired) > 0 {
			p("\n**ours / PyTorch: %.2f×**, the median of %d interleaved rounds (ours, then the peer, 20 steps each; range %.2f–%.2f×). Measured apart, each at its best of several rounds in the table above: %.2f× (a burst of load during one of the two measurements moves this one most).\n\n",
				r.Peer.PairedMedian, len(r.Peer.Paired), r.Peer.PairedMin, r.Peer.PairedMax, r.Peer.Ratio)
			p("| round | ours ms/step | PyTorch ms/step | ratio |\n|---:|---:|---:|---:|\n")
			var peerMs []float64
			for i, q := range r.Peer.Paired {
				p("| %d | %.1f | %.1f | %.2f× |\n", i+1, q.OursMs, q.PeerMs, q.Ratio)
				peerMs = append(peerMs, q.PeerMs)
			}
			if r.Peak.GEMM > 0 {
				med, fastest := median(peerMs), slices.Min(peerMs)
				floor := stepFlops() / r.Peak.GEMM / 1e6
				p("\nBound: at the GEMM ceiling (our kernel with every core busy) the step's arithmetic alone takes %.1f ms, about 1/%.2f of the peer's median round (%.1f ms) and 1/%.2f of its fastest (%.1f ms); a larger ratio needs a faster GEMM than this machine gave here, or less arithmetic.\n",
					floor, med/floor, med, fastest/floor, fastest)
			}
		} else {
			p("\n**ours / PyTorch: %.2f×** (cells/s of the default CPU path over the peer's, each at its best of several rounds)\n", r.Peer.Ratio)
		}
	} else {
		p("\nPyTorch peer skipped: %s\n", r.PeerMsg)
	}
	if r.PeerGPU != nil {
		p("\n**cuda / PyTorch on the GPU: %.2f×**\n", r.PeerGPU.Ratio)
	} else if r.PeerGPUMsg != "" {
		p("\nPyTorch GPU peer skipped: %s\n", r.PeerGPUMsg)
	}
	p("\n")
	p("## End to end (`dainx augment -backend cpu`)\n\n")
	p("| run | seconds | epochs (Θ) | epoch s | train cells/s | s/step | max RSS MiB | RMSE before → after |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, e := range r.E2E {
		if e.Skipped != "" {
			p("| %s | skipped: %s | | | | | | |\n", e.Name, strings.ReplaceAll(strings.TrimSpace(e.Skipped), "\n", " "))
			continue
		}
		p("| %s `%s` | %.1f | %d | %.2f | %.0f | %.3f | %.0f | %.4f → %.4f |\n", e.Name, strings.Join(e.Args, " "), e.Seconds, e.EpochsBefore, e.EpochSec, e.CellsPerSec, e.SecPerStep, e.MaxRSSMiB, e.RMSEBefore, e.RMSEAfter)
	}
	p("\n## Operations at the default MLP's shapes, batch 1024\n\n")
	p("| backend | op | rate | unit | of peak | µs/call |\n|---|---|---:|---|---:|---:|\n")
	for _, o := range r.Ops {
		p("| %s | %s | %.2f | %s | %s | %.1f |\n", o.Backend, o.Op, o.Rate, o.Unit, pct(o.OfPeak), o.Microsec)
	}
	if len(r.Notes) > 0 {
		p("\n")
		for _, n := range r.Notes {
			p("- %s\n", n)
		}
	}
	return b.String()
}

// msFmt formats milliseconds with three significant digits below 10 ms.
func msFmt(ms float64) string {
	if ms < 10 {
		return fmt.Sprintf("%.3g", ms)
	}
	return fmt.Sprintf("%.1f", ms)
}

// cudaStep returns the CUDA backend's training-step result, or nil.
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

func pct(f float64) string {
	if f <= 0 {
		return ""
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "benchrun: "+format+"\n", a...)
}

func fatalf(format string, a ...any) {
	logf(format, a...)
	os.Exit(1)
}
