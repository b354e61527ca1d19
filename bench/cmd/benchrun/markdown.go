package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

func markdown(r *Results) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# dainx benchmarks\n\n")
	p("%s, commit `%s`, `%s`\n\n", r.Date, r.Commit, r.Command)
	p("- CPU: %s, %d cores (GOMAXPROCS %d), %s GiB; load average at start %s\n", r.Machine.CPU, r.Machine.Cores, r.Machine.GOMAXPROCS, r.Machine.MemoryGiB, r.Machine.Load)
	p("- GPU: %s\n- %s\n", r.Machine.GPU, r.Machine.Go)
	if r.Peak.Machine > 0 {
		isa := r.Peak.ISA
		if isa == "" {
			isa = "avx2"
		}
		p("- FMA peak (fp32, measured with a register-only FMA loop in %s, the widest vector ISA measured; every \"of peak\" is of it): **%.1f GFLOP/s** for the machine (%.1f per core by thread CPU time × %d); %.1f reached on all cores by the wall clock during this run\n",
			isaWords(isa), r.Peak.Machine, r.Peak.PerCore, r.Machine.GOMAXPROCS, r.Peak.Wall)
		if a := r.Peak.AVX2; a != nil && isa != "avx2" {
			p("- FMA peak in %s: %.1f GFLOP/s for the machine (%.1f per core); %.1f on all cores by the wall clock\n",
				isaWords("avx2"), a.Machine, a.PerCore, a.Wall)
		}
	}
	if ks := gemmKernels(r); ks != "" {
		p("- GEMM kernels: %s\n", ks)
	}
	if r.Peak.GEMM > 0 {
		p("- GEMM ceiling (independent single-threaded 1024³ products on all %d cores at once, by the wall clock): **%.1f GFLOP/s**, %s of the FMA peak; the default training step's %.2f GFLOP at that rate would take %.1f ms\n",
			r.Machine.GOMAXPROCS, r.Peak.GEMM, pct(r.Peak.GEMM/r.Peak.Machine), stepFlops()/1e9, stepFlops()/r.Peak.GEMM/1e6)
	}
	if r.Python != "" {
		p("- PyTorch peers run by %s\n", r.Python)
	}
	p("\n")
	if len(r.Steps) > 0 || r.Peer != nil || r.PeerMsg != "" {
		trainingStep(p, r)
	}
	if len(r.GPUModes) > 0 {
		gpuSection(p, r)
	}
	if len(r.E2E) > 0 {
		endToEndSection(p, r)
	}
	if len(r.Ops) > 0 {
		p("\n## Operations at the default MLP's shapes, batch 1024\n\n")
		p("| backend | op | rate | unit | of peak | µs/call |\n|---|---|---:|---|---:|---:|\n")
		for _, o := range r.Ops {
			p("| %s | %s | %.2f | %s | %s | %.1f |\n", o.Backend, o.Op, o.Rate, o.Unit, pct(o.OfPeak), o.Microsec)
		}
	}
	if len(r.Notes) > 0 {
		p("\n")
		for _, n := range r.Notes {
			p("- %s\n", n)
		}
	}
	return b.String()
}

type printer func(format string, a ...any)

// isaWords names a vector ISA's FMA loop.
func isaWords(isa string) string {
	switch isa {
	case "avx512":
		return "AVX-512 (16-wide)"
	case "avx2":
		return "AVX2 (8-wide)"
	}
	return isa
}

// gemmKernels lists the GEMM kernel of each CPU row, e.g. "cpu-avx512:
// avx512 12×32; cpu-avx2: avx2 6×16".
func gemmKernels(r *Results) string {
	var ks []string
	for _, s := range r.Steps {
		if s.GEMMKernel != "" {
			ks = append(ks, s.Backend+": "+s.GEMMKernel)
		}
	}
	return strings.Join(ks, "; ")
}

func trainingStep(p printer, r *Results) {
	p("## Training step, default MLP (150, 1024, 1024, 128, 1), batch 1024\n\n")
	p("| backend | ms/step | cells/s | GFLOP/s (dense-equivalent) | of peak | TracIn s per 1M cells |\n|---|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Steps {
		p("| %s | %s | %.0f | %.1f | %s | %.2f |\n", s.Backend, msFmt(s.MsPerStep), s.CellsPerSec, s.GFLOPS, pct(s.OfPeak), s.TracInSecPerM)
	}
	envNote := ""
	if r.Peer != nil {
		env := r.Peer.Env
		if strings.Contains(env, "OPENBLAS") {
			// The whole story goes below the table.
			envNote, env = env, strings.Join(r.Peer.EnvAdded, " ")
			if len(r.Peer.EnvRemoved) > 0 {
				env = strings.TrimSpace(env + " " + strings.Join(r.Peer.EnvRemoved, ", ") + " unset")
			}
		}
		p("| PyTorch %s (%d threads, BLAS %s %s) | %.1f | %.0f | %.1f | %s | |\n", r.Peer.Torch, r.Peer.Threads, filepath.Base(filepath.Dir(r.Peer.BLAS)), env,
			r.Peer.MsPerStep, r.Peer.CellsPerSec, stepFlops()/r.Peer.MsPerStep/1e6, pct(stepFlops()/r.Peer.MsPerStep/1e6/r.Peak.Machine))
	}
	if r.PeerGPU != nil {
		how := ""
		if r.PeerGPU.Variant != "" {
			how = fmt.Sprintf(" (%s, %s)", r.PeerGPU.Precision, r.PeerGPU.Variant)
		}
		p("| PyTorch %s on %s%s | %s | %.0f | %.1f | | |\n", r.PeerGPU.Torch, r.PeerGPU.Device, how,
			msFmt(r.PeerGPU.MsPerStep), r.PeerGPU.CellsPerSec, stepFlops()/r.PeerGPU.MsPerStep/1e6)
	}
	if envNote != "" {
		p("\nThe CPU peer's environment: %s.\n", envNote)
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
	if len(r.GPUModes) == 0 {
		if r.PeerGPU != nil {
			p("\n**cuda / PyTorch on the GPU: %.2f×**\n", r.PeerGPU.Ratio)
		} else if r.PeerGPUMsg != "" {
			p("\nPyTorch GPU peer skipped: %s\n", r.PeerGPUMsg)
		}
	}
	p("\n")
}

func gpuSection(p printer, r *Results) {
	p("## GPU: default training step and TracIn pass by GEMM precision, beside PyTorch on the same GPU\n\n")
	if pk := r.GPUPeak; pk != nil {
		p("%s. FP32 peak **%.1f TFLOP/s** (%s); dense TF32 tensor-core peak %s (%s).\n\n", pk.Name, pk.FP32TFLOPS, pk.FP32Source, tflopsFmt(pk.TF32TFLOPS), pk.TF32Source)
	}
	p("| mode | dainx µs/step | TFLOP/s | %% of peak | PyTorch µs/step (variant) | median ratio (range) | TracIn ms per 1M cells |\n|---|---:|---:|---:|---|---|---:|\n")
	for _, m := range r.GPUModes {
		if m.Skipped != "" {
			p("| %s | skipped: %s | | | | | |\n", m.Mode, oneLine(m.Skipped))
			continue
		}
		of := pct(m.OfFP32Peak)
		if of != "" {
			of += " FP32"
		}
		if m.OfTF32Peak > 0 {
			of += fmt.Sprintf(", %s TF32", pctFine(m.OfTF32Peak))
		}
		peer, ratio := "skipped", ""
		if m.PeerVariant != "" {
			peer = fmt.Sprintf("%.1f (%s, %s)", m.PeerUsPerStep, m.PeerMode, m.PeerVariant)
		}
		if len(m.Paired) > 0 {
			ratio = fmt.Sprintf("**%.2f×** (%.2f–%.2f×, %s)", m.PairedMedian, m.PairedMin, m.PairedMax, plural(len(m.Paired), "round"))
		} else if m.PeerSkipped != "" {
			ratio = "not run: " + oneLine(m.PeerSkipped)
		} else if m.PeerUsPerStep > 0 {
			ratio = fmt.Sprintf("%.2f× (measured apart)", m.PeerUsPerStep/m.UsPerStep)
		}
		p("| %s | %.1f | %.2f | %s | %s | %s | %.1f |\n", m.Mode, m.UsPerStep, m.TFLOPS, of, peer, ratio, m.TracInMsPerM)
	}
	p("\nRatio: PyTorch's time per step over ours (above 1: dainx faster), interleaved rounds.\n")
	var tuned bool
	for _, m := range r.GPUModes {
		tuned = tuned || m.TunedUsPerStep > 0 || m.TunedSkipped != ""
	}
	if tuned {
		p("\nThe GEMM family (issue 24): the step with `DAINX_GEMM_TUNE=time` against the 64×64 kernels above, the time its first steps spent timing variants, and each GEMM's variant:\n\n")
		p("The graph columns replay the whole step (Adam inside) as one CUDA graph, as training does with graphs on.\n\n")
		p("| mode | 64×64 µs | 64×64 graph µs | tuned µs | tuned graph µs | tuning s | choices |\n|---|---:|---:|---:|---:|---:|---|\n")
		us := func(v float64) string {
			if v == 0 {
				return ""
			}
			return fmt.Sprintf("%.1f", v)
		}
		for _, m := range r.GPUModes {
			graph := us(m.GraphUsPerStep)
			if m.GraphSkipped != "" {
				graph = "not run: " + oneLine(m.GraphSkipped)
			}
			if m.TunedSkipped != "" {
				p("| %s | %.1f | %s | not run: %s | | | |\n", m.Mode, m.UsPerStep, graph, oneLine(m.TunedSkipped))
				continue
			}
			p("| %s | %.1f | %s | %.1f | %s | %.2f | %s |\n", m.Mode, m.UsPerStep, graph, m.TunedUsPerStep, us(m.TunedGraphUsPerStep), m.TuneSeconds, strings.Join(m.TunedChoices, "; "))
		}
	}
	if len(r.PeersGPU) > 0 {
		p("\nPyTorch on the GPU, µs per step of each variant (%d steps after %d warm-up):\n\n", r.PeersGPU[0].Steps, r.PeersGPU[0].Warmup)
		p("| mode | torch | plain | fused | fused+graph | fastest | loss |\n|---|---|---:|---:|---:|---|---:|\n")
		for _, pr := range r.PeersGPU {
			cell := func(v string) string {
				if ms, ok := pr.Variants[v]; ok {
					return fmt.Sprintf("%.1f", ms*1e3)
				}
				if e, ok := pr.VariantErrors[v]; ok {
					return "failed: " + oneLine(e)
				}
				return ""
			}
			p("| %s | %s | %s | %s | %s | %s | %.6g |\n", pr.Precision, pr.Torch, cell("plain"), cell("fused"), cell("fused+graph"), pr.Variant, pr.Loss)
		}
	} else if r.PeerGPUMsg != "" {
		p("\nPyTorch GPU peer skipped: %s\n", r.PeerGPUMsg)
	}
	var any bool
	for _, m := range r.GPUModes {
		any = any || len(m.Paired) > 0
	}
	if any {
		p("\n| mode | round | ours µs/step | PyTorch µs/step | ratio |\n|---|---:|---:|---:|---:|\n")
		for _, m := range r.GPUModes {
			for i, q := range m.Paired {
				p("| %s | %d | %.1f | %.1f | %.2f× |\n", m.Mode, i+1, 1e3*q.OursMs, 1e3*q.PeerMs, q.Ratio)
			}
		}
	}
	p("\n")
}

func endToEndSection(p printer, r *Results) {
	backends := map[string]bool{}
	for _, e := range r.E2E {
		backends[e2eBackend(e)] = true
	}
	if len(backends) == 1 {
		for be := range backends {
			p("## End to end (`dainx augment -backend %s`)\n\n", be)
		}
	} else {
		p("## End to end (`dainx augment`)\n\n")
	}
	p("| run | backend | seconds | train | influence | entity | sample | predict | retrain | epochs (Θ) | epoch s | train cells/s | s/step | max RSS MiB | RMSE before → after |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, e := range r.E2E {
		be := e2eBackend(e)
		if e.Precision != "" {
			be += " " + e.Precision
		}
		if e.Skipped != "" {
			p("| %s | %s | skipped: %s | | | | | | | | | | | | |\n", e.Name, be, oneLine(e.Skipped))
			continue
		}
		st := e.stageSeconds()
		var cells []string
		for _, s := range stages[:len(stages)-1] {
			if v, ok := st[s]; ok {
				cells = append(cells, secFmt(v))
			} else {
				cells = append(cells, "")
			}
		}
		p("| %s `%s` | %s | %.1f | %s | %d | %.2f | %.0f | %.3f | %.0f | %.4f → %.4f |\n", e.Name, strings.Join(e.Args, " "), be, e.Seconds, strings.Join(cells, " | "),
			e.EpochsBefore, e.EpochSec, e.CellsPerSec, e.SecPerStep, e.MaxRSSMiB, e.RMSEBefore, e.RMSEAfter)
	}
	var devs []string
	for _, e := range r.E2E {
		if e.Device != "" && !slices.Contains(devs, e.Device) {
			devs = append(devs, e.Device)
		}
	}
	if len(devs) > 0 {
		p("\nDevice (threads and kernels) of the runs: %s\n", strings.Join(devs, "; "))
	}
}

func e2eBackend(e E2ERes) string {
	if e.Backend == "" {
		return "cpu"
	}
	return e.Backend
}

func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")
}

// msFmt formats milliseconds with three significant digits below 10 ms.
func msFmt(ms float64) string {
	if ms < 10 {
		return fmt.Sprintf("%.3g", ms)
	}
	return fmt.Sprintf("%.1f", ms)
}

// secFmt formats a stage's seconds: three significant digits below 10 s.
func secFmt(s float64) string {
	if s < 10 {
		return fmt.Sprintf("%.3g", s)
	}
	return fmt.Sprintf("%.1f", s)
}

func tflopsFmt(t float64) string {
	if t <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.1f TFLOP/s", t)
}

func pct(f float64) string {
	if f <= 0 {
		return ""
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

// pctFine is pct with one decimal below 10%.
func pctFine(f float64) string {
	if f > 0 && f < 0.1 {
		return fmt.Sprintf("%.1f%%", 100*f)
	}
	return pct(f)
}

// plural returns "1 round", "2 rounds".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
