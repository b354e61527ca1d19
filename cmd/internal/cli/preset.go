package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/dainx/dainx/dain"
)

// Preset is a named set of flag values (-preset), applied to every flag of
// the set that the command line does not give.
type Preset struct {
	Name  string
	Doc   string
	Flags [][2]string // flag name (without the dash) and value
}

// Presets are the accepted -preset names; the first is the default.
//
// paper is the paper's setup (DAIN with an MLP Θ′ retrained on train ∪ the
// new cells valued by CoSTCo): dainx's defaults, kept as the default
// because it is what the paper's results and every saved model (-model-out,
// dainx predict) rest on. accurate is the most accurate completion measured
// (issues 37 and 51, docs/bayes-fm.md, docs/augment-best-model.md): the
// final model chosen on each split by validation RMSE among Θ's MLP, the
// fm, the hybrid and the Bayesian factorization machine (-final-model
// auto), and the new cells valued by the ensemble of those candidates
// (-predictor auto); -model-out saves whichever final model auto chose
// (a bayes-fm as its posterior samples).
var Presets = []Preset{
	{"paper", "the paper's setup: an MLP Θ′ retrained on train ∪ the new cells, valued by CoSTCo (the defaults)", nil},
	{"accurate", "the most accurate completion measured: -final-model auto -predictor auto (on each split the final model of lowest validation RMSE — Θ's MLP, the fm, the hybrid or the Bayesian factorization machine fitted by Gibbs sampling — with the new cells valued by the ensemble of those candidates, stacked on the validation cells; bayes-fm counts a new cell as a tenth of an observation, -aug-weight auto; -model-out saves the chosen model)",
		[][2]string{{"final-model", "auto"}, {"predictor", "auto"}}},
}

// BindPreset registers -preset.
func BindPreset(fs *flag.FlagSet, p *string) {
	var b strings.Builder
	b.WriteString("named `set` of settings, each applied unless its flag is given:")
	for _, p := range Presets {
		fmt.Fprintf(&b, "\n    %s: %s", p.Name, p.Doc)
	}
	*p = Presets[0].Name
	fs.StringVar(p, "preset", *p, b.String())
}

// ApplyPreset sets on fs every flag of the preset name that fs's command
// line did not give (so that -method's settings, applied after, treat them
// as given); a preset's setting that fs has no flag for (dainx eval has no
// -predictor: its methods choose) is set in c directly. It returns a usage
// error for an unknown name.
func ApplyPreset(fs *flag.FlagSet, c *dain.Config, name string) error {
	for _, p := range Presets {
		if p.Name != name {
			continue
		}
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for _, kv := range p.Flags {
			if given[kv[0]] {
				continue
			}
			set := fs
			if fs.Lookup(kv[0]) == nil {
				set = flag.NewFlagSet("preset", flag.ContinueOnError)
				var layers IntList
				var method string
				BindTraining(set, c, &layers)
				BindMethod(set, c, &method)
			}
			if err := set.Set(kv[0], kv[1]); err != nil {
				return fmt.Errorf("%w: -preset %s: -%s %s: %v", ErrUsage, name, kv[0], kv[1], err)
			}
		}
		return nil
	}
	var names []string
	for _, p := range Presets {
		names = append(names, p.Name)
	}
	return fmt.Errorf("%w: -preset %q: want %s", ErrUsage, name, strings.Join(names, " or "))
}
