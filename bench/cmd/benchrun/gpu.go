package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/dainx/dainx/bench"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda"
	"github.com/dainx/dainx/cuda/driver"
	"github.com/dainx/dainx/nn"
)

// GPUPeak is the GPU's arithmetic peak, with where each number comes from.
type GPUPeak struct {
	Name           string  `json:"name"`
	SMs            int     `json:"sms,omitempty"`
	ClockMHz       float64 `json:"max_clock_mhz,omitempty"`
	Compute        string  `json:"compute_capability,omitempty"`
	FP32LanesPerSM int     `json:"fp32_lanes_per_sm,omitempty"`
	FP32TFLOPS     float64 `json:"fp32_tflops"`
	FP32Source     string  `json:"fp32_source"`
	// TF32TFLOPS is the dense (not 2:4 sparse) TF32 tensor-core peak.
	TF32TFLOPS float64 `json:"tf32_dense_tflops,omitempty"`
	TF32Source string  `json:"tf32_source,omitempty"`
}

// GPUMode is the CUDA backend's default training step and TracIn pass in
// one GEMM precision beside PyTorch on the same GPU in the same mode.
type GPUMode struct {
	Mode    string `json:"mode"`
	Backend string `json:"backend,omitempty"` // the train_step entry
	Skipped string `json:"skipped,omitempty"`
	// Ours: µs per step, dense-equivalent TFLOP/s and fractions of the
	// FP32 and dense TF32 peaks, TracIn ms per million cells.
	UsPerStep    float64 `json:"us_per_step,omitempty"`
	TFLOPS       float64 `json:"tflops,omitempty"`
	OfFP32Peak   float64 `json:"fraction_of_fp32_peak,omitempty"`
	OfTF32Peak   float64 `json:"fraction_of_tf32_peak,omitempty"`
	TracInMsPerM float64 `json:"tracin_ms_per_million_cells,omitempty"`
	// The peer: its mode, its fastest variant and that variant's µs per
	// step measured alone; the interleaved rounds against ours.
	PeerMode      string    `json:"peer_mode,omitempty"`
	PeerVariant   string    `json:"peer_variant,omitempty"`
	PeerUsPerStep float64   `json:"peer_us_per_step,omitempty"`
	PeerSkipped   string    `json:"peer_skipped,omitempty"`
	RoundSteps    int       `json:"round_steps,omitempty"`
	Paired        []PairRes `json:"paired_rounds,omitempty"`
	PairedMedian  float64   `json:"paired_ratio_median,omitempty"`
	PairedMin     float64   `json:"paired_ratio_min,omitempty"`
	PairedMax     float64   `json:"paired_ratio_max,omitempty"`
	// The GEMM family (issue 24): the step with DAINX_GEMM_TUNE=time (the
	// rows above run the 64×64 kernels of before tuning), the seconds its
	// first steps spent timing variants, and each GEMM's choice.
	TunedUsPerStep float64  `json:"tuned_us_per_step,omitempty"`
	TuneSeconds    float64  `json:"tune_seconds,omitempty"`
	TunedChoices   []string `json:"tuned_choices,omitempty"`
	TunedSkipped   string   `json:"tuned_skipped,omitempty"`
	// The step replayed as one CUDA graph, Adam inside (bench.GraphStep,
	// as nn.Train with graphs), with the 64×64 kernels and tuned; until
	// graph replay is the default the bench reports the step both ways.
	GraphUsPerStep      float64 `json:"graph_us_per_step,omitempty"`
	TunedGraphUsPerStep float64 `json:"tuned_graph_us_per_step,omitempty"`
	GraphSkipped        string  `json:"graph_skipped,omitempty"`
}

// graphStep measures the default training step replayed as one graph on
// be, µs per step, or says why it could not.
func graphStep(be compute.Backend, minTime time.Duration) (float64, string) {
	ts, err := bench.NewTrainStep(be, nn.DefaultLayers(3))
	if err != nil {
		return 0, err.Error()
	}
	defer ts.Free()
	gs, err := bench.NewGraphStep(ts)
	if err != nil {
		return 0, err.Error()
	}
	defer gs.Free()
	return measure(gs.Run, be, 3*minTime) * 1e6, ""
}

// gpuPeakTable holds datasheet peaks by device name (the first entry whose
// every part the name contains): FP32 (non-tensor) and dense TF32
// tensor-core TFLOP/s, half of the datasheets' "with sparsity" figure.
var gpuPeakTable = []struct {
	parts      []string
	fp32, tf32 float64
	source     string
}{
	{[]string{"H100", "NVL"}, 60, 417.5, "NVIDIA H100 NVL datasheet: 60 TFLOP/s FP32, 835 TFLOP/s TF32 with sparsity"},
	{[]string{"H100", "PCIe"}, 51, 378, "NVIDIA H100 PCIe datasheet: 51 TFLOP/s FP32, 756 TFLOP/s TF32 with sparsity"},
	{[]string{"H100"}, 67, 494.5, "NVIDIA H100 SXM5 datasheet: 67 TFLOP/s FP32, 989 TFLOP/s TF32 with sparsity"},
	{[]string{"H200"}, 67, 494.5, "NVIDIA H200 SXM datasheet: 67 TFLOP/s FP32, 989 TFLOP/s TF32 with sparsity"},
	{[]string{"H800"}, 67, 494.5, "NVIDIA H800 SXM5 (as H100 SXM5): 67 TFLOP/s FP32, 989 TFLOP/s TF32 with sparsity"},
	{[]string{"A100"}, 19.5, 156, "NVIDIA A100 datasheet: 19.5 TFLOP/s FP32, 312 TFLOP/s TF32 with sparsity"},
	{[]string{"L40S"}, 91.6, 183, "NVIDIA L40S datasheet: 91.6 TFLOP/s FP32, 366 TFLOP/s TF32 with sparsity"},
}

// fp32Lanes is the FP32 FMA results per clock per SM by compute
// capability (CUDA C++ Programming Guide, "Arithmetic Instructions"
// throughput table); 0: unknown.
func fp32Lanes(major, minor int) int {
	switch {
	case major == 6 && minor == 0, major == 7, major == 8 && minor == 0:
		return 64
	case major == 5, major == 6, major == 8, major == 9, major == 10, major == 12:
		return 128
	}
	return 0
}

// gpuPeak returns the FP32 peak of device dev computed from its SM count
// and maximum clock (cuDeviceGetAttribute) and its lanes per SM, with the
// datasheet's as a check, and the dense TF32 peak from the datasheet table
// by name. What cannot be had is said in the sources.
func gpuPeak(dev int) *GPUPeak {
	pk := &GPUPeak{}
	var row *struct {
		parts      []string
		fp32, tf32 float64
		source     string
	}
	drv, err := driver.Load(driver.Options{Library: os.Getenv("DAINX_LIBCUDA")})
	var d driver.Device
	if err == nil {
		d, err = drv.Device(dev)
	}
	if err == nil {
		pk.Name, err = drv.DeviceName(d)
	}
	var sms, clock, major, minor int
	if err == nil {
		attr := func(a driver.Attribute) int {
			if err != nil {
				return 0
			}
			var v int
			v, err = drv.DeviceAttribute(d, a)
			return v
		}
		sms, clock = attr(driver.AttrMultiprocessorCount), attr(driver.AttrClockRate)
		major, minor = attr(driver.AttrComputeCapabilityMajor), attr(driver.AttrComputeCapabilityMinor)
	}
	for i := range gpuPeakTable {
		t := &gpuPeakTable[i]
		ok := pk.Name != ""
		for _, p := range t.parts {
			ok = ok && strings.Contains(pk.Name, p)
		}
		if ok {
			row = t
			break
		}
	}
	if row != nil {
		pk.TF32TFLOPS, pk.TF32Source = row.tf32, row.source+" (dense: half)"
	} else {
		pk.TF32Source = "unknown: " + pk.Name + " is not in benchrun's datasheet table"
	}
	lanes := fp32Lanes(major, minor)
	switch {
	case err == nil && sms > 0 && clock > 0 && lanes > 0:
		pk.SMs, pk.ClockMHz, pk.Compute, pk.FP32LanesPerSM = sms, float64(clock)/1e3, fmt.Sprintf("%d.%d", major, minor), lanes
		pk.FP32TFLOPS = float64(sms*lanes) * 2 * float64(clock) * 1e3 / 1e12
		pk.FP32Source = fmt.Sprintf("%d SMs × %d FP32 lanes (compute %d.%d, CUDA C++ Programming Guide throughput table) × 2 flops per FMA × %.0f MHz (the driver's maximum clock)",
			sms, lanes, major, minor, pk.ClockMHz)
		if row != nil {
			pk.FP32Source += fmt.Sprintf("; datasheet: %g", row.fp32)
		}
	case row != nil:
		pk.FP32TFLOPS, pk.FP32Source = row.fp32, row.source
		if err != nil {
			pk.FP32Source += fmt.Sprintf(" (not computed: %v)", err)
		}
	default:
		pk.FP32Source = fmt.Sprintf("unknown (driver: %v; %d SMs, %d kHz, compute %d.%d)", err, sms, clock, major, minor)
	}
	logf("GPU peak: %s: FP32 %.1f TFLOP/s (%s); dense TF32 %.1f TFLOP/s (%s)", pk.Name, pk.FP32TFLOPS, pk.FP32Source, pk.TF32TFLOPS, pk.TF32Source)
	return pk
}

// peerMode is the PyTorch mode to compare precision p with: tf32 for tf32,
// fp32 for fp32 and for 3xtf32 (float32 accuracy).
func peerMode(p compute.Precision) string {
	if p == compute.TF32 {
		return "tf32"
	}
	return "fp32"
}

// gpuVariants are the ways the GPU peer is run, each a flag set of
// mlp_step.py.
var gpuVariants = []struct {
	name string
	args []string
}{
	{"plain", nil},
	{"fused", []string{"--fused"}},
	{"fused+graph", []string{"--fused", "--graph"}},
}

const gpuWarmup = 20

func gpuPeerArgs(mode, variant string, steps int) []string {
	args := []string{"--device", "cuda", "--precision", mode, "--threads", fmt.Sprint(runtime.GOMAXPROCS(0)),
		"--warmup", fmt.Sprint(gpuWarmup), "--steps", fmt.Sprint(steps)}
	for _, v := range gpuVariants {
		if v.name == variant {
			args = append(args, v.args...)
		}
	}
	return args
}

// gpuPeer runs every variant of the peer on the GPU in mode (fp32 or tf32)
// and returns the fastest, with every variant's time, or why none ran.
func gpuPeer(py peerCmd, mode string, steps int) (*PeerRes, string) {
	pr := &PeerRes{Precision: mode, Variants: map[string]float64{}, Steps: steps, Warmup: gpuWarmup, BLAS: "cuBLAS (torch)"}
	var msgs []string
	for _, v := range gpuVariants {
		out, err := runPeer(py, peerEnv{}, gpuPeerArgs(mode, v.name, steps)...)
		if err != nil {
			if pr.VariantErrors == nil {
				pr.VariantErrors = map[string]string{}
			}
			pr.VariantErrors[v.name] = err.Error()
			msgs = append(msgs, err.Error())
			logf("PyTorch GPU peer %s %s: %v", mode, v.name, err)
			continue
		}
		pr.Variants[v.name] = out.MsPerStep
		logf("PyTorch GPU peer %s %s: %.1f µs per step, loss %.6g", mode, v.name, out.MsPerStep*1e3, out.Loss)
		if pr.Variant == "" || out.MsPerStep < pr.MsPerStep {
			pr.Torch, pr.Threads, pr.Device, pr.Variant = out.Torch, out.Threads, out.Device, v.name
			pr.MsPerStep, pr.CellsPerSec, pr.Loss = out.MsPerStep, out.CellsPerS, out.Loss
		}
	}
	if pr.Variant == "" {
		return nil, strings.Join(msgs, "; ")
	}
	pr.Env = "variant " + pr.Variant
	return pr, ""
}

// gpuBench measures the CUDA backend's training step and TracIn pass in
// each precision (fp32's was measured with the ops) and compares each with
// the PyTorch peer on the GPU in the same mode, in interleaved rounds.
func gpuBench(r *Results, py peerCmd, dev int, precs []compute.Precision, minTime time.Duration, rounds, steps int) {
	peers := map[string]*PeerRes{}
	msgs := map[string]string{}
	for _, mode := range []string{"fp32", "tf32"} {
		if !slices.ContainsFunc(precs, func(p compute.Precision) bool { return peerMode(p) == mode }) && mode != "fp32" {
			continue
		}
		if py.python == "" {
			msgs[mode] = r.PeerMsg
			continue
		}
		if p, msg := gpuPeer(py, mode, steps); p != nil {
			peers[mode] = p
			r.PeersGPU = append(r.PeersGPU, p)
		} else {
			msgs[mode] = msg
		}
	}
	if p := peers["fp32"]; p != nil {
		gs := cudaStep(r.Steps)
		c := *p
		c.Ratio = gs.CellsPerSec / c.CellsPerSec
		r.PeerGPU = &c
		logf("PyTorch peer on %s (fp32, %s): %.1f µs per step; cuda/theirs %.2f×", c.Device, c.Variant, c.MsPerStep*1e3, c.Ratio)
	} else {
		r.PeerGPUMsg = msgs["fp32"]
		logf("PyTorch GPU peer skipped: %s", r.PeerGPUMsg)
	}
	var peakGF, tf32GF float64
	if r.GPUPeak != nil {
		peakGF, tf32GF = r.GPUPeak.FP32TFLOPS*1e3, r.GPUPeak.TF32TFLOPS*1e3
	}
	for _, p := range precs {
		m := GPUMode{Mode: p.String(), PeerMode: peerMode(p)}
		be, err := newCUDA(dev, p)
		if err != nil {
			m.Skipped = err.Error()
			logf("cuda %s: %v", p, err)
			r.GPUModes = append(r.GPUModes, m)
			continue
		}
		s := *cudaStep(r.Steps)
		if p != compute.FP32 {
			s = stepAndTracIn("cuda-"+p.String(), be, peakGF, minTime)
			s.Precision = p.String()
			r.Steps = append(r.Steps, s)
		}
		m.Backend = s.Backend
		m.UsPerStep, m.TFLOPS, m.TracInMsPerM = s.MsPerStep*1e3, s.GFLOPS/1e3, s.TracInSecPerM*1e3
		if peakGF > 0 {
			m.OfFP32Peak = s.GFLOPS / peakGF
		}
		if tf32GF > 0 && p != compute.FP32 {
			m.OfTF32Peak = s.GFLOPS / tf32GF
		}
		if pr := peers[m.PeerMode]; pr != nil {
			m.PeerVariant, m.PeerUsPerStep = pr.Variant, pr.MsPerStep*1e3
			if rounds > 0 {
				gpuPaired(&m, be, py, rounds, steps)
			}
		} else {
			m.PeerSkipped = msgs[m.PeerMode]
		}
		m.GraphUsPerStep, m.GraphSkipped = graphStep(be, minTime)
		if m.GraphSkipped == "" {
			logf("cuda %s, the step replayed as a graph: %.1f µs (eager %.1f)", p, m.GraphUsPerStep, m.UsPerStep)
		}
		be.Close()
		tunedStep(&m, dev, p, peakGF, minTime)
		r.GPUModes = append(r.GPUModes, m)
	}
}

// tunedStep measures the training step of precision p with the tuned GEMM
// family (cuda.GemmTuneTime, as DAINX_GEMM_TUNE=time; the cache in a fresh
// directory, so that the tuning time is measured) into m.
func tunedStep(m *GPUMode, dev int, p compute.Precision, peakGF float64, minTime time.Duration) {
	dir, err := os.MkdirTemp("", "dainx-tune-")
	if err != nil {
		m.TunedSkipped = err.Error()
		return
	}
	defer os.RemoveAll(dir)
	// The tuning cache is in os.UserCacheDir(), which $XDG_CACHE_HOME sets.
	old, had := os.LookupEnv("XDG_CACHE_HOME")
	os.Setenv("XDG_CACHE_HOME", dir)
	if had {
		defer os.Setenv("XDG_CACHE_HOME", old)
	} else {
		defer os.Unsetenv("XDG_CACHE_HOME")
	}
	o, err := cudaOptions(dev, p)
	if err != nil {
		m.TunedSkipped = err.Error()
		return
	}
	o.GemmTune = cuda.GemmTuneTime
	be, err := cuda.NewWith(o)
	if err != nil {
		m.TunedSkipped = err.Error()
		return
	}
	defer be.Close()
	s := stepAndTracIn("cuda-"+p.String()+"-tuned", be, peakGF, minTime)
	m.TunedUsPerStep = s.MsPerStep * 1e3
	choices, spent := be.GEMMChoices()
	m.TuneSeconds = spent.Seconds()
	for _, c := range choices {
		serial := ""
		if c.Serial {
			serial = ", serial split-K"
		}
		m.TunedChoices = append(m.TunedChoices, fmt.Sprintf("%v: %s (%s%s)", c.Shape, c.Variant, c.How, serial))
	}
	logf("cuda %s with the tuned GEMM family: %.1f µs per step (64×64 kernels: %.1f), %.2f s timing", p, m.TunedUsPerStep, m.UsPerStep, m.TuneSeconds)
	if us, why := graphStep(be, minTime); why == "" {
		m.TunedGraphUsPerStep = us
		logf("cuda %s tuned, the step replayed as a graph: %.1f µs", p, us)
	}
}

// gpuPaired runs rounds interleaved rounds of steps training steps on be
// and of the peer in m's mode and variant, kept warm in one process
// (mlp_step.py --serve), and records them in m.
func gpuPaired(m *GPUMode, be *cuda.Backend, py peerCmd, rounds, steps int) {
	ts, err := bench.NewTrainStep(be, nn.DefaultLayers(3))
	if err != nil {
		fatalf("%v", err)
	}
	defer ts.Free()
	for i := 0; i < gpuWarmup; i++ {
		ts.Run()
	}
	if err := be.Sync(); err != nil {
		m.PeerSkipped = fmt.Sprintf("our warm-up: %v", err)
		return
	}
	srv, err := startPeer(py, gpuPeerArgs(m.PeerMode, m.PeerVariant, steps)...)
	if err != nil {
		m.PeerSkipped = err.Error()
		logf("%s: %v", m.Mode, err)
		return
	}
	defer srv.close()
	m.RoundSteps = steps
	var ratios []float64
	for i := 0; i < rounds; i++ {
		start := time.Now()
		for j := 0; j < steps; j++ {
			ts.Run()
		}
		if err := be.Sync(); err != nil {
			logf("%s paired round %d: %v", m.Mode, i+1, err)
			return
		}
		ours := time.Since(start).Seconds() * 1e3 / float64(steps)
		theirs, err := srv.round(steps)
		if err != nil {
			logf("%s paired round %d: %v", m.Mode, i+1, err)
			break
		}
		pr := PairRes{OursMs: ours, PeerMs: theirs.MsPerStep, Ratio: theirs.MsPerStep / ours}
		m.Paired = append(m.Paired, pr)
		ratios = append(ratios, pr.Ratio)
		logf("%s paired round %d: ours %.1f µs, PyTorch (%s, %s) %.1f µs per step: %.2f×", m.Mode, i+1, 1e3*pr.OursMs, m.PeerMode, m.PeerVariant, 1e3*pr.PeerMs, pr.Ratio)
	}
	if len(ratios) == 0 {
		return
	}
	m.PairedMedian = median(ratios)
	m.PairedMin, m.PairedMax = slices.Min(ratios), slices.Max(ratios)
}

// gpuNotes explain the GPU section.
func gpuNotes(steps int) []string {
	return []string{
		fmt.Sprintf("GPU: PyTorch's step is timed over %d steps after %d warm-up steps, torch.cuda.synchronize() before and after, in each of three variants (plain Adam; fused Adam; fused capturable Adam with the whole step captured in a CUDA graph, each step copying its batch into the graph's static inputs); the fastest counts. Its fp32 mode sets torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32 to False, tf32 to True.", steps, gpuWarmup),
		fmt.Sprintf("GPU: each mode's ratio is PyTorch's time over ours (above 1: dainx faster), the median of interleaved rounds of %d steps each: ours, then the peer (one warm process in the same mode and variant), in turn. 3xtf32 is compared with PyTorch in fp32, the accuracy it aims at. Our step trains on one fixed batch, the peer on a new batch each step.", steps),
		"GPU: the cuda rows' fractions of peak in the training-step and operations tables are of the GPU's FP32 peak (see the GPU section for its source).",
		"GPU: TFLOP/s are dense-equivalent (the step's 8.19 GFLOP however computed: 3xtf32 does three tensor-core products per product but is credited with one); the fraction of the TF32 peak is of the dense (not 2:4 sparse) tensor-core rate.",
	}
}
