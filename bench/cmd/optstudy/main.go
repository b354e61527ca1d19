// Command optstudy compares the embedding optimisers (issue 20): `dainx
// augment` with -embedding-optimizer adam and sparse-adam on the same
// splits (the same -seed) of each tensor, then paired t-tests of the test
// RMSE before augmentation (Θ trained on the training cells alone) and
// after (DAIN's retraining), with Holm's correction over every tensor and
// both quantities, into OUT/summary.json and OUT/README.md.
//
// Each run's report is kept as OUT/TENSOR[-LABEL]/OPTIMIZER-seedS.json; a
// run whose report exists is not run again, so the study can be stopped
// and continued, or extended with more seeds.
//
// Usage (from the repository root):
//
//	go build -o dainx ./cmd/dainx
//	go run ./bench/cmd/optstudy -out bench/results/embedding-optimizer [flags]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dainx/dainx/eval"
)

var optimizers = []string{"adam", "sparse-adam"}

// quantities are the report fields compared.
var quantities = []string{"rmse_before", "rmse_after"}

type config struct {
	tensor, label, path string
	args                []string
}

func main() {
	var (
		dainx   = flag.String("dainx", "./dainx", "the dainx `binary`")
		data    = flag.String("data", "../shared/data", "`directory` of the tensors")
		tensors = flag.String("tensors", "movielens_latest_small,jodie_wikipedia,foursquare_nyc,movingmnist100", "comma-separated tensor `names` (NAME.tsv.gz in -data)")
		seeds   = flag.Int("seeds", 10, "`number` of paired splits (seeds 1…n)")
		epochs  = flag.Int("epochs", 20, "-epochs of every run")
		pat     = flag.Int("patience", 5, "-patience of every run")
		width   = flag.Int("width", 16, "embedding `width` E of the small configuration (layers N·E,64,32)")
		paper   = flag.String("paper-layers", "", "comma-separated tensor `names` also run with the paper's default layers (label paper-layers)")
		out     = flag.String("out", "bench/results/embedding-optimizer", "results `directory`")
		summary = flag.Bool("summary-only", false, "only summarise the reports already in -out")
	)
	flag.Parse()
	var cfgs []config
	for _, t := range split(*tensors) {
		order := 3
		if t == "movingmnist100" {
			order = 4
		}
		cfgs = append(cfgs, config{tensor: t, path: filepath.Join(*data, t+".tsv.gz"),
			args: []string{"-layers", fmt.Sprintf("%d,64,32", order**width)}})
	}
	for _, t := range split(*paper) {
		cfgs = append(cfgs, config{tensor: t, label: "paper-layers", path: filepath.Join(*data, t+".tsv.gz")})
	}
	common := []string{"-backend", "cpu", "-quiet", "-ratio", "0.5", "-epochs", strconv.Itoa(*epochs), "-patience", strconv.Itoa(*pat)}
	if !*summary {
		for s := 1; s <= *seeds; s++ {
			for _, c := range cfgs {
				for _, opt := range optimizers {
					rep := reportPath(*out, c, opt, s)
					if _, err := os.Stat(rep); err == nil {
						continue
					}
					if err := os.MkdirAll(filepath.Dir(rep), 0o755); err != nil {
						fatalf("%v", err)
					}
					args := append(append([]string{"augment", "-input", c.path, "-seed", strconv.Itoa(s), "-embedding-optimizer", opt, "-report", rep + ".tmp"}, common...), c.args...)
					t0 := time.Now()
					cmd := exec.Command(*dainx, args...)
					cmd.Stderr = os.Stderr
					if err := cmd.Run(); err != nil {
						fatalf("%s %s: %v", *dainx, strings.Join(args, " "), err)
					}
					if err := os.Rename(rep+".tmp", rep); err != nil {
						fatalf("%v", err)
					}
					fmt.Fprintf(os.Stderr, "optstudy: %s seed %d %s: %.0f s\n", name(c), s, opt, time.Since(t0).Seconds())
				}
			}
		}
	}
	summarise(*out, cfgs, *seeds, common)
}

func name(c config) string {
	if c.label == "" {
		return c.tensor
	}
	return c.tensor + "-" + c.label
}

func reportPath(out string, c config, opt string, seed int) string {
	return filepath.Join(out, name(c), fmt.Sprintf("%s-seed%d.json", opt, seed))
}

// Row is one paired comparison: sparse-adam minus adam.
type Row struct {
	Tensor    string     `json:"tensor"`
	Quantity  string     `json:"quantity"`
	N         int        `json:"n"`
	Adam      float64    `json:"adam_mean"`
	Sparse    float64    `json:"sparse_adam_mean"`
	Diff      float64    `json:"diff"`
	Lo        float64    `json:"diff_lo"`
	Hi        float64    `json:"diff_hi"`
	P         float64    `json:"p"`
	PHolm     float64    `json:"p_holm"`
	TrainSecs [2]float64 `json:"train_seconds_adam_sparse,omitempty"`
}

func summarise(out string, cfgs []config, seeds int, common []string) {
	var rows []Row
	for _, c := range cfgs {
		reps := map[string][]map[string]any{}
		for _, opt := range optimizers {
			for s := 1; s <= seeds; s++ {
				b, err := os.ReadFile(reportPath(out, c, opt, s))
				if err != nil {
					continue
				}
				var r map[string]any
				if err := json.Unmarshal(b, &r); err != nil {
					fatalf("%v", err)
				}
				r["seed"] = float64(s)
				reps[opt] = append(reps[opt], r)
			}
		}
		// Pairs: the seeds both optimisers ran.
		bySeed := map[float64]map[string]map[string]any{}
		for opt, rs := range reps {
			for _, r := range rs {
				s := r["seed"].(float64)
				if bySeed[s] == nil {
					bySeed[s] = map[string]map[string]any{}
				}
				bySeed[s][opt] = r
			}
		}
		for _, q := range quantities {
			var a, b []float64
			var ta, tb float64
			for _, pair := range bySeed {
				ra, rb := pair["adam"], pair["sparse-adam"]
				if ra == nil || rb == nil {
					continue
				}
				a, b = append(a, ra[q].(float64)), append(b, rb[q].(float64))
				ta += ra["seconds"].(map[string]any)["total"].(float64)
				tb += rb["seconds"].(map[string]any)["total"].(float64)
			}
			if len(a) < 2 {
				continue
			}
			ma, _ := eval.MeanStd(a)
			mb, _ := eval.MeanStd(b)
			d, lo, hi := eval.MeanCI(b, a, 0.95)
			_, _, p := eval.Paired(b, a)
			rows = append(rows, Row{Tensor: name(c), Quantity: q, N: len(a), Adam: ma, Sparse: mb, Diff: d, Lo: lo, Hi: hi, P: p,
				TrainSecs: [2]float64{ta / float64(len(a)), tb / float64(len(a))}})
		}
	}
	ps := make([]float64, len(rows))
	for i, r := range rows {
		ps[i] = r.P
	}
	for i, h := range eval.Holm(ps) {
		rows[i].PHolm = h
	}
	js, _ := json.MarshalIndent(map[string]any{
		"about":  "sparse-adam minus adam test RMSE over the paired splits (same -seed: same split, initialisation and shuffles); negative: sparse-adam is better; 95% t interval; two-sided paired t-test; Holm's correction over every row",
		"common": common, "rows": rows, "made": time.Now().UTC().Format(time.RFC3339),
	}, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "summary.json"), append(js, '\n'), 0o644); err != nil {
		fatalf("%v", err)
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# Embedding optimiser: sparse-adam against adam\n\n")
	fmt.Fprintf(&md, "`dainx augment %s -layers N·16,64,32` (paper-layers: the default layers) with `-embedding-optimizer adam` and `sparse-adam` on the same splits (`-seed 1…n`). Test RMSE before augmentation (Θ on the training cells) and after (DAIN's retraining); diff = sparse-adam − adam (negative: sparse-adam better), 95%% t interval, two-sided paired t-test, Holm over every row. **Bold**: Holm p < 0.01.\n\n", strings.Join(common, " "))
	fmt.Fprintf(&md, "| tensor | RMSE | n | adam | sparse-adam | diff (95%% CI) | p | p Holm | mean run seconds adam / sparse-adam |\n|---|---|---:|---:|---:|---|---:|---:|---|\n")
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Tensor < rows[j].Tensor })
	for _, r := range rows {
		h := fmt.Sprintf("%.3g", r.PHolm)
		if r.PHolm < 0.01 {
			h = "**" + h + "**"
		}
		fmt.Fprintf(&md, "| %s | %s | %d | %.4f | %.4f | %+.4f (%+.4f, %+.4f) | %.3g | %s | %.0f / %.0f |\n",
			r.Tensor, strings.TrimPrefix(r.Quantity, "rmse_"), r.N, r.Adam, r.Sparse, r.Diff, r.Lo, r.Hi, r.P, h, r.TrainSecs[0], r.TrainSecs[1])
	}
	if err := os.WriteFile(filepath.Join(out, "README.md"), []byte(md.String()), 0o644); err != nil {
		fatalf("%v", err)
	}
	os.Stdout.WriteString(md.String())
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "optstudy: "+format+"\n", a...)
	os.Exit(1)
}
