package dain

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
)

// Graphs is Config.Graphs: whether training replays each step as a graph
// on a backend that records them (CUDA; nn.TrainConfig.Eager is its
// opposite). Its pointer is a flag.Value (dainx -graphs), so a bad value
// is refused where it is parsed.
type Graphs string

// The values of Graphs; "" means GraphsOn.
const (
	GraphsOn  Graphs = "on"
	GraphsOff Graphs = "off"
)

// String returns g as the flag takes it.
func (g *Graphs) String() string { return string(*g) }

// Set parses on or off.
func (g *Graphs) Set(s string) error {
	switch v := Graphs(s); v {
	case GraphsOn, GraphsOff:
		*g = v
		return nil
	}
	return fmt.Errorf("want %s or %s", GraphsOn, GraphsOff)
}

// Exchange is Config.Exchange: how a run spread over processes (RunOn)
// sums the gradients of an embedding table that is not sharded. Its
// pointer is a flag.Value (dainx augment -exchange).
type Exchange string

// The values of Exchange; "" means ExchangeAuto.
const (
	// ExchangeAuto chooses per model by the table's rows and the rows a
	// step touches (nn.ChooseExchange).
	ExchangeAuto Exchange = "auto"
	// ExchangeDense sums the whole table's gradient (an all-reduce).
	ExchangeDense Exchange = "dense"
	// ExchangeSparse exchanges only the rows a step touched.
	ExchangeSparse Exchange = "sparse"
)

// String returns x as the flag takes it.
func (x *Exchange) String() string { return string(*x) }

// Set parses auto, dense or sparse.
func (x *Exchange) Set(s string) error {
	switch v := Exchange(s); v {
	case ExchangeAuto, ExchangeDense, ExchangeSparse:
		*x = v
		return nil
	}
	return fmt.Errorf("want %s, %s or %s", ExchangeAuto, ExchangeDense, ExchangeSparse)
}

// graphs returns c.Graphs with "" resolved (the table's Unset, on).
func (c *Config) graphs() Graphs { return resolved[Graphs](*c, "Graphs") }

// settingNamed is settingOf, set by init: the table's help texts name
// the Choice lists (Help(Influences)) whose builders call the resolvers,
// and a direct call would make Settings' initialisation depend on itself.
var settingNamed func(field string) (Setting, bool)

func init() { settingNamed = settingOf }

// resolved returns c's value of the setting of Config field field, the
// table's Unset in the stead of the zero value (Setting.Resolved): the
// resolvers (c.split(), c.values(), …) read each default from settings()
// rather than repeat it.
func resolved[T any](c Config, field string) T {
	s, ok := settingNamed(field)
	if !ok {
		panic("dain: Settings names no Config field " + field)
	}
	return s.Resolved(c).(T)
}

// exchange returns the exchange of a model's unsharded table of rows
// rows, trained in batches of batch cells of an order-N tensor:
// c.Exchange, or with auto ("" too) nn.ChooseExchange's choice.
func (c *Config) exchange(rows, batch, order int) string {
	if x := c.Exchange; x == ExchangeDense || x == ExchangeSparse {
		return string(x)
	}
	return nn.ChooseExchange(rows, batch, order)
}

// reportSettings sets each field of rep that a setting names
// (Setting.Report, the field's JSON key) to c's value of the setting, its
// Unset in the stead of the zero value.
func (c *Config) reportSettings(rep *Report) {
	r := reflect.ValueOf(rep).Elem()
	for _, s := range Settings() {
		if s.Report == "" {
			continue
		}
		f := r.FieldByIndex(reportField(s.Report))
		f.Set(reflect.ValueOf(s.Resolved(*c)).Convert(f.Type()))
	}
}

// reportField returns the index of Report's field of JSON key key.
func reportField(key string) []int {
	t := reflect.TypeFor[Report]()
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == key {
			return t.Field(i).Index
		}
	}
	panic("dain: Settings names no Report field of key " + key)
}

// checkSettings reports a Graphs or Exchange value that is not one of
// theirs (a Config made in Go; the flags refuse them when parsed).
func (c *Config) checkSettings() error {
	if g := c.Graphs; g != "" && g != GraphsOn && g != GraphsOff {
		return fmt.Errorf("graphs %q: want %s or %s", g, GraphsOn, GraphsOff)
	}
	if x := c.Exchange; x != "" && x != ExchangeAuto && x != ExchangeDense && x != ExchangeSparse {
		return fmt.Errorf("exchange %q: want %s, %s or %s", x, ExchangeAuto, ExchangeDense, ExchangeSparse)
	}
	return nil
}

// newReport returns the report of a run of c on backend be over a tensor
// of the given dims and nnz cells, split into counts (train, validation,
// test) with fingerprint sp, before anything is trained: the run's shape
// and every setting the report records, resolved (auto and "" made the
// effective values). It is the one place where a setting is copied from
// Config to Report, for Run and RunOn alike. The automatic embedding
// optimisers are said through logf.
func (c *Config) newReport(be compute.Backend, dims []int, nnz int, counts [3]int, sp splitPrint, logf func(string, ...any)) Report {
	rep := Report{
		Dims: append([]int(nil), dims...), NNZ: nnz, Backend: be.Name(), Device: be.Device(),
		NTrain: counts[0], NVal: counts[1], NTest: counts[2],
	}
	c.reportSettings(&rep)
	if c.Influence == "in-run" {
		rep.InfluenceEvery, rep.InfluenceValSample = c.influenceEvery(), min(c.influenceValSample(), rep.NVal)
	}
	if t, ok := be.(interface{ GemmTune() string }); ok {
		rep.GemmTune = t.GemmTune()
	}
	rep.EmbeddingOptimizer, rep.EmbeddingOptimizers = c.embeddingOptimizerSetting(), c.EmbeddingOptimizers(dims, logf)
	rep.SplitFingerprint = sp.String()
	rep.NoTest = rep.NTest == 0
	return rep
}

// Setting describes one setting of Config once, for every place that
// names it: the flag that sets it (cmd/internal/cli registers the flags
// of the settings whose Bind it names, with Help), its name in a
// checkpoint's header, its key in eval's provenance (runs.json's "base")
// and in the report, what its zero value stands for, and the value runs
// had before it existed. Settings lists them; a setting added to Config
// adds its entry there, and the flag, the checkpoint, the provenance and
// the report follow from it.
type Setting struct {
	// Field is the name of the Config field.
	Field string
	// Flag is its flag of dainx augment (and the libdainx option, the
	// Python keyword), without the dash; "" when it has none.
	Flag string
	// Bind is the group of flags whose cmd/internal/cli function
	// registers Flag, with Help as its usage and the field's value as
	// its default (BindTraining, BindMethod, BindInRun, BindValues); ""
	// when the flag is registered by hand (it sets another variable, or
	// its default differs by command).
	Bind, Help string
	// Ck is its name in a checkpoint's header when that is not the flag
	// ("-" and Flag): settings checkpointed before they had a flag keep
	// their Go name there. "" means "-"+Flag, or Field without a flag.
	Ck string
	// Key is its key in eval's provenance ("" when not recorded), and
	// OmitEmpty leaves it out there when it is the zero value.
	Key       string
	OmitEmpty bool
	// Report is the key of the Report field that newReport fills with its
	// value (with Unset resolved); "" when the report records it by hand
	// or not at all.
	Report string
	// Unset is the value the field's zero value stands for ("" keyed for
	// Split): what the provenance and the report record, and what the
	// checkpoint and the provenance compare, in its stead. nil: the zero
	// value is a value of its own.
	Unset any
	// Legacy is the value every run had before the setting existed: a
	// checkpoint or provenance record that lacks the setting reads as
	// made with it. nil when every record has the setting.
	Legacy any
}

// CkName returns s's name in a checkpoint's header.
func (s Setting) CkName() string {
	switch {
	case s.Ck != "":
		return s.Ck
	case s.Flag != "":
		return "-" + s.Flag
	}
	return s.Field
}

// Type returns the type of s's Config field.
func (s Setting) Type() reflect.Type {
	f, ok := reflect.TypeFor[Config]().FieldByName(s.Field)
	if !ok {
		panic("dain: Settings names no Config field " + s.Field)
	}
	return f.Type
}

// Of returns c's field of s, settable.
func (s Setting) Of(c *Config) reflect.Value {
	v := reflect.ValueOf(c).Elem().FieldByName(s.Field)
	if !v.IsValid() {
		panic("dain: Settings names no Config field " + s.Field)
	}
	return v
}

// as returns x (Unset, Legacy) as a value of s's field's type.
func (s Setting) as(x any) reflect.Value {
	t := s.Type()
	if x == nil {
		return reflect.Zero(t)
	}
	return reflect.ValueOf(x).Convert(t)
}

// Resolved returns c's value of s with Unset in the stead of the zero
// value, as the field's type.
func (s Setting) Resolved(c Config) any {
	v := s.Of(&c)
	if s.Unset != nil && v.IsZero() {
		return s.as(s.Unset).Interface()
	}
	return v.Interface()
}

// Resolve returns x (a value of s's field's type, or nil for none) with
// Unset in the stead of the zero value.
func (s Setting) Resolve(x any) any {
	if s.Unset != nil && (x == nil || reflect.ValueOf(x).IsZero()) {
		return s.as(s.Unset).Interface()
	}
	return x
}

// LegacyValue returns Legacy as a value of s's field's type, and false
// when s has none.
func (s Setting) LegacyValue() (any, bool) {
	if s.Legacy == nil {
		return nil, false
	}
	return s.as(s.Legacy).Interface(), true
}

// SettingByKey returns the setting that eval's provenance records as key.
func SettingByKey(key string) (Setting, bool) {
	for _, s := range Settings() {
		if s.Key == key && key != "" {
			return s, true
		}
	}
	return Setting{}, false
}

// formatSetting formats a setting's value x as a checkpoint's header
// records it: floats in their shortest round-tripping form, lists
// comma-separated.
func formatSetting(x reflect.Value) string {
	switch x.Kind() {
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(x.Float(), 'g', -1, 64)
	case reflect.Slice:
		parts := make([]string, x.Len())
		for k := range parts {
			parts[k] = fmt.Sprint(x.Index(k).Interface())
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(x.Interface())
}

// Settings returns every setting of Config (the table settings() in
// dain.go), in the order eval's provenance records them (the settings it
// does not record last). It is a variable only so that a test can add a
// setting; programs never change it.
var Settings = sync.OnceValue(settings)

// AugWeight is Config.AugWeight: how much a new cell counts against an
// observed one when the final model Θ′ is fitted (step 5). Its pointer is
// a flag.Value (dainx -aug-weight): a number w > 0, learn or auto.
//
// For the bayes-fm final model a weight w gives the new cells the noise
// precision α_new = w·α (bayes.Config.NewWeight; α the observed cells'),
// and AugWeightLearn draws α_new in every Gibbs sweep under its own
// Gamma prior (bayes.Config.NewLearn). For the Adam-trained final models
// (mlp, fm, hybrid, and an ensemble's members) a weight w multiplies each
// new cell's squared error in the batch loss (nn.TrainConfig.NewWeight:
// its gradient is w·(2/B)·(ŷ − y)); they cannot learn it, and auto gives
// them 1. 1 counts the new cells as observations, as every dainx before
// the setting did, bit for bit.
type AugWeight float64

// Special values of AugWeight.
const (
	// AugWeightAuto, the zero value (the default): 1 for the Adam-trained
	// final models, DefaultBayesAugWeight for bayes-fm.
	AugWeightAuto AugWeight = 0
	// AugWeightLearn draws bayes-fm's α_new (bayes-fm only; 1 for an
	// Adam-trained member of an ensemble or candidate of auto).
	AugWeightLearn AugWeight = -1
)

// DefaultBayesAugWeight is what AugWeightAuto gives the bayes-fm final
// model: a new cell counts as a tenth of an observation (α_new = α/10).
// Chosen by the study in docs/augment-best-model.md: on MovieLens, new
// cells as full observations raised bayes-fm's test RMSE, learned α_new
// trusted them most (the chain fits its own new cells closely) and raised
// it most, and a weight of about a tenth lowered it.
const DefaultBayesAugWeight = 0.1

// String returns w as the flag takes it.
func (w *AugWeight) String() string {
	switch *w {
	case AugWeightAuto:
		return "auto"
	case AugWeightLearn:
		return "learn"
	}
	return strconv.FormatFloat(float64(*w), 'g', -1, 64)
}

// Set parses auto, learn or a weight in (0, bayes.MaxNewWeight].
func (w *AugWeight) Set(s string) error {
	switch s {
	case "auto":
		*w = AugWeightAuto
		return nil
	case "learn":
		*w = AugWeightLearn
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0 && v <= bayes.MaxNewWeight) {
		return fmt.Errorf("want auto, learn or a weight in (0, %g]", float64(bayes.MaxNewWeight))
	}
	*w = AugWeight(v)
	return nil
}

// MarshalText writes w as the flag takes it (auto, learn or the weight),
// as JSON records it.
func (w AugWeight) MarshalText() ([]byte, error) { return []byte(w.String()), nil }

// UnmarshalText parses what MarshalText writes (Set).
func (w *AugWeight) UnmarshalText(b []byte) error { return w.Set(string(b)) }

// check reports a weight that is none of the accepted values (a Config
// built in code rather than by Set).
func (w AugWeight) check() error {
	if w == AugWeightAuto || w == AugWeightLearn || (w > 0 && w <= bayes.MaxNewWeight) {
		return nil
	}
	return fmt.Errorf("aug weight %v: want auto, learn or a weight in (0, %g]", float64(w), float64(bayes.MaxNewWeight))
}
