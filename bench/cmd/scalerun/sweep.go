package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// The entity sweep (issue 20): the same number of cells in tensors whose
// modes hold ever more entities, so that a stage whose cost grows with the
// entities (rather than the cells) shows as seconds per cell growing.

// SweepRun is one tensor of the entity sweep.
type SweepRun struct {
	Dims     []int `json:"dims"`
	Entities int   `json:"entities"`
	Run
	// Optimizers are the embedding optimisers the report says each model
	// used (auto chooses by the table's size).
	Optimizers map[string]string `json:"embedding_optimizers,omitempty"`
	// Repeats are the runs of this tensor (-sweep-repeats); Run is their
	// median (see medianRun).
	Repeats []Run `json:"repeats,omitempty"`
	// TableBytesPerEntity is what one entity costs in every model's
	// table and optimiser state on the backend: its embedding row in the
	// parameters, Adam's two moments and its gradient row (4 float32 per
	// element), and in a run of more than one epoch a copy of the best
	// epoch's parameters (nn.Train keeps that copy only once a later epoch
	// is about to change them), for each model the run trains (the MLP
	// with E = layers[0]/N, CoSTCo with E = R).
	TableBytesPerEntity float64 `json:"table_bytes_per_entity"`
	// RSSBytesPerEntity is the growth of the peak RSS over the growth of
	// the entities from the sweep's first tensor to this one.
	RSSBytesPerEntity float64 `json:"rss_bytes_per_entity,omitempty"`
}

// parseSweep reads "d,d,d;d,d,d;…".
func parseSweep(s string) ([][]int, error) {
	var out [][]int
	for _, f := range strings.Split(s, ";") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		d, err := parseInts(f)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// ensureSweepData returns the cached .bin of the sweep tensor with the
// given dims and cells, making it with dainx synth when it is missing or
// its sidecar says it was made otherwise.
func ensureSweepData(dainx, dir string, dims []int, n int) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	stem := filepath.Join(dir, fmt.Sprintf("entities-%s-%s", strings.ReplaceAll(joinInts(dims), ",", "x"), cellsName(n)))
	bin, side := stem+".bin", stem+".json"
	want := synthRecord{Dims: dims, Cells: n, Seed: 1, Made: fmt.Sprintf("dainx synth -dims %s -nnz %d -seed 1 -output %s", joinInts(dims), n, filepath.Base(bin))}
	if b, err := os.ReadFile(side); err == nil {
		var got synthRecord
		if json.Unmarshal(b, &got) == nil && fmt.Sprint(got) == fmt.Sprint(want) && exists(bin) {
			return bin, nil
		}
	}
	logf("making %s (%s)", bin, want.Made)
	cmd := exec.Command(dainx, "synth", "-dims", joinInts(dims), "-nnz", fmt.Sprint(n), "-seed", "1", "-output", bin)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("dainx synth: %v", err)
	}
	b, _ := json.MarshalIndent(want, "", "  ")
	return bin, os.WriteFile(side, append(b, '\n'), 0o644)
}

// sweepGrowth names every stage whose seconds per cell grow by more than
// 1.5× from the sweep's first tensor (fewest entities) to its last.
func sweepGrowth(runs []SweepRun) []string {
	if len(runs) < 2 {
		return nil
	}
	a, b := runs[0], runs[len(runs)-1]
	if a.Error != "" || b.Error != "" {
		return nil
	}
	var keys []string
	for k := range b.Seconds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		va, vb := a.Seconds[k], b.Seconds[k]
		if va <= 0 || vb <= 0 {
			continue
		}
		if f := vb / va; f > 1.5 {
			out = append(out, fmt.Sprintf("%s: %.3g s at %d entities, %.3g s at %d (×%.2f per cell)", k, va, a.Entities, vb, b.Entities, f))
		}
	}
	return out
}

// tableBytesPerEntity is SweepRun.TableBytesPerEntity for a run whose
// report lists the models in optimizers, with the MLP's embedding width
// mlpE and CoSTCo's rank.
func tableBytesPerEntity(optimizers map[string]string, mlpE, rank, epochs int) float64 {
	copies := 4.0
	if epochs > 1 {
		copies++
	}
	b := 0.0
	if _, ok := optimizers["mlp"]; ok {
		b += copies * 4 * float64(mlpE)
	}
	if _, ok := optimizers["costco"]; ok {
		b += copies * 4 * float64(rank)
	}
	return b
}

// medianRun returns the run whose total seconds are the median of runs
// (the lower middle one of an even count), with each stage's seconds
// replaced by that stage's median over the runs and the largest peak RSS
// of any. The first run of a tensor is often slower than the next (the
// kernel has to find huge pages for the tables first); the median keeps
// one such run from deciding a stage's ratio. A failed run is returned
// as it is.
func medianRun(runs []Run) Run {
	for _, r := range runs {
		if r.Error != "" {
			return r
		}
	}
	med := func(f func(Run) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[(len(v)-1)/2]
	}
	total := med(func(r Run) float64 { return r.Seconds["total"] })
	var out Run
	for _, r := range runs {
		if r.Seconds["total"] == total {
			out = r
			break
		}
	}
	out.Seconds = map[string]float64{}
	for k := range runs[0].Seconds {
		out.Seconds[k] = med(func(r Run) float64 { return r.Seconds[k] })
	}
	for _, r := range runs {
		out.MaxRSSMiB = max(out.MaxRSSMiB, r.MaxRSSMiB)
		out.BPerCell = max(out.BPerCell, r.BPerCell)
	}
	out.setRates()
	return out
}

// sweepMarkdown renders the sweep's tables.
func sweepMarkdown(p func(string, ...any), r *Results) {
	if len(r.Sweep) == 0 {
		return
	}
	p("## Entity sweep")
	p("")
	p("%s cells each, `dainx augment -input entities-….bin %s %s` (`dainx synth -seed 1`), the same cells' count with ever more entities: a stage whose seconds grow here grows with the entities, not the cells. Each tensor is run %d times; the seconds are each stage's median, the peak RSS the largest.",
		cellsName(r.SweepCells), strings.Join(r.Args, " "), strings.Join(r.SweepArgs, " "), max(1, len(r.Sweep[0].Repeats)))
	p("")
	p("| dims | entities | embedding optimizers | peak RSS | table + optimiser B/entity | RSS growth B/entity | train cells/s | wall |")
	p("|---|---:|---|---:|---:|---:|---:|---:|")
	for _, s := range r.Sweep {
		var opts []string
		for _, k := range []string{"mlp", "costco"} {
			if v, ok := s.Optimizers[k]; ok {
				opts = append(opts, k+" "+v)
			}
		}
		growth := ""
		if s.RSSBytesPerEntity != 0 {
			growth = num(s.RSSBytesPerEntity, 0)
		}
		if s.Error != "" {
			p("| %s | %d | | | | | | %s |", joinInts(s.Dims), s.Entities, oneLine(s.Error))
			continue
		}
		p("| %s | %d | %s | %s | %.0f | %s | %s | %s |", joinInts(s.Dims), s.Entities, strings.Join(opts, ", "), mib(s.MaxRSSMiB), s.TableBytesPerEntity, growth, rate(s.TrainCPS), secs(s.Wall))
	}
	p("")
	p("Seconds per stage, and each against the sweep's first tensor:")
	p("")
	p("| entities | %s |", strings.Join(stages, " | "))
	p("|---:|%s", strings.Repeat("---:|", len(stages)))
	for _, s := range r.Sweep {
		if s.Error != "" {
			continue
		}
		row := make([]string, len(stages))
		for i, st := range stages {
			row[i] = secs(s.Seconds[st])
			if f := r.Sweep[0].Seconds[st]; f > 0 && s.Entities != r.Sweep[0].Entities {
				row[i] += fmt.Sprintf(" (×%.2f)", s.Seconds[st]/f)
			}
		}
		p("| %d | %s |", s.Entities, strings.Join(row, " | "))
	}
	p("")
	if len(r.SweepGrowth) == 0 {
		p("No stage's seconds per cell grow by more than 1.5× from the fewest to the most entities.")
	} else {
		p("Stages whose seconds per cell grow by more than 1.5× from the fewest to the most entities:")
		p("")
		for _, l := range r.SweepGrowth {
			p("- %s", l)
		}
	}
	p("")
}
