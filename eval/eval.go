// Package eval runs the paper's evaluation (DAIN §5: effectiveness against
// baselines, ablations; SPEC "Baselines" and protocol) on one tensor: for
// every repeat one split, shared by all methods; for every method and
// augmentation ratio the test RMSE of the downstream MLP trained on train ∪
// augmentation; then mean ± standard deviation per method and ratio, the
// two-sided Welch t-test of each method against DAIN, CSV/JSON records,
// a Markdown summary and PNG plots (paper Fig. 6: test RMSE vs ratio;
// Fig. 8: runtime vs ratio).
package eval

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/tensor"
)

// VariantNames returns the method names eval accepts (dain.Variants), in
// their list order.
func VariantNames() []string {
	out := make([]string, len(dain.Variants))
	for i, v := range dain.Variants {
		out[i] = v.Name
	}
	return out
}

// Spec describes an evaluation.
type Spec struct {
	Methods []string  // names of dain.Variants; "dain" is the reference of the t-tests
	Ratios  []float64 // augmentation ratios; 0 is the shared no-augmentation baseline
	Repeats int       // splits; repeat r uses seed Base.Seed + r
	// Baselines are final-model kinds (dain.FinalModels names; auto is
	// -preset accurate's choice on each split) each trained on every
	// split's training cells alone: a Run of method Plain with its Model
	// set, at ratio 0, so that a study shows the best plain completion
	// beside the augmentations.
	Baselines []string
	Base      dain.Config // hyper-parameters shared by every run (Method etc. are overridden)
	// Progress, if not nil, receives a progress bar over the runs.
	Progress io.Writer
	// Resume, if not nil, holds an earlier, interrupted evaluation of the
	// same spec: a repeat all of whose runs it holds with the seed that
	// repeat uses is taken from it instead of being run again, and its
	// seconds count towards the total.
	Resume *Results
	// AfterRepeat, if not nil, is called after each repeat that was run
	// with the results so far (repeats in order, Seconds up to now); an
	// error from it ends the evaluation with that error.
	AfterRepeat func(*Results) error
	// Only, if not nil, picks the repeats (0-based) this process runs; the
	// others are left out of the results (dainx eval -dist mpi spreads the
	// repeats over the ranks this way).
	Only func(repeat int) bool
}

// Validate reports the first problem of s.
func (s *Spec) Validate() error {
	if len(s.Methods) == 0 {
		return fmt.Errorf("no methods")
	}
	seen := map[string]bool{}
	for _, m := range s.Methods {
		if _, ok := dain.VariantNamed(m); !ok {
			return fmt.Errorf("unknown method %q: want some of %s", m, strings.Join(VariantNames(), ", "))
		}
		if seen[m] {
			return fmt.Errorf("method %q given twice", m)
		}
		seen[m] = true
	}
	if len(s.Ratios) == 0 {
		return fmt.Errorf("no ratios")
	}
	seenB := map[string]bool{}
	for _, b := range s.Baselines {
		if _, ok := dain.FinalModelNamed(b); !ok {
			return fmt.Errorf("unknown baseline model %q: want some of %s", b, strings.Join(BaselineNames(), ", "))
		}
		if seenB[b] {
			return fmt.Errorf("baseline model %q given twice", b)
		}
		seenB[b] = true
	}
	for _, r := range s.Ratios {
		if err := dain.CheckRatio(r); err != nil {
			return err
		}
	}
	if s.Repeats < 1 {
		return fmt.Errorf("repeats %d: want ≥ 1", s.Repeats)
	}
	b := s.Base
	if b.TestFrac == 0 {
		return fmt.Errorf("test fraction 0: an evaluation compares test RMSEs and needs a test set (-test-frac 0 is dainx augment's production mode)")
	}
	return b.Validate()
}

// Plain is the method name of the baseline runs (Spec.Baselines): a final
// model trained on the training cells alone, named by Run.Model.
const Plain = "plain"

// BaselineNames are the accepted Spec.Baselines values.
func BaselineNames() []string {
	var out []string
	for _, f := range dain.FinalModels {
		out = append(out, f.Name)
	}
	return out
}

// Run is one trained downstream model.
type Run struct {
	Repeat int    `json:"repeat"`
	Seed   uint64 `json:"seed"`
	Method string `json:"method"`
	Model  string `json:"model,omitempty"` // the final model of a Plain run
	// Final is the final model -final-model auto chose on the run's split
	// (empty without auto).
	Final string `json:"final_model,omitempty"`
	// BayesClamp is the clamp rule of the run's bayes-fm final model
	// (samples or mean: what -bayes-clamp auto chose on its validation
	// cells); empty when the final model is not bayes-fm.
	BayesClamp bayes.ClampRule `json:"bayes_clamp,omitempty"`
	Ratio      float64         `json:"ratio"`
	NAug       int             `json:"n_aug"`
	RMSE       float64         `json:"rmse"`
	BestEpoch  int             `json:"best_epoch"`
	SecFixed   float64         `json:"seconds_fixed"`   // shared models this method uses (Θ, TracIn, importance, Θ_p)
	SecAugment float64         `json:"seconds_augment"` // drawing cells and predicting values
	SecRetrain float64         `json:"seconds_retrain"` // training the downstream MLP
	SecTotal   float64         `json:"seconds_total"`   // the sum: what one `dainx augment` of this method costs
	// Diagnostics compare, per mode, the entity importance the run's new
	// cells were drawn from with the entities' training-cell counts
	// (dain.Experiment.ImportanceDiagnostics); absent for a method that
	// draws from none and at ratio 0.
	Diagnostics []dain.ModeDiagnostics `json:"diagnostics,omitempty"`
}

// Results are every run of an evaluation.
type Results struct {
	Spec    Spec  `json:"-"`
	Runs    []Run `json:"runs"`
	Seconds float64
}

// Evaluate runs s on x with backend be. Every method at ratio 0 shares the
// repeat's downstream model trained on train alone. It returns ctx's error
// when cancelled and the first error of a run otherwise.
func Evaluate(ctx context.Context, x *tensor.COO, s Spec, be compute.Backend) (*Results, error) {
	return EvaluateOn(ctx, cluster.Local{}, &tensor.Part{Cells: x, NNZ: x.NNZ()}, s, be)
}

// EvaluateOn is Evaluate with every run spread over the processes of cl,
// each calling it with its part sh of the tensor and the same spec (see
// dain.RunOn): every process returns the same runs (test RMSEs and
// new-cell counts over every process; times are this process's).
// Evaluate is EvaluateOn on cluster.Local.
func EvaluateOn(ctx context.Context, cl cluster.Cluster, sh *tensor.Part, s Spec, be compute.Backend) (*Results, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	res := &Results{Spec: s}
	ratios := append([]float64(nil), s.Ratios...)
	sort.Float64s(ratios)
	positive := 0
	for _, r := range ratios {
		if r > 0 {
			positive++
		}
	}
	var bar *progressbar.ProgressBar
	if s.Progress != nil {
		total := s.Repeats * (1 + len(s.Baselines) + len(s.Methods)*positive)
		bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(s.Progress),
			progressbar.OptionSetDescription("dainx eval"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionFullWidth(),
			progressbar.OptionThrottle(500*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(s.Progress) }),
		)
	}
	step := func(desc string) {
		if bar != nil {
			bar.Describe(desc)
			bar.Add(1)
		}
	}
	var before float64
	if s.Resume != nil {
		before = s.Resume.Seconds
	}
	for r := 0; r < s.Repeats; r++ {
		base := s.Base
		base.Seed = s.Base.Seed + uint64(r)
		base.Progress = nil
		if s.Only != nil && !s.Only(r) {
			continue
		}
		if runs := resumed(s.Resume, r+1, base.Seed, s.Methods, ratios, s.Baselines); runs != nil {
			res.Runs = append(res.Runs, runs...)
			if bar != nil {
				bar.Describe(fmt.Sprintf("repeat %d: resumed", r+1))
				bar.Add(1 + len(s.Baselines) + len(s.Methods)*positive)
			}
			continue
		}
		runs, err := evaluateRepeat(ctx, cl, sh, s, base, r, ratios, be, step)
		if err != nil {
			return nil, err
		}
		res.Runs = append(res.Runs, runs...)
		res.Seconds = before + time.Since(start).Seconds()
		if s.AfterRepeat != nil {
			if err := s.AfterRepeat(res); err != nil {
				return nil, err
			}
		}
	}
	if bar != nil {
		bar.Finish()
	}
	res.Seconds = before + time.Since(start).Seconds()
	return res, nil
}

// resumed returns the runs of repeat (1-based) with seed for every method
// and ratio from prev, or nil unless prev holds all of them exactly once.
func resumed(prev *Results, repeat int, seed uint64, methods []string, ratios []float64, baselines []string) []Run {
	if prev == nil {
		return nil
	}
	type key struct {
		m string
		q float64
	}
	var plain []Run
	for _, b := range baselines {
		i := slices.IndexFunc(prev.Runs, func(run Run) bool {
			return run.Repeat == repeat && run.Seed == seed && run.Method == Plain && run.Model == b
		})
		if i < 0 {
			return nil
		}
		plain = append(plain, prev.Runs[i])
	}
	found := map[key]Run{}
	for _, run := range prev.Runs {
		if run.Repeat != repeat || run.Seed != seed || run.Method == Plain {
			continue
		}
		k := key{run.Method, run.Ratio}
		if _, dup := found[k]; dup {
			return nil
		}
		found[k] = run
	}
	var out []Run
	for _, m := range methods {
		for _, q := range ratios {
			run, ok := found[key{m, q}]
			if !ok {
				return nil
			}
			out = append(out, run)
		}
	}
	return append(out, plain...)
}

func evaluateRepeat(ctx context.Context, cl cluster.Cluster, sh *tensor.Part, s Spec, base dain.Config, r int, ratios []float64, be compute.Backend, step func(string)) ([]Run, error) {
	dims := sh.Cells.Dims
	cfgs := make([]dain.Config, len(s.Methods))
	for i, m := range s.Methods {
		v, _ := dain.VariantNamed(m)
		cfgs[i] = base
		v.Set(&cfgs[i])
	}
	e, err := dain.NewExperimentOn(cl, sh, base, be, cfgs...)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	rmse0, res0, sec0, err := e.Downstream(ctx, &tensor.COO{Dims: dims}, "")
	if err != nil {
		return nil, err
	}
	_, clamp0 := e.BayesChoice()
	step(fmt.Sprintf("repeat %d: baseline", r+1))
	var runs []Run
	resolved, auto, err := e.Resolve(ctx, base)
	if err != nil {
		return nil, err
	}
	chosen := ""
	if auto != nil {
		chosen = auto.FinalModel
	}
	for _, b := range s.Baselines {
		rmse, res, sec := rmse0, res0, sec0 // the final model's own is the ratio-0 run
		own := b == resolved.FinalModelName() || b == dain.FinalAuto && base.FinalModelName() == dain.FinalAuto
		if !own {
			rmse, res, sec, err = e.Plain(ctx, b)
		}
		if err != nil {
			return nil, fmt.Errorf("repeat %d, baseline %s: %w", r+1, b, err)
		}
		runs = append(runs, Run{Repeat: r + 1, Seed: base.Seed, Method: Plain, Model: b, RMSE: rmse, BestEpoch: res.BestEpoch, SecRetrain: sec, SecTotal: sec})
		step(fmt.Sprintf("repeat %d: %s alone", r+1, b))
	}
	nTrain := e.NTrain()
	for i, m := range s.Methods {
		for _, ratio := range ratios {
			run := Run{Repeat: r + 1, Seed: base.Seed, Method: m, Ratio: ratio}
			if ratio == 0 {
				run.RMSE, run.BestEpoch, run.SecRetrain = rmse0, res0.BestEpoch, sec0
				run.SecTotal, run.BayesClamp = sec0, clamp0
				runs = append(runs, run)
				continue
			}
			n := int(ratio * float64(nTrain))
			aug, st, err := e.Augment(ctx, cfgs[i], n)
			if err != nil {
				return nil, fmt.Errorf("repeat %d, %s, ratio %g: %w", r+1, m, ratio, err)
			}
			run.NAug = e.GlobalNNZ(aug)
			run.Diagnostics = e.ImportanceDiagnostics(cfgs[i], aug)
			run.SecAugment = st.Sample + st.Predict
			run.SecFixed = e.SharedSeconds(cfgs[i]).Total()
			rmse, res, sec, err := e.Retrain(ctx, cfgs[i], aug, n, "")
			if err != nil {
				return nil, fmt.Errorf("repeat %d, %s, ratio %g: %w", r+1, m, ratio, err)
			}
			run.RMSE, run.BestEpoch, run.SecRetrain = rmse, res.BestEpoch, sec
			run.SecTotal = run.SecFixed + run.SecAugment + run.SecRetrain
			_, run.BayesClamp = e.BayesChoice()
			runs = append(runs, run)
			step(fmt.Sprintf("repeat %d: %s %.0f%%", r+1, m, 100*ratio))
		}
	}
	for i := range runs {
		if runs[i].Method != Plain {
			runs[i].Final = chosen
		}
		if runs[i].Method == Plain || resolved.FinalModelName() != dain.FinalBayesFM {
			runs[i].BayesClamp = ""
		}
	}
	return runs, nil
}
