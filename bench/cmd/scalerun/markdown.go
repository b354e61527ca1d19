package main

import (
	"fmt"
	"sort"
	"strings"
)

// stages are the report's seconds in the pipeline's order, read_split first.
var stages = []string{"read_split", "train", "influence", "entity", "sample", "predict", "retrain", "total"}

// markdown renders r.
func markdown(r *Results) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("# dainx at scale: %s", r.Date)
	p("")
	p("Commit %s; `%s`.", r.Commit, r.Command)
	p("Machine: %s, %d cores (GOMAXPROCS %d), %s GiB, %s; load average at start %s.",
		r.Machine.CPU, r.Machine.Cores, r.Machine.GOMAXPROCS, r.Machine.MemoryGiB, r.Machine.Go, r.Machine.Load)
	p("")
	if len(r.Runs) > 0 {
		p("Synthetic 3-mode tensors, dims %s (`dainx synth`, seed 1), run as `dainx augment -input synth-N.bin -output aug.bin %s`.", joinInts(r.Dims), strings.Join(r.Args, " "))
		p("")
		p("| cells | peak RSS | B/cell | text MB/s | .bin MB/s | train cells/s | TracIn cells/s | sampling cells/s | retrain cells/s | wall | load before → after |")
		p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
		for _, run := range r.Runs {
			if run.Error != "" {
				p("| %s | %s | %s | | | | | | | | %s → %s: %s |", cellsName(run.Cells), mib(run.MaxRSSMiB), num(run.BPerCell, 1), run.LoadStart, run.LoadEnd, oneLine(run.Error))
				continue
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s → %s |", cellsName(run.Cells), mib(run.MaxRSSMiB), num(run.BPerCell, 1),
				readRate(run, "tsv"), readRate(run, "bin"), rate(run.TrainCPS), rate(run.TracInCPS), rate(run.SampleCPS), rate(run.RetrainCP),
				secs(run.Wall), run.LoadStart, run.LoadEnd)
		}
		p("")
		p("Seconds per stage (`read_split`: the wall time before training, reading the .bin and splitting; the others from the report):")
		p("")
		p("| cells | %s |", strings.Join(stages, " | "))
		p("|---:|%s", strings.Repeat("---:|", len(stages)))
		for _, run := range r.Runs {
			if run.Error != "" {
				continue
			}
			row := make([]string, len(stages))
			for i, s := range stages {
				row[i] = secs(run.Seconds[s])
			}
			p("| %s | %s |", cellsName(run.Cells), strings.Join(row, " | "))
		}
		p("")
		if r.Roofline != nil {
			accountTables(p, r)
		}
		p("Input read by a fresh process (file size, seconds, MB/s, that process's peak RSS and bytes per cell):")
		p("")
		p("| cells | format | size | seconds | MB/s | peak RSS | B/cell |")
		p("|---:|---|---:|---:|---:|---:|---:|")
		for _, run := range r.Runs {
			for _, rd := range run.Reads {
				if rd.Error != "" {
					p("| %s | %s | | | | | %s |", cellsName(run.Cells), rd.Format, oneLine(rd.Error))
					continue
				}
				p("| %s | %s | %.0f MB | %.2f | %.0f | %s | %s |", cellsName(run.Cells), rd.Format, float64(rd.Bytes)/1e6, rd.Seconds, rd.MBps, mib(rd.MaxRSSMiB), num(rd.BPerCell, 1))
			}
		}
		p("")
		p("Test RMSE before → after augmentation (1 epoch each, so not a quality result):")
		p("")
		for _, run := range r.Runs {
			if run.Error == "" {
				p("- %s cells: %d training, %d new; %.4f → %.4f", cellsName(run.Cells), run.NTrain, run.NAug, run.RMSE[0], run.RMSE[1])
			}
		}
		p("")
		if len(r.Runs) > 1 {
			if len(r.Linear) == 0 && r.Notes != nil {
				p("Growth is linear in cells: no per-cell quantity (bytes, seconds of a stage or of a read) changes by more than 15%% between consecutive sizes.")
			} else if len(r.Linear) > 0 {
				p("Per-cell quantities that change by more than 15%% between consecutive sizes (not linear):")
				p("")
				for _, l := range r.Linear {
					p("- %s", l)
				}
			}
			p("")
		}
	}
	sweepMarkdown(p, r)
	distMarkdown(p, r)
	for _, n := range r.Notes {
		p("- %s", n)
	}
	return b.String()
}

func readRate(run Run, format string) string {
	for _, rd := range run.Reads {
		if rd.Format == format && rd.Error == "" {
			return fmt.Sprintf("%.0f", rd.MBps)
		}
	}
	return ""
}

func mib(m float64) string {
	if m >= 1024 {
		return fmt.Sprintf("%.2f GiB", m/1024)
	}
	return fmt.Sprintf("%.0f MiB", m)
}

func num(v float64, prec int) string { return fmt.Sprintf("%.*f", prec, v) }

func rate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0fK", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func secs(s float64) string {
	if s >= 100 {
		return fmt.Sprintf("%.0f", s)
	}
	return fmt.Sprintf("%.1f", s)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// accountTables writes the roofline of the machine and, for each size,
// each stage placed against it.
func accountTables(p func(string, ...any), r *Results) {
	m := r.Roofline
	p("Roofline, measured at the start of this run on %d threads: FMA peak %.1f GFLOP/s (%s; one core's by its CPU time × threads; %.1f reached by the wall clock), memory bandwidth %.1f GB/s (STREAM triad; copy %.1f) over %d MiB arrays: machine balance %.1f FLOP/byte.",
		m.Threads, m.PeakGFLOPS, m.ISA, m.WallGFLOPS, m.TriadGBps, m.CopyGBps, m.ArrayMiB, m.Balance())
	p("")
	p("Each stage against it (FLOP and bytes per cell are a model of the work, account.go: the nets' Linear layers, the embedding rows gathered, written back and updated by sparse Adam, dense Adam's whole table per step where the report names adam; TracIn is a forward pass and a last-layer dot per cell and checkpoint; predict is CoSTCo's training and its values of the new cells; read_split counts the .bin file's bytes). A stage whose FLOP/byte is below the balance is bound by memory; the last column is the fraction of that roof it reached.")
	p("")
	p("| cells | stage | seconds | cells/s | FLOP/cell | GFLOP/s | of peak | B/cell | GB/s | of bandwidth | FLOP/byte | bound: reached |")
	p("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	pct := func(v float64) string {
		if v == 0 {
			return ""
		}
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	opt := func(v float64, prec int) string {
		if v == 0 {
			return ""
		}
		return num(v, prec)
	}
	for _, run := range r.Runs {
		for _, s := range run.Account {
			bound := ""
			if s.Bound != "" {
				bound = s.Bound + ": " + pct(s.OfBound)
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", cellsName(run.Cells), s.Name, secs(s.Seconds), rate(s.CellsPerS),
				opt(s.FlopPerCell, 0), opt(s.GFLOPS, 1), pct(s.OfPeak), opt(s.BytePerCell, 0), opt(s.GBps, 2), pct(s.OfBandwidth), opt(s.Intensity, 2), bound)
		}
	}
	p("")
}
