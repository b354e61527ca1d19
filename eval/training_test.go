package eval

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/dain/config"
)

// TestTrainingFollowsSettings checks that Training's fields are recorded
// settings of dain.Settings, in the table's order and of their Config
// field's types, so that runs.json keeps its keys and their order
// (settings recorded since are in Training.More).
func TestTrainingFollowsSettings(t *testing.T) {
	var keyed []dain.Setting
	for _, s := range dain.Settings() {
		if s.Key != "" {
			keyed = append(keyed, s)
		}
	}
	typ := reflect.TypeFor[Training]()
	n := 0
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if f.Name == "More" {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		for n < len(keyed) && keyed[n].Key != name {
			n++
		}
		if n == len(keyed) || keyed[n].Type() != f.Type {
			t.Fatalf("Training.%s (%s, %v) is not a recorded setting of dain.Settings after the previous field's, of its type", f.Name, name, f.Type)
		}
		if omit := strings.HasSuffix(f.Tag.Get("json"), ",omitempty"); omit != keyed[n].OmitEmpty {
			t.Errorf("Training.%s: omitempty %v, Settings' OmitEmpty %v", f.Name, omit, keyed[n].OmitEmpty)
		}
	}
}

// TestTrainingMore checks a setting recorded after Training's fields
// were fixed (Training.More), here Config.Exchange as if its entry in
// config.Settings (dain.Settings) had a Key: TrainingOf records it,
// runs.json has it after the fields, it reads back as its type,
// Compatible compares it, a record without it reads as its legacy value
// and Adopt adopts that.
func TestTrainingMore(t *testing.T) {
	saved := config.Settings
	defer func() { config.Settings = saved }()
	config.Settings = func() []dain.Setting {
		var out []dain.Setting
		for _, s := range saved() {
			if s.Field == "Exchange" {
				s.Key, s.Unset, s.Legacy = "exchange", dain.ExchangeAuto, dain.ExchangeDense
			}
			out = append(out, s)
		}
		return out
	}
	c := dain.DefaultConfig()
	c.Exchange = ""
	p := Provenance{Version: ProvenanceVersion, Dims: []int{3, 4}, NNZ: 12, Methods: []string{"dain"}, Ratios: []float64{0}, Base: TrainingOf(c)}
	if v := p.Base.More["exchange"]; v != dain.ExchangeAuto {
		t.Fatalf("TrainingOf recorded exchange %#v; want auto (Unset)", v)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `,"exchange":"auto"}`) {
		t.Fatalf("exchange not written last in base: %s", b)
	}
	var back Provenance
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if v := back.Base.More["exchange"]; v != dain.ExchangeAuto || len(back.Legacy) != 0 {
		t.Fatalf("read back exchange %#v, legacy %v", v, back.Legacy)
	}
	if err := p.Compatible(back, true); err != nil {
		t.Fatalf("a record read back differs: %v", err)
	}
	q := back
	q.Base.More = maps.Clone(q.Base.More)
	q.Base.More["exchange"] = dain.ExchangeSparse
	if err := p.Compatible(q, false); err == nil || !strings.Contains(err.Error(), "exchange auto, sparse") {
		t.Fatalf("Compatible with another exchange: %v", err)
	}
	old := strings.Replace(string(b), `,"exchange":"auto"`, "", 1)
	var o Provenance
	if err := json.Unmarshal([]byte(old), &o); err != nil {
		t.Fatal(err)
	}
	if v := o.Base.More["exchange"]; v != dain.ExchangeDense || strings.Join(o.Legacy, ",") != "exchange" {
		t.Fatalf("a record without exchange read as %#v, legacy %v; want dense, [exchange]", v, o.Legacy)
	}
	adopted := o.Adopt(&c, func(string) bool { return false })
	if c.Exchange != dain.ExchangeDense || strings.Join(adopted, ";") != "-exchange dense" {
		t.Fatalf("Adopt: exchange %q, adopted %v", c.Exchange, adopted)
	}
}
