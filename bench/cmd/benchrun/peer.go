package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/dainx/dainx/bench"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/nn"
)

// peerCmd is how to run the peer: the interpreter and the script (an empty
// python: no peer).
type peerCmd struct {
	python, script string
}

// findPython returns the interpreter that runs the peers: flag itself,
// or with "auto" the first of python3 on PATH and /usr/bin/python3 that
// imports torch; tried lists every candidate with what it said. Without
// one, msg says so, naming them.
func findPython(flag string) (python string, tried []string, msg string) {
	var cands []string
	if flag == "auto" || flag == "" {
		if p, err := exec.LookPath("python3"); err == nil {
			cands = append(cands, p)
		} else {
			tried = append(tried, "python3 on PATH (none)")
		}
		if !slices.Contains(cands, "/usr/bin/python3") {
			cands = append(cands, "/usr/bin/python3")
		}
	} else {
		cands = []string{flag}
	}
	for _, c := range cands {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(c, "-c", "import torch; print(torch.__version__)")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			why := lastLine(stderr.String())
			if why == "" {
				why = err.Error()
			}
			tried = append(tried, fmt.Sprintf("%s (%s)", c, why))
			continue
		}
		tried = append(tried, fmt.Sprintf("%s (torch %s)", c, lastLine(stdout.String())))
		return c, tried, ""
	}
	return "", tried, fmt.Sprintf("no python3 that imports torch: tried %s; install PyTorch (Debian: python3-torch, with libopenblas0-pthread for an optimised BLAS) or name an interpreter with -python",
		strings.Join(tried, "; "))
}

// findScript returns the peer script: path itself when it exists (relative
// paths from the working directory, normally the repository root), else,
// for a relative path, the same path from the folder above the benchrun
// binary's (.dev/benchrun finds bench/peers/mlp_step.py of its
// repository).
func findScript(path string) (string, error) {
	tried := []string{path}
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if !filepath.IsAbs(path) {
		if exe, err := os.Executable(); err == nil {
			p := filepath.Join(filepath.Dir(filepath.Dir(exe)), path)
			tried = append(tried, p)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	wd, _ := os.Getwd()
	return "", fmt.Errorf("no PyTorch peer script: tried %s (working directory %s); run from the repository root or pass -peer-script", strings.Join(tried, ", "), wd)
}

// lastLine returns the last non-empty line of s, trimmed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// peerEnv is an environment for the peer: benchrun's own with Add
// (NAME=value) added and the variables named in Unset removed.
type peerEnv struct {
	Add, Unset []string
}

func (e peerEnv) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(e.Unset, name) {
			env = append(env, kv)
		}
	}
	return append(env, e.Add...)
}

// blasVars are the OpenBLAS variables some machines set for old OpenBLAS
// builds; they can slow the peer (issue 16).
var blasVars = []string{"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"}

// lossTol is the relative difference up to which two runs of the peer
// count as computing the same thing.
const lossTol = 1e-3

func relDiff(a, b float64) float64 {
	return math.Abs(a-b) / max(math.Abs(a), math.Abs(b), 1e-30)
}

// cpuPeer runs the PyTorch training step on the CPU, or says why not. It
// runs it with the default OpenMP settings and with
// OMP_WAIT_POLICY=PASSIVE (spinning OpenMP and BLAS threads starve each
// other on two busy cores) and keeps the faster, so the ratio is against
// the peer at its best. Where OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE is
// set, each runs also with them removed; if the losses of the runs with and
// without them agree (relative difference ≤ 1e-3) the faster of all is
// kept, else only the runs with them as set count, and Env says which and
// why.
func cpuPeer(py peerCmd) (*PeerRes, string) {
	var set []string
	var were []string
	for _, v := range blasVars {
		if val, ok := os.LookupEnv(v); ok {
			set = append(set, v)
			were = append(were, val)
		}
	}
	type run struct {
		env  peerEnv
		omp  string
		out  *peerOut
		bare bool // the BLAS variables removed
	}
	var runs []run
	var msgs []string
	const steps = 30
	for _, omp := range []string{"", "OMP_WAIT_POLICY=PASSIVE"} {
		envs := []peerEnv{{}}
		if len(set) > 0 {
			envs = append(envs, peerEnv{Unset: set})
		}
		for i, env := range envs {
			if omp != "" {
				env.Add = []string{omp}
			}
			p, err := runPeer(py, env, "--threads", fmt.Sprint(runtime.GOMAXPROCS(0)), "--steps", fmt.Sprint(steps), "--device", "cpu")
			if err != nil {
				msgs = append(msgs, err.Error())
				continue
			}
			unset := ""
			if i == 1 {
				unset = " and " + strings.Join(set, ", ") + " unset"
			}
			logf("PyTorch peer with %q%s: %.1f ms per step, loss %.6g", omp, unset, p.MsPerStep, p.Loss)
			runs = append(runs, run{env: env, omp: omp, out: p, bare: i == 1})
		}
	}
	if len(runs) == 0 {
		return nil, strings.Join(msgs, "; ")
	}
	// With the BLAS variables as set and without: do the losses agree,
	// and which was faster at its best?
	blasNote := ""
	allowBare := true
	if len(set) > 0 {
		var withSet, bare *run
		for i := range runs {
			rr := &runs[i]
			if rr.bare {
				if bare == nil || rr.out.MsPerStep < bare.out.MsPerStep {
					bare = rr
				}
			} else if withSet == nil || rr.out.MsPerStep < withSet.out.MsPerStep {
				withSet = rr
			}
		}
		names := strings.Join(set, ", ")
		for i := range runs {
			rr := &runs[i]
			if !rr.bare {
				continue
			}
			// The run with the same OpenMP setting and the variables as set.
			for j := range runs {
				if !runs[j].bare && runs[j].omp == rr.omp && relDiff(runs[j].out.Loss, rr.out.Loss) > lossTol {
					allowBare = false
					blasNote = fmt.Sprintf("%s as set (%s): the loss differed with them unset, %.6g against %.6g with them set (relative difference %.2g > %g), so those runs were not used",
						names, strings.Join(were, ", "), rr.out.Loss, runs[j].out.Loss, relDiff(runs[j].out.Loss, rr.out.Loss), lossTol)
				}
			}
		}
		switch {
		case withSet == nil && bare != nil:
			// Every run with them as set failed: no loss to check against.
			allowBare = false
			blasNote = fmt.Sprintf("%s as set (%s); the runs with them unset were not used, no run with them set to check the loss against", names, strings.Join(were, ", "))
		case allowBare && bare != nil:
			if bare.out.MsPerStep < withSet.out.MsPerStep {
				blasNote = fmt.Sprintf("%s unset (were %s); loss %.6g = %.6g with them set; %.1f ms per step against %.1f with them set",
					names, strings.Join(were, ", "), bare.out.Loss, withSet.out.Loss, bare.out.MsPerStep, withSet.out.MsPerStep)
			} else {
				blasNote = fmt.Sprintf("%s as set (%s), faster than unset: %.1f ms per step against %.1f; loss %.6g = %.6g unset",
					names, strings.Join(were, ", "), withSet.out.MsPerStep, bare.out.MsPerStep, withSet.out.Loss, bare.out.Loss)
			}
		case bare == nil:
			allowBare = false
			blasNote = fmt.Sprintf("%s as set (%s); the runs with them unset failed", names, strings.Join(were, ", "))
		}
	}
	var best *run
	for i := range runs {
		rr := &runs[i]
		if rr.bare && !allowBare {
			continue
		}
		if best == nil || rr.out.MsPerStep < best.out.MsPerStep {
			best = rr
		}
	}
	// torch built against the generic BLAS interface uses the system's
	// libblas.so.3; else (pip wheels: mkl) the BLAS inside torch.
	blas := "unknown"
	if bi := best.out.BLASInfo; bi != "" && bi != "generic" {
		blas = bi + " (inside torch)"
	} else if t, err := filepath.EvalSymlinks("/usr/lib/x86_64-linux-gnu/libblas.so.3"); err == nil {
		blas = t
	}
	env := best.omp
	if blasNote != "" {
		env = strings.TrimPrefix(env+"; "+blasNote, "; ")
	}
	p := best.out
	return &PeerRes{Torch: p.Torch, BLAS: blas, Env: env, EnvAdded: best.env.Add, EnvRemoved: best.env.Unset, Threads: p.Threads, Device: p.Device,
		Steps: steps, Warmup: 5, Loss: p.Loss, MsPerStep: p.MsPerStep, CellsPerSec: p.CellsPerS}, ""
}

// paired runs rounds interleaved rounds of our training step (the default
// CPU path) and the peer's (in the environment cpuPeer chose), 20 steps
// each after a warm-up, and records them with the median and range of the
// ratios in p.
func paired(p *PeerRes, py peerCmd, rounds int) {
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
	env := peerEnv{Add: p.EnvAdded, Unset: p.EnvRemoved}
	var ratios []float64
	for i := 0; i < rounds; i++ {
		start := time.Now()
		for j := 0; j < steps; j++ {
			ts.Run()
		}
		be.Sync()
		ours := time.Since(start).Seconds() * 1e3 / steps
		theirs, err := runPeer(py, env, "--threads", fmt.Sprint(runtime.GOMAXPROCS(0)), "--steps", fmt.Sprint(steps), "--device", "cpu")
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

// peerOut is what bench/peers/mlp_step.py prints (one object per run, or
// per round with --serve).
type peerOut struct {
	Torch     string  `json:"torch"`
	BLASInfo  string  `json:"blas_info"`
	Threads   int     `json:"threads"`
	Device    string  `json:"device"`
	Precision string  `json:"precision"`
	Variant   string  `json:"variant"`
	Ready     bool    `json:"ready"`
	MsPerStep float64 `json:"ms_per_step"`
	CellsPerS float64 `json:"cells_per_s"`
	Loss      float64 `json:"loss"`
}

// runPeer runs the peer script once with args, in env.
func runPeer(py peerCmd, env peerEnv, args ...string) (*peerOut, error) {
	cmd := exec.Command(py.python, append([]string{py.script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = io.MultiWriter(os.Stderr, &stderr)
	cmd.Env = env.environ()
	out, err := cmd.Output()
	what := fmt.Sprintf("%s %s", filepath.Base(py.script), strings.Join(args, " "))
	if len(env.Add)+len(env.Unset) > 0 {
		what += fmt.Sprintf(" (env %s%s)", strings.Join(env.Add, " "), strings.Join(prefixAll("-", env.Unset), " "))
	}
	if err != nil {
		if l := lastLine(stderr.String()); l != "" {
			return nil, fmt.Errorf("%s failed: %v: %s", what, err, l)
		}
		return nil, fmt.Errorf("%s failed: %v", what, err)
	}
	var p peerOut
	if err := json.Unmarshal(out, &p); err != nil {
		return nil, fmt.Errorf("%s printed %q: %v", what, out, err)
	}
	return &p, nil
}

func prefixAll(pre string, v []string) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = pre + s
	}
	return out
}

// server is a peer started with --serve: warm, timing a number of steps for
// each line written to it.
type server struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	ready peerOut
}

// startPeer starts the peer script with --serve and args and waits for it
// to be ready (after its warm-up).
func startPeer(py peerCmd, args ...string) (*server, error) {
	cmd := exec.Command(py.python, append([]string{py.script, "--serve"}, args...)...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, in: in, out: bufio.NewReader(out)}
	if err := s.read(&s.ready); err != nil || !s.ready.Ready {
		s.close()
		if err == nil {
			err = errors.New("no ready line")
		}
		return nil, fmt.Errorf("%s --serve %s: %v", filepath.Base(py.script), strings.Join(args, " "), err)
	}
	return s, nil
}

func (s *server) read(v any) error {
	line, err := s.out.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reading the peer: %v", err)
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("the peer printed %q: %v", line, err)
	}
	return nil
}

// round times steps steps of the peer.
func (s *server) round(steps int) (*peerOut, error) {
	if _, err := fmt.Fprintf(s.in, "%d\n", steps); err != nil {
		return nil, err
	}
	var p peerOut
	if err := s.read(&p); err != nil {
		return nil, err
	}
	return &p, nil
}

func (s *server) close() {
	s.in.Close()
	if err := s.cmd.Wait(); err != nil {
		logf("peer: %v", err)
	}
}
