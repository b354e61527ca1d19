package eval

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/internal/outtx"
)

// Cell summarises the runs of one method at one ratio.
type Cell struct {
	N        int     `json:"n"`
	Mean     float64 `json:"rmse_mean"`
	Std      float64 `json:"rmse_std"`
	P        float64 `json:"p_vs_dain"` // two-sided Welch p-value against dain at this ratio; NaN for dain itself or without dain
	T        float64 `json:"t_vs_dain"`
	PPaired  float64 `json:"p_paired_vs_dain"` // two-sided paired t-test against dain over the same splits
	TPaired  float64 `json:"t_paired_vs_dain"`
	Seconds  float64 `json:"seconds_total_mean"`
	Seconds2 float64 `json:"seconds_total_std"`
	// Diag is, per mode, the mean over the runs of their importance
	// diagnostics (Run.Diagnostics); nil when no run has them.
	Diag []DiagMean `json:"-"`
}

// DiagMean is the mean of one mode's importance diagnostics
// (dain.ModeDiagnostics) over the runs of a method at a ratio.
type DiagMean struct {
	// Spearman is the mean of the runs' defined correlations (NaN when no
	// run defines one); N is the number of runs.
	Spearman, TopShareNew, TopShareTrain float64
	N                                    int
}

// Summary holds the cells of every method and ratio.
type Summary struct {
	Methods []string
	Ratios  []float64
	Cells   map[string]map[float64]Cell
	// Comparisons are every method against each of References present,
	// Holm-corrected (Results.Compare).
	Comparisons []Comparison
	// Plain are the baseline runs (Spec.Baselines) per final model, in
	// their order: each model on the training cells alone.
	Plain []PlainCell
	// Finals counts the splits on which -final-model auto chose each
	// final model (nil without auto).
	Finals map[string]int
}

// PlainCell is one final model's no-augmentation baseline over the
// splits: test RMSE mean ± std and mean seconds.
type PlainCell struct {
	Model   string  `json:"model"`
	N       int     `json:"n"`
	Mean    float64 `json:"rmse_mean"`
	Std     float64 `json:"rmse_std"`
	Seconds float64 `json:"seconds_mean"`
}

// Summarise computes mean ± standard deviation of the test RMSE and of the
// total seconds per method and ratio, the Welch t-test of each method
// against "dain" at the same ratio (the paper's test; ratio 0 is shared, so
// its p-value is 1), and the paired t-test over the repeats, which compares
// the two methods on the same splits and so removes the split-to-split
// variance both share.
func (r *Results) Summarise() Summary {
	runs := append([]Run(nil), r.Runs...)
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Repeat < runs[j].Repeat })
	s := Summary{Methods: r.Spec.Methods, Cells: map[string]map[float64]Cell{}, Comparisons: r.Compare()}
	rmse := map[string]map[float64][]float64{}
	secs := map[string]map[float64][]float64{}
	diags := map[string]map[float64][][]dain.ModeDiagnostics{}
	ratios := map[float64]bool{}
	plain := map[string][]Run{}
	seenRepeat := map[int]bool{}
	for _, run := range runs {
		if run.Final != "" && !seenRepeat[run.Repeat] {
			seenRepeat[run.Repeat] = true
			if s.Finals == nil {
				s.Finals = map[string]int{}
			}
			s.Finals[run.Final]++
		}
		if run.Method == Plain {
			if plain[run.Model] == nil {
				s.Plain = append(s.Plain, PlainCell{Model: run.Model})
			}
			plain[run.Model] = append(plain[run.Model], run)
			continue
		}
		if rmse[run.Method] == nil {
			rmse[run.Method], secs[run.Method] = map[float64][]float64{}, map[float64][]float64{}
		}
		if diags[run.Method] == nil {
			diags[run.Method] = map[float64][][]dain.ModeDiagnostics{}
		}
		if run.Diagnostics != nil {
			diags[run.Method][run.Ratio] = append(diags[run.Method][run.Ratio], run.Diagnostics)
		}
		rmse[run.Method][run.Ratio] = append(rmse[run.Method][run.Ratio], run.RMSE)
		secs[run.Method][run.Ratio] = append(secs[run.Method][run.Ratio], run.SecTotal)
		ratios[run.Ratio] = true
	}
	for q := range ratios {
		s.Ratios = append(s.Ratios, q)
	}
	sort.Float64s(s.Ratios)
	for i, p := range s.Plain {
		var x, sec []float64
		for _, run := range plain[p.Model] {
			x, sec = append(x, run.RMSE), append(sec, run.SecTotal)
		}
		s.Plain[i].N = len(x)
		s.Plain[i].Mean, s.Plain[i].Std = MeanStd(x)
		s.Plain[i].Seconds, _ = MeanStd(sec)
	}
	for _, m := range s.Methods {
		s.Cells[m] = map[float64]Cell{}
		for _, q := range s.Ratios {
			x := rmse[m][q]
			c := Cell{N: len(x), P: math.NaN(), T: math.NaN(), PPaired: math.NaN(), TPaired: math.NaN()}
			c.Mean, c.Std = MeanStd(x)
			c.Seconds, c.Seconds2 = MeanStd(secs[m][q])
			c.Diag = diagMeans(diags[m][q])
			if d := rmse["dain"][q]; m != "dain" && d != nil {
				c.T, _, c.P = Welch(x, d)
				c.TPaired, _, c.PPaired = Paired(x, d)
			}
			s.Cells[m][q] = c
		}
	}
	return s
}

// Load reads the runs.json that WriteDir wrote in dir, with any
// ProvenanceVersion up to the current one, and returns the results
// (methods in their original order) and the recorded provenance.
func Load(dir string) (*Results, Provenance, error) {
	b, err := os.ReadFile(filepath.Join(dir, "runs.json"))
	if err != nil {
		return nil, Provenance{}, err
	}
	var f struct {
		Config  Provenance `json:"config"`
		Seconds float64    `json:"seconds"`
		Runs    []Run      `json:"runs"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, Provenance{}, fmt.Errorf("%s: %w", filepath.Join(dir, "runs.json"), err)
	}
	r := &Results{Runs: f.Runs, Seconds: f.Seconds}
	seen := map[string]bool{}
	for _, run := range f.Runs {
		if !seen[run.Method] && run.Method != Plain {
			seen[run.Method] = true
			r.Spec.Methods = append(r.Spec.Methods, run.Method)
		}
	}
	return r, f.Config, nil
}

// WriteDir writes the evaluation into dir (created if missing), all files
// or none (a failure leaves the files of the previous write): runs.csv and runs.json (every run, and p), summary.json and
// summary.md (the table and p-values, headed by p.About, with p),
// comparisons.json (Results.Compare: paired differences with 95%
// intervals and Holm-corrected p-values against each reference method),
// rmse.png (test RMSE vs ratio, paper Fig. 6), runtime.png (seconds vs
// ratio, Fig. 8) and a forest plot of the comparisons with each reference
// at each ratio (forest-REF-PCT.png, e.g. forest-degree-50.png). p is recorded with the current ProvenanceVersion and its
// training configuration's Effective values (what "auto" chose).
func (r *Results) WriteDir(dir string, p Provenance) error {
	p.Version = ProvenanceVersion
	p.Base = p.Base.Effective(p.Dims)
	config, about := p, p.About()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	s := r.Summarise()
	files := []struct {
		name string
		fill func(io.Writer) error
	}{
		{"runs.csv", r.writeCSV},
		{"runs.json", func(w io.Writer) error {
			return writeJSON(w, map[string]any{"config": config, "seconds": r.Seconds, "runs": r.Runs})
		}},
		{"summary.json", func(w io.Writer) error { return writeJSON(w, s.jsonable()) }},
		{"summary.md", func(w io.Writer) error { return s.writeMarkdown(w, about, config) }},
		{"comparisons.json", func(w io.Writer) error { return writeJSON(w, comparisonsJSON(s.Comparisons)) }},
		{"rmse.png", func(w io.Writer) error {
			return s.plot(w, "Test RMSE vs augmentation", "test RMSE", func(c Cell) (float64, float64) { return c.Mean, c.Std })
		}},
		{"runtime.png", func(w io.Writer) error {
			return s.plot(w, "Runtime vs augmentation", "seconds per run (total)", func(c Cell) (float64, float64) { return c.Seconds, c.Seconds2 })
		}},
	}
	for _, f := range families(s.Comparisons) {
		files = append(files, struct {
			name string
			fill func(io.Writer) error
		}{forestName(f.ref, f.ratio), func(w io.Writer) error { return forest(w, f) }})
	}
	// One transaction (internal/outtx): every file staged, then all
	// renamed into place with runs.json, the record -resume reads, last;
	// a failure leaves the previous files as they were.
	tx := outtx.New()
	defer tx.Abort()
	for _, f := range files {
		reg := tx.File
		if f.name == "runs.json" {
			reg = tx.Report
		}
		out, err := reg(filepath.Join(dir, f.name))
		if err == nil {
			err = out.Write(f.fill)
		}
		if err != nil {
			return err
		}
	}
	return tx.Commit()
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func f64(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func (r *Results) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"repeat", "seed", "method", "ratio", "n_aug", "rmse", "best_epoch", "seconds_fixed", "seconds_augment", "seconds_retrain", "seconds_total"}
	// The model column exists when a plain baseline does (files of
	// evaluations without -baselines keep their columns).
	models := slices.ContainsFunc(r.Runs, func(x Run) bool { return x.Model != "" })
	if models {
		head = append(head, "model")
	}
	cw.Write(head)
	for _, x := range r.Runs {
		row := []string{strconv.Itoa(x.Repeat), strconv.FormatUint(x.Seed, 10), x.Method, f64(x.Ratio), strconv.Itoa(x.NAug),
			f64(x.RMSE), strconv.Itoa(x.BestEpoch), f64(x.SecFixed), f64(x.SecAugment), f64(x.SecRetrain), f64(x.SecTotal)}
		if models {
			row = append(row, x.Model)
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// jsonable replaces NaN (which JSON lacks) by null.
func (s Summary) jsonable() any {
	type cell struct {
		Method string   `json:"method"`
		Ratio  float64  `json:"ratio"`
		N      int      `json:"n"`
		Mean   float64  `json:"rmse_mean"`
		Std    float64  `json:"rmse_std"`
		P      *float64 `json:"p_vs_dain"`
		T      *float64 `json:"t_vs_dain"`
		PP     *float64 `json:"p_paired_vs_dain"`
		TP     *float64 `json:"t_paired_vs_dain"`
		Sec    float64  `json:"seconds_total_mean"`
		Model  string   `json:"model,omitempty"` // the final model of a plain baseline
		diagJSON
	}
	opt := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	var out []cell
	for _, m := range s.Methods {
		for _, q := range s.Ratios {
			c := s.Cells[m][q]
			out = append(out, cell{m, q, c.N, c.Mean, c.Std, opt(c.P), opt(c.T), opt(c.PPaired), opt(c.TPaired), c.Seconds, "", diagToJSON(c.Diag)})
		}
	}
	for _, p := range s.Plain {
		out = append(out, cell{Method: Plain, Model: p.Model, N: p.N, Mean: p.Mean, Std: p.Std, Sec: p.Seconds})
	}
	return out
}

func (s Summary) writeMarkdown(w io.Writer, about string, config any) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# dainx eval\n\n%s\n\n", strings.TrimSpace(about))
	header := func(title string) {
		fmt.Fprintf(&b, "## %s\n\n| method |", title)
		for _, q := range s.Ratios {
			fmt.Fprintf(&b, " %g%% |", 100*q)
		}
		b.WriteString("\n|---|")
		for range s.Ratios {
			b.WriteString("---|")
		}
		b.WriteString("\n")
	}
	best := map[float64]string{}
	for _, q := range s.Ratios {
		lo := math.Inf(1)
		for _, m := range s.Methods {
			if c := s.Cells[m][q]; c.Mean < lo {
				lo, best[q] = c.Mean, m
			}
		}
	}
	n := 0
	if len(s.Methods) > 0 && len(s.Ratios) > 0 {
		n = s.Cells[s.Methods[0]][s.Ratios[len(s.Ratios)-1]].N
	}
	header(fmt.Sprintf("Test RMSE, mean ± std over %d repeats (lowest in bold)", n))
	for _, m := range s.Methods {
		fmt.Fprintf(&b, "| %s |", m)
		for _, q := range s.Ratios {
			c := s.Cells[m][q]
			v := fmt.Sprintf("%.4f ± %.4f", c.Mean, c.Std)
			if best[q] == m && q > 0 {
				v = "**" + v + "**"
			}
			fmt.Fprintf(&b, " %s |", v)
		}
		b.WriteString("\n")
	}
	if s.Cells["dain"] != nil && len(s.Methods) > 1 {
		for _, test := range []struct {
			title string
			pt    func(Cell) (float64, float64)
		}{
			{"Two-sided Welch t-test against dain (the paper's test): p-value (t; t > 0 means a higher RMSE than dain)", func(c Cell) (float64, float64) { return c.P, c.T }},
			{"Two-sided paired t-test against dain over the same splits: p-value (t)", func(c Cell) (float64, float64) { return c.PPaired, c.TPaired }},
		} {
			b.WriteString("\n")
			header(test.title)
			for _, m := range s.Methods {
				if m == "dain" {
					continue
				}
				fmt.Fprintf(&b, "| %s |", m)
				for _, q := range s.Ratios {
					p, t := test.pt(s.Cells[m][q])
					if math.IsNaN(p) {
						b.WriteString(" – |")
						continue
					}
					fmt.Fprintf(&b, " %.3g (%+.2f) |", p, t)
				}
				b.WriteString("\n")
			}
		}
	}
	if len(s.Finals) > 0 {
		b.WriteString("\nFinal model chosen by `-final-model auto` (validation RMSE on the training cells alone), splits:")
		for _, k := range slices.Sorted(maps.Keys(s.Finals)) {
			fmt.Fprintf(&b, " %s %d;", k, s.Finals[k])
		}
		b.WriteString("\n")
	}
	if len(s.Plain) > 0 {
		fmt.Fprintf(&b, "\n## Each final model on the training cells alone (no augmentation), mean ± std\n\n| model | splits | test RMSE | seconds |\n|---|---|---|---|\n")
		for _, p := range s.Plain {
			fmt.Fprintf(&b, "| %s | %d | %.4f ± %.4f | %.1f |\n", p.Model, p.N, p.Mean, p.Std, p.Seconds)
		}
	}
	s.writeDiagnostics(&b)
	writeComparisons(&b, s.Comparisons)
	b.WriteString("\n")
	header("Seconds per run (shared models + augmentation + retraining), mean")
	for _, m := range s.Methods {
		fmt.Fprintf(&b, "| %s |", m)
		for _, q := range s.Ratios {
			fmt.Fprintf(&b, " %.1f |", s.Cells[m][q].Seconds)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n![test RMSE vs ratio](rmse.png)\n![runtime vs ratio](runtime.png)\n\n## Configuration\n\n```json\n")
	cj, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return err
	}
	b.Write(cj)
	b.WriteString("\n```\n")
	_, err = w.Write(b.Bytes())
	return err
}
