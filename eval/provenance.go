package eval

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// ProvenanceVersion is the version of Provenance that WriteDir records.
// Version 0 is the untyped configuration written before versions existed
// (its "base" keyed by dain.Config's Go field names); Load reads both.
const ProvenanceVersion = 1

// Provenance is what an evaluation's runs.json ("config") and summary.md
// record about how it was made: the tensor, the methods, the ratios, the
// training configuration, and the command or commands. -resume and -merge
// compare two of them field by field (Compatible).
type Provenance struct {
	Version int    `json:"version"`
	Input   string `json:"input"`
	Dims    []int  `json:"dims"`
	NNZ     int    `json:"nnz"`
	Backend string `json:"backend"`
	Device  string `json:"device"`
	// Methods and Ratios are those of the Spec.
	Methods []string  `json:"methods"`
	Ratios  []float64 `json:"ratios"`
	// Baselines are the Spec's plain final models (none before they existed).
	Baselines []string `json:"baselines,omitempty"`
	// Repeats is the number of finished repeats; RepeatsRequested, when
	// more, the number asked for (a partial evaluation).
	Repeats          int      `json:"repeats"`
	RepeatsRequested int      `json:"repeats_requested,omitempty"`
	Base             Training `json:"base"`
	// Command is the command line of an evaluation that ran; a merge has
	// Commands (each source's), MergedFrom (their directories) and Seeds
	// (every split's seed) instead.
	Command    string   `json:"command,omitempty"`
	Commands   []string `json:"commands,omitempty"`
	MergedFrom []string `json:"merged_from,omitempty"`
	Seeds      []uint64 `json:"seeds,omitempty"`
	Seconds    float64  `json:"seconds"`
	// Legacy lists the training settings (by JSON key) that the record
	// lacked because the dainx that wrote it predates them; Base holds
	// for each the value that dainx used (dain.Setting's Legacy). Not
	// written.
	Legacy []string `json:"-"`
}

// Training is the recorded training configuration: every setting of
// dain.Settings that has a Key (dain.Config without its progress writer
// and callbacks), in that order. Every setting but the seed takes part in
// Compatible. TrainingOf, the legacy values of a record that lacks a
// setting, Effective and Compatible follow dain.Settings, so a setting
// added there needs no change here.
type Training struct {
	Ratio           float64            `json:"ratio"`
	Seed            uint64             `json:"seed"`
	Layers          []int              `json:"layers"`
	Epochs          int                `json:"epochs"`
	Batch           int                `json:"batch"`
	Patience        int                `json:"patience"`
	LR              float64            `json:"lr"`
	TestFrac        float64            `json:"test_frac"`
	ValFrac         float64            `json:"val_frac"`
	EvalBatch       int                `json:"eval_batch"`
	Method          dain.MethodName    `json:"method"`
	Model           string             `json:"model"`
	Predictor       string             `json:"predictor"`
	Influence       dain.InfluenceKind `json:"influence"`
	InfluenceLayers dain.LayerSet      `json:"influence_layers"`
	Entity          dain.EntityKind    `json:"entity"`
	Sign            dain.SignKind      `json:"sign"`
	Temperature     float64            `json:"temperature"`
	Mix             float64            `json:"mix"`
	Rank            int                `json:"rank"`
	Channels        int                `json:"channels"`
	CoSTCoLR        float64            `json:"costco_lr"`
	CoSTCoBatch     int                `json:"costco_batch"`
	CPLambda        float64            `json:"cp_lambda"`
	CPSweeps        int                `json:"cp_sweeps"`
	// EmbeddingOptimizer: records made before it existed used adam.
	EmbeddingOptimizer string `json:"embedding_optimizer"`
	// Split: records made before it existed used the legacy split.
	Split dain.SplitKind `json:"split"`
	// FinalModel and its bayes-fm settings: records made before they
	// existed retrained an MLP.
	FinalModel   string                `json:"final_model"`
	BayesRank    int                   `json:"bayes_rank"`
	BayesSamples int                   `json:"bayes_samples"`
	BayesBurnIn  int                   `json:"bayes_burnin"`
	BayesPriors  dain.BayesPriorGroups `json:"bayes_priors"`
	// BayesClamp: records made before it existed clamped each sample.
	BayesClamp bayes.ClampRule `json:"bayes_clamp"`
	// BayesStop: records made before it existed ran every sweep.
	BayesStop int `json:"bayes_stop"`
	// FMRank and L2: records made before they existed trained no fm and
	// had no L2 penalty.
	FMRank int     `json:"fm_rank"`
	L2     float64 `json:"l2"`
	// Values and Oracle: records made before they existed valued new
	// cells by each method's own (predictor) and had no generator.
	Values dain.ValueSource  `json:"values"`
	Oracle *tensor.Generator `json:"oracle,omitempty"`
	// InfluenceEvery and InfluenceValSample: -influence in-run's k and
	// validation sample (methods dain-in-run, dain-in-run-signed); records
	// made before they existed used the defaults.
	InfluenceEvery     int `json:"influence_every"`
	InfluenceValSample int `json:"influence_val_sample"`

	// More holds the recorded settings (dain.Settings with a Key) that
	// have no field above, by key: the settings added since (a field above
	// is a key runs.json had by then). They are written after the fields,
	// in the order of dain.Settings.
	More map[string]any `json:"-"`
}

// TrainingOf returns the recorded form of c: each setting's value, its
// Unset in the stead of the zero value.
func TrainingOf(c dain.Config) Training {
	var t Training
	for _, s := range dain.Settings() {
		if s.Key != "" {
			t.set(s.Key, s.Resolved(c))
		}
	}
	return t
}

// trainingField returns the index of Training's field of JSON key key, or
// -1 when key is not a field (a setting in More).
var trainingField = func() func(string) int {
	at := map[string]int{}
	t := reflect.TypeFor[Training]()
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "-" {
			at[name] = i
		}
	}
	return func(key string) int {
		if i, ok := at[key]; ok {
			return i
		}
		return -1
	}
}()

// set sets t's setting key to v (a value of the dain.Config field's type).
func (t *Training) set(key string, v any) {
	if i := trainingField(key); i >= 0 {
		f := reflect.ValueOf(t).Elem().Field(i)
		if v == nil {
			f.SetZero()
		} else {
			f.Set(reflect.ValueOf(v))
		}
		return
	}
	if t.More == nil {
		t.More = map[string]any{}
	}
	t.More[key] = v
}

// get returns t's setting key; nil for a setting in More that t lacks.
func (t Training) get(key string) any {
	if i := trainingField(key); i >= 0 {
		return reflect.ValueOf(t).Field(i).Interface()
	}
	return t.More[key]
}

// MarshalJSON writes t's fields, then the settings of t.More in the order
// of dain.Settings.
func (t Training) MarshalJSON() ([]byte, error) {
	type plain Training // without this method
	b, err := json.Marshal(plain(t))
	if err != nil || len(t.More) == 0 {
		return b, err
	}
	b = b[:len(b)-1] // the closing brace
	for _, s := range dain.Settings() {
		v, ok := t.More[s.Key]
		if !ok || s.Key == "" || trainingField(s.Key) >= 0 || (s.OmitEmpty && (v == nil || reflect.ValueOf(v).IsZero())) {
			continue
		}
		k, _ := json.Marshal(s.Key)
		x, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("training setting %s: %w", s.Key, err)
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(append(b, k...), ':'), x...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads t's fields and the settings of More it records,
// each as its dain.Config field's type; it leaves a setting b lacks as it
// was (a legacy value paperVariant set).
func (t *Training) UnmarshalJSON(b []byte) error {
	type plain Training // without this method
	if err := json.Unmarshal(b, (*plain)(t)); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	for _, s := range dain.Settings() {
		raw, ok := keys[s.Key]
		if !ok || s.Key == "" || trainingField(s.Key) >= 0 {
			continue
		}
		v := reflect.New(s.Type())
		if err := json.Unmarshal(raw, v.Interface()); err != nil {
			return fmt.Errorf("training setting %s: %w", s.Key, err)
		}
		t.set(s.Key, v.Elem().Interface())
	}
	return nil
}

// paperVariant sets every setting with a legacy value (dain.Setting's
// Legacy: the value every dainx before it used) whose key has is false to
// that value, and returns those keys: a record without the key was made
// with that value (and reads so), whatever the default is now. A setting
// left out of a record when empty (OmitEmpty) is never legacy.
func paperVariant(t *Training, has func(key string) bool) []string {
	var legacy []string
	for _, s := range dain.Settings() {
		v, ok := s.LegacyValue()
		if s.Key == "" || s.OmitEmpty || !ok || has(s.Key) {
			continue
		}
		t.set(s.Key, v)
		legacy = append(legacy, s.Key)
	}
	return legacy
}

// Effective returns t with every setting that a run resolves by itself
// replaced by what it resolves to on a tensor of the given dims: the
// embedding optimizer (auto or empty: nn.ChooseEmbeddingOptimizer's
// choice for the MLP and for CoSTCo; "adam" when both take adam, else
// "mlp X, costco Y"), the split (empty: keyed) and the layers (none:
// nn.DefaultLayers of the tensor's order), and every zero value whose
// setting has an Unset that (the empty split keyed, …). Two
// configurations with the same Effective train alike.
func (t Training) Effective(dims []int) Training {
	t.More = maps.Clone(t.More)
	for _, s := range dain.Settings() {
		if s.Key != "" && s.Unset != nil {
			t.set(s.Key, s.Resolve(t.get(s.Key)))
		}
	}
	if !t.config().UsesBayesFM() { // the bayes-fm settings do not matter
		t.BayesRank, t.BayesSamples, t.BayesBurnIn, t.BayesPriors, t.BayesClamp, t.BayesStop = 0, 0, 0, "", "", 0
	}
	if !t.config().UsesFM() { // the fm rank does not matter
		t.FMRank = 0
	}
	if c := t.config(); c.FinalModelName() != dain.FinalAuto {
		// What the weight is for this final model (the Adam-trained ones
		// take only 1, auto's value for them).
		t.set("aug_weight", c.AugWeight.Resolve(c.FinalModelName()))
	}
	if t.Layers == nil && len(dims) > 0 {
		t.Layers = nn.DefaultLayers(len(dims))
	}
	if o := t.EmbeddingOptimizer; (o == "" || o == nn.Auto) && len(dims) > 0 {
		c := t.config()
		m, _ := c.EmbeddingOptimizerFor(nn.KindMLP, dims)
		cc, _ := c.EmbeddingOptimizerFor(nn.KindCoSTCo, dims)
		if t.EmbeddingOptimizer = m; cc != m {
			t.EmbeddingOptimizer = "mlp " + m + ", costco " + cc
		}
	}
	return t
}

// config is the dain.Config that t records (no progress, no callbacks).
func (t Training) config() dain.Config {
	c := dain.Config{}
	for _, s := range dain.Settings() {
		if v := t.get(s.Key); s.Key != "" && v != nil {
			s.Of(&c).Set(reflect.ValueOf(v))
		}
	}
	return c
}

// Adopt sets in c each setting that the record lacked (p.Legacy), and
// that given reports not given on the command line, to the value the
// record was made with, so that a resumed evaluation goes on as it was
// made although a default changed since. given gets the setting's flag
// (-split, -embedding-optimizer, …). It returns the settings adopted, as
// "-flag value".
func (p Provenance) Adopt(c *dain.Config, given func(flag string) bool) []string {
	var out []string
	for _, key := range p.Legacy {
		s, ok := dain.SettingByKey(key)
		if !ok || s.Flag == "" {
			continue
		}
		flag := "-" + s.Flag
		if given(flag) {
			continue
		}
		v := p.Base.get(key)
		if dst := s.Of(c); !reflect.DeepEqual(dst.Interface(), v) {
			dst.Set(reflect.ValueOf(v))
			out = append(out, fmt.Sprintf("%s %v", flag, v))
		}
	}
	return out
}

// UnmarshalJSON reads a provenance of any version. Version 0's "base"
// has dain.Config's Go field names as keys (and a null "Progress"); its
// "commands" may hold nulls.
func (p *Provenance) UnmarshalJSON(b []byte) error {
	type plain Provenance // without this method
	var probe struct {
		Version  int             `json:"version"`
		Base     json.RawMessage `json:"base"`
		Commands []*string       `json:"commands"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if probe.Version > ProvenanceVersion {
		return fmt.Errorf("provenance version %d is newer than this dainx's %d", probe.Version, ProvenanceVersion)
	}
	var v struct {
		plain
		Base     json.RawMessage `json:"base"`
		Commands json.RawMessage `json:"commands"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = Provenance(v.plain)
	p.Commands = nil
	for _, c := range probe.Commands {
		if c != nil {
			p.Commands = append(p.Commands, *c)
		} else {
			p.Commands = append(p.Commands, "")
		}
	}
	if len(probe.Base) == 0 || string(probe.Base) == "null" {
		return fmt.Errorf("no training configuration (\"base\")")
	}
	if probe.Version >= 1 {
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(probe.Base, &keys); err != nil {
			return err
		}
		p.Legacy = paperVariant(&p.Base, func(k string) bool { _, ok := keys[k]; return ok })
		return json.Unmarshal(probe.Base, &p.Base)
	}
	// Version 0 wrote dain.Config as Go encodes it: field names as keys.
	// These are the names of that time; they do not follow later renames.
	var v0 struct {
		Ratio                   float64
		Seed                    uint64
		Layers                  []int
		Epochs, Batch, Patience int
		LR, TestFrac, ValFrac   float64
		EvalBatch               int
		Method                  dain.MethodName
		Model, Predictor        string
		Influence               dain.InfluenceKind
		InfluenceLayers         dain.LayerSet
		Entity                  dain.EntityKind
		Rank, Channels          int
		CoSTCoLR                float64
		CoSTCoBatch             int
		CPLambda                float64
		CPSweeps                int
		Progress                any
	}
	if err := json.Unmarshal(probe.Base, &v0); err != nil {
		return fmt.Errorf("version 0 training configuration: %w", err)
	}
	p.Base = Training{
		Ratio: v0.Ratio, Seed: v0.Seed, Layers: v0.Layers, Epochs: v0.Epochs, Batch: v0.Batch,
		Patience: v0.Patience, LR: v0.LR, TestFrac: v0.TestFrac, ValFrac: v0.ValFrac, EvalBatch: v0.EvalBatch,
		Method: v0.Method, Model: v0.Model, Predictor: v0.Predictor, Influence: v0.Influence,
		InfluenceLayers: v0.InfluenceLayers, Entity: v0.Entity, Rank: v0.Rank, Channels: v0.Channels,
		CoSTCoLR: v0.CoSTCoLR, CoSTCoBatch: v0.CoSTCoBatch, CPLambda: v0.CPLambda, CPSweeps: v0.CPSweeps,
	}
	p.Legacy = paperVariant(&p.Base, func(string) bool { return false })
	return nil
}

// Compatible reports how the evaluations that p and q record differ in
// what makes their runs comparable: the tensor's dims and nnz, the
// methods, the ratios and every field of the training configuration apart
// from its seed — or, with sameSeed, including it. It returns nil when they
// agree. The versions they were written with do not matter: settings are
// compared by their Effective values (an "auto" against what it resolves
// to), and a setting a record lacks by its legacy value.
func (p Provenance) Compatible(q Provenance, sameSeed bool) error {
	for _, f := range []struct {
		name string
		a, b any
	}{{"dims", p.Dims, q.Dims}, {"nnz", p.NNZ, q.NNZ}, {"methods", p.Methods, q.Methods}, {"ratios", p.Ratios, q.Ratios}, {"baselines", p.Baselines, q.Baselines}} {
		if !reflect.DeepEqual(f.a, f.b) {
			return fmt.Errorf("different %s (%v, %v)", f.name, f.a, f.b)
		}
	}
	if sameSeed && p.Base.Seed != q.Base.Seed {
		return fmt.Errorf("different -seed (%v, %v)", p.Base.Seed, q.Base.Seed)
	}
	a, b := p.Base.Effective(p.Dims), q.Base.Effective(q.Dims)
	for _, s := range dain.Settings() {
		if s.Key == "" || s.Field == "Seed" {
			continue
		}
		if x, y := a.get(s.Key), b.get(s.Key); !reflect.DeepEqual(x, y) {
			return fmt.Errorf("different training configuration: %s %v, %v", s.Key, x, y)
		}
	}
	return nil
}

// About is the Markdown header of a summary: the command (or, for a merge,
// each source's command and the seeds), the tensor, the backend, the
// repeats and the seconds, and a note when the evaluation is partial.
func (p Provenance) About() string {
	var b strings.Builder
	if p.Command == "" && len(p.Commands) > 0 {
		fmt.Fprintf(&b, "Merged (`dainx eval -merge`) from %d outputs, made by:\n\n", len(p.Commands))
		for _, c := range p.Commands {
			fmt.Fprintf(&b, "- `%s`\n", c)
		}
		fmt.Fprintf(&b, "\nSeeds %v.", p.Seeds)
	} else {
		fmt.Fprintf(&b, "Command: `%s`", p.Command)
	}
	fmt.Fprintf(&b, "\n\nInput: %s (dims %v, %d cells); backend %s (%s); %d repeats; %.0f s in all.",
		p.Input, p.Dims, p.NNZ, p.Backend, p.Device, p.Repeats, p.Seconds)
	if p.RepeatsRequested > p.Repeats {
		fmt.Fprintf(&b, "\n\n**Partial: %d of %d repeats.** Run the same command with -resume to finish.", p.Repeats, p.RepeatsRequested)
	}
	return b.String()
}
