package config

import (
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/dainx/dainx/checkpoint/rundir"
	"github.com/dainx/dainx/nn"
)

// What the settings are to a run's checkpoint (package checkpoint/rundir):
// the settings its files record, the value a setting's value resolves to
// when a resumed run's are compared with a file's, and the value of a
// setting that a file written before it existed lacks.

// CkFields lists every setting of c (every field but Progress,
// OnEpoch, Keep and MaxMemory, which change what a run reports or whether
// it starts, not what it computes, so a field added to Config is covered
// without a change here), by its Setting.CkName (the flag of `dainx
// augment` that sets it, or else its Go name), and the backend. Values are
// formatted exactly (floats in their shortest round-tripping form).
func (c Config) CkFields(backend string) []rundir.Field {
	var out []rundir.Field
	v := reflect.ValueOf(c)
	for i := 0; i < v.NumField(); i++ {
		f, x := v.Type().Field(i), v.Field(i)
		if f.Name == "Progress" || f.Name == "OnEpoch" || f.Name == "Keep" || f.Name == "MaxMemory" || !f.IsExported() {
			continue
		}
		name := f.Name
		if s, ok := SettingOf(f.Name); ok {
			name = s.CkName()
		}
		if f.Name == "AugWeight" && c.FinalModelName() != FinalAuto {
			// What the weight is for this final model (auto for mlp and
			// 1 compute alike): 1 in every checkpoint before the setting.
			x = reflect.ValueOf(c.AugWeight.Resolve(c.FinalModelName()))
		}
		out = append(out, rundir.Field{Name: name, Value: FormatSetting(x)})
	}
	return append(out, rundir.Field{Name: "-backend", Value: backend})
}

// CkLegacy returns the value that every run of a dainx that predates
// setting name (its name in rundir.Header.Config) had, and false for a setting
// every checkpoint records: a file without it reads as made with that
// value (not with today's default). Settings' Legacy gives it.
func CkLegacy(name string) (string, bool) {
	if s, ok := SettingOfCk(name); ok {
		if v, ok := s.LegacyValue(); ok {
			return FormatSetting(reflect.ValueOf(v)), true
		}
	}
	return "", false
}

// CkEffective returns the function that gives the value of setting name
// that a run of cfg on an input of dims over ranks processes (0: one)
// resolves value to (rundir.Run.Effective): an automatic embedding
// optimizer the one it picks for each model on this input ("adam", or
// "mlp X, costco Y" when they differ), a zero value its Setting's Unset
// (the empty split keyed, …), no -layers the default layers of the
// input's order, and -shard-tables off in a run of one process (which
// ignores it), the bayes-fm settings nothing in a run that uses no
// bayes-fm, -graphs nothing (replay changes no bit) and -exchange nothing
// in a run of one process.
func (cfg Config) CkEffective(dims []int, ranks int) func(name, value string) string {
	return func(name, value string) string {
		if strings.HasPrefix(name, "-bayes-") && !cfg.UsesBayesFM() {
			return "" // the bayes-fm settings do not matter to this run
		}
		if name == "-fm-rank" && !cfg.UsesFM() {
			return "" // the fm rank does not matter to this run
		}
		if name == "-influence-every" || name == "-influence-val-sample" {
			if cfg.Influence != "in-run" {
				return "" // in-run's settings do not matter to this run
			}
		}
		switch name {
		case "-graphs":
			return "" // replayed steps give the eager steps' bits: either resumes the other
		case "-exchange":
			if ranks == 0 {
				return "" // one process exchanges nothing
			}
		case "-embedding-optimizer":
			if value != "" && value != nn.Auto {
				return value
			}
			auto := cfg
			auto.EmbeddingOptimizer = nn.Auto
			m := auto.EmbeddingOptimizers(dims, nil)
			kinds := slices.Sorted(maps.Keys(m))
			if same := slices.IndexFunc(kinds, func(k string) bool { return m[k] != m[kinds[0]] }) < 0; same && len(kinds) > 0 {
				return m[kinds[0]]
			}
			parts := make([]string, len(kinds))
			for i, k := range kinds {
				parts[i] = k + " " + m[k]
			}
			return strings.Join(parts, ", ")
		case "-layers":
			if value == "" { // the default layers of the input's order
				parts := []string{}
				for _, w := range nn.DefaultLayers(len(dims)) {
					parts = append(parts, strconv.Itoa(w))
				}
				return strings.Join(parts, ",")
			}
		case "ShardTables":
			if ranks == 0 {
				return string(ShardTablesOff)
			}
		}
		if s, ok := SettingOfCk(name); ok && s.Unset != nil && value == FormatSetting(reflect.Zero(s.Type())) {
			return FormatSetting(s.As(s.Unset)) // the zero value stands for Unset
		}
		return value
	}
}

// CkRun is what a checkpoint directory is told of a run of cfg on the
// backend named backend (of device, in words) over an input of dims, on
// ranks processes (0: one), logging with logf (rundir.Run).
func (cfg Config) CkRun(backend, device string, logf func(string, ...any), dims []int, ranks int) rundir.Run {
	what, flags := cfg.Keep.FromSteps14()
	return rundir.Run{Config: cfg.CkFields(backend), Device: device, Ranks: ranks,
		Effective: cfg.CkEffective(dims, ranks), Legacy: CkLegacy, Unkept: what, UnkeptFlags: flags, Logf: logf}
}
