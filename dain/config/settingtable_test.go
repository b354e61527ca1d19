package config

import (
	"maps"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/dainx/dainx/nn"
)

// TestSettingsCheckpointNames pins the names and legacy values that
// checkpoint headers record for the settings of Config up to now, as
// derived from Settings: they are the on-disk format, read back by later
// versions (the names are those of the flagNames and ckLegacy tables that
// Settings replaced). A setting added since has names of its own.
func TestSettingsCheckpointNames(t *testing.T) {
	names := map[string]string{
		"Ratio": "-ratio", "Seed": "-seed", "Layers": "-layers", "Epochs": "-epochs", "Batch": "-batch",
		"Patience": "-patience", "LR": "-lr", "TestFrac": "-test-frac", "ValFrac": "-val-frac",
		"Method": "-method", "Model": "-model", "Predictor": "-predictor", "Influence": "-influence",
		"InfluenceLayers": "-influence-layers", "Entity": "-entity", "Rank": "-rank", "Channels": "-channels",
		"CoSTCoLR": "-costco-lr", "CoSTCoBatch": "-costco-batch", "EmbeddingOptimizer": "-embedding-optimizer",
		"Split": "-split", "FinalModel": "-final-model", "BayesRank": "-bayes-rank", "BayesSamples": "-bayes-samples",
		"BayesBurnIn": "-bayes-burnin", "BayesPriors": "-bayes-priors", "FMRank": "-fm-rank", "L2": "-l2",
		"InfluenceEvery": "-influence-every", "InfluenceValSample": "-influence-val-sample",
		"Values": "-values", "Oracle": "-oracle", "Graphs": "-graphs", "Exchange": "-exchange",
		"EvalBatch": "EvalBatch", "ShardTables": "ShardTables", "Sign": "Sign", "Temperature": "Temperature",
		"Mix": "Mix", "CPLambda": "CPLambda", "CPSweeps": "CPSweeps",
	}
	got := map[string]string{}
	for i, f := range DefaultConfig().CkFields("cpu") {
		if f.Name == "-backend" {
			continue
		}
		got[reflect.TypeFor[Config]().Field(i).Name] = f.Name
	}
	for field, name := range names {
		if got[field] != name {
			t.Errorf("Config.%s checkpointed as %q; want %q", field, got[field], name)
		}
	}
	legacy := map[string]string{
		"-embedding-optimizer": nn.Adam, "-split": string(SplitLegacy), "ShardTables": "off", "Sign": "abs",
		"Temperature": "1", "Mix": "0", "-final-model": FinalMLP,
		"-bayes-rank": strconv.Itoa(DefaultBayesRank), "-bayes-samples": strconv.Itoa(DefaultBayesSamples),
		"-bayes-burnin": "0", "-bayes-priors": string(BayesPriorsMode), "-fm-rank": strconv.Itoa(DefaultFMRank),
		"-l2": "0", "-values": string(ValuesPredictor), "-oracle": "none", "-graphs": "on", "-exchange": "auto",
		"-influence-every": strconv.Itoa(DefaultInfluenceEvery), "-influence-val-sample": strconv.Itoa(DefaultInfluenceValSample),
	}
	for _, n := range slices.Sorted(maps.Values(names)) {
		v, ok := CkLegacy(n)
		if w, want := legacy[n]; ok != want || v != w {
			t.Errorf("CkLegacy(%s) = %q, %v; want %q, %v", n, v, ok, w, want)
		}
	}
}

// TestSettingsTable checks that every entry of Settings names a Config
// field, once, that every setting of Config has an entry, that Unset and
// Legacy fit the field's type, and that the keys and names are unique.
func TestSettingsTable(t *testing.T) {
	fields, keys, cks, flags := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range Settings() {
		typ := s.Type() // panics on a field Config lacks
		for _, u := range []struct {
			what, name string
			seen       map[string]bool
		}{{"field", s.Field, fields}, {"key", s.Key, keys}, {"checkpoint name", s.CkName(), cks}, {"flag", s.Flag, flags}} {
			if u.name == "" {
				continue // none
			}
			if u.seen[u.name] {
				t.Errorf("Settings: %s %s twice", u.what, u.name)
			}
			u.seen[u.name] = true
		}
		for _, x := range []any{s.Unset, s.Legacy} {
			if x != nil && !reflect.TypeOf(x).ConvertibleTo(typ) {
				t.Errorf("%s: %T does not fit a %v", s.Field, x, typ)
			}
		}
		if (s.Bind != "") != (s.Help != "") || (s.Bind != "" && s.Flag == "") {
			t.Errorf("%s: Bind %q, Help %q, Flag %q: a bound flag needs all three", s.Field, s.Bind, s.Help, s.Flag)
		}
	}
	for i := 0; i < reflect.TypeFor[Config]().NumField(); i++ {
		f := reflect.TypeFor[Config]().Field(i)
		switch f.Name {
		case "Progress", "OnEpoch", "Keep", "MaxMemory":
			continue
		}
		if !fields[f.Name] {
			t.Errorf("Config.%s has no entry in Settings", f.Name)
		}
	}
}
